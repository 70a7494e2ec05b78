package tidemark.ignite;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ignite.Ignite;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.lifecycle.LifecycleBean;
import org.apache.ignite.lifecycle.LifecycleEventType;
import org.apache.ignite.resources.IgniteInstanceResource;

/**
 * A server that is starting: Ignition.start returns only after the node's join exchange, which a held
 * single message keeps open, so the harness keeps each node's instance from its first lifecycle event on
 * and can observe a restarted server while it joins (its counters restored from the WAL).
 */
final class Starting implements LifecycleBean {
    /** Node name -> its instance, from BEFORE_NODE_START until the node stops. */
    static final Map<String, IgniteEx> INSTANCES = new ConcurrentHashMap<>();

    private final String name;

    @IgniteInstanceResource
    private Ignite ignite;

    Starting(String name) {
        this.name = name;
    }

    @Override public void onLifecycleEvent(LifecycleEventType evt) {
        if (evt == LifecycleEventType.BEFORE_NODE_START && ignite != null)
            INSTANCES.put(name, (IgniteEx)ignite);
        else if (evt == LifecycleEventType.BEFORE_NODE_STOP)
            INSTANCES.remove(name);
    }
}
