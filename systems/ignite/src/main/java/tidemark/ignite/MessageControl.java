package tidemark.ignite;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedTxFinishRequest;
import org.apache.ignite.internal.processors.cache.distributed.dht.GridDhtTxPrepareRequest;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.CachePartitionPartialCountersMap;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.GridDhtPartitionDemandMessage;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.IgniteDhtDemandedPartitionsMap;
import org.apache.ignite.internal.processors.cache.distributed.near.GridNearTxPrepareRequest;
import org.apache.ignite.internal.processors.cache.version.GridCacheVersion;
import org.apache.ignite.internal.util.typedef.internal.CU;
import org.apache.ignite.plugin.extensions.communication.Message;

/**
 * The message rules of the harness, shared by every node's {@link ControlledSpi}.
 *
 * A rule matches a message by its class's simple name (e.g. GridDhtTxFinishRequest), sender and receiver
 * (consistent ids; null matches any) and optionally the harness's transaction name; its action is "hold"
 * (kept until released, in the order the caller chooses) or "drop" (never delivered). Every demand message
 * with partitions is also recorded: that is how the harness observes each rebalancing's mode and range.
 */
final class MessageControl {
    /** A rule: which messages, and what to do with them. */
    record Rule(int id, String type, String from, String to, String tx, boolean drop) {
        boolean matches(String type0, String from0, String to0, String tx0) {
            return type.equals(type0) && (from == null || from.equals(from0)) && (to == null || to.equals(to0))
                && (tx == null || tx.equals(tx0));
        }
    }

    /** A held message: sending it later is the SPI's own send. */
    record Held(int id, String type, String from, String to, String tx, JsonObject detail, Runnable send) {
        JsonObject json() {
            JsonObject o = new JsonObject();
            o.addProperty("id", id);
            o.addProperty("type", type);
            o.addProperty("from", from);
            o.addProperty("to", to);
            if (tx != null)
                o.addProperty("tx", tx);
            o.add("detail", detail);
            return o;
        }
    }

    private final List<Rule> rules = new ArrayList<>();
    private final List<Held> held = new ArrayList<>();
    private final List<JsonObject> demands = new ArrayList<>();
    private final List<JsonObject> dropped = new ArrayList<>();
    /** The harness's transaction names by near xid version, and DHT xid -> near xid from prepare requests. */
    private final Map<GridCacheVersion, String> txNames = new ConcurrentHashMap<>();
    private final Map<GridCacheVersion, GridCacheVersion> dhtToNear = new ConcurrentHashMap<>();
    private int nextRule = 1;
    private int nextHeld = 1;

    void nameTx(GridCacheVersion nearXid, String name) {
        txNames.put(nearXid, name);
    }

    synchronized int addRule(String type, String from, String to, String tx, boolean drop) {
        Rule rule = new Rule(nextRule++, type, from, to, tx, drop);
        rules.add(rule);
        return rule.id();
    }

    synchronized boolean removeRule(int id) {
        return rules.removeIf(r -> r.id() == id);
    }

    synchronized void clearRules() {
        rules.clear();
    }

    /** True: send now. False: the message was held or dropped. */
    boolean intercept(ControlledSpi spi, String from, String to, Message msg, Runnable send) {
        String type = msg.getClass().getSimpleName();
        String tx = txOf(msg);
        synchronized (this) {
            if (msg instanceof GridDhtPartitionDemandMessage) {
                GridDhtPartitionDemandMessage demand = (GridDhtPartitionDemandMessage)msg;
                if (demand.groupId() == CU.cacheId(ClusterSetup.CACHE) && !demand.partitions().isEmpty())
                    demands.add(demandJson(from, to, demand));
            }
            for (Rule rule : rules) {
                if (!rule.matches(type, from, to, tx))
                    continue;
                JsonObject detail = detail(msg);
                if (rule.drop()) {
                    dropped.add(new Held(0, type, from, to, tx, detail, send).json());
                    return false;
                }
                held.add(new Held(nextHeld++, type, from, to, tx, detail, send));
                notifyAll();
                return false;
            }
        }
        return true;
    }

    private String txOf(Message msg) {
        GridCacheVersion near = null;
        if (msg instanceof GridDhtTxPrepareRequest) {
            GridDhtTxPrepareRequest req = (GridDhtTxPrepareRequest)msg;
            near = req.nearXidVersion();
            dhtToNear.put(req.version(), near);
        }
        else if (msg instanceof GridNearTxPrepareRequest)
            near = ((GridNearTxPrepareRequest)msg).version();
        else if (msg instanceof GridDistributedTxFinishRequest) {
            GridCacheVersion ver = ((GridDistributedTxFinishRequest)msg).version();
            near = dhtToNear.getOrDefault(ver, ver);
        }
        return near == null ? null : txNames.get(near);
    }

    private static JsonObject detail(Message msg) {
        JsonObject o = new JsonObject();
        if (msg instanceof GridDistributedTxFinishRequest)
            o.addProperty("commit", ((GridDistributedTxFinishRequest)msg).commit());
        return o;
    }

    private static JsonObject demandJson(String from, String to, GridDhtPartitionDemandMessage msg) {
        JsonObject o = new JsonObject();
        o.addProperty("demander", from);
        o.addProperty("supplier", to);
        o.addProperty("topVer", Observer.version(msg.topologyVersion()));
        IgniteDhtDemandedPartitionsMap parts = msg.partitions();
        JsonArray hist = new JsonArray();
        CachePartitionPartialCountersMap map = parts.historicalMap();
        for (int i = 0; i < map.size(); i++) {
            JsonObject h = new JsonObject();
            h.addProperty("part", map.partitionAt(i));
            h.addProperty("from", map.initialUpdateCounterAt(i));
            h.addProperty("to", map.updateCounterAt(i));
            hist.add(h);
        }
        JsonArray full = new JsonArray();
        parts.fullSet().stream().sorted().forEach(full::add);
        o.add("historical", hist);
        o.add("full", full);
        return o;
    }

    synchronized JsonArray heldJson() {
        JsonArray a = new JsonArray();
        held.forEach(h -> a.add(h.json()));
        return a;
    }

    synchronized JsonArray demandsJson() {
        JsonArray a = new JsonArray();
        demands.forEach(a::add);
        return a;
    }

    synchronized JsonArray droppedJson() {
        JsonArray a = new JsonArray();
        dropped.forEach(a::add);
        return a;
    }

    /** Waits until `count` held messages match (type, from, to, tx); false on timeout. */
    synchronized boolean awaitHeld(String type, String from, String to, String tx, int count, long timeoutMs)
        throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Rule probe = new Rule(0, type, from, to, tx, false);
        while (held.stream().filter(h -> probe.matches(h.type(), h.from(), h.to(), h.tx())).count() < count) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0)
                return false;
            wait(left);
        }
        return true;
    }

    /** Removes the held messages with these ids, in this order, and returns them (to send outside the lock). */
    synchronized List<Held> take(List<Integer> ids) {
        List<Held> out = new ArrayList<>();
        for (int id : ids) {
            Iterator<Held> it = held.iterator();
            boolean found = false;
            while (it.hasNext()) {
                Held h = it.next();
                if (h.id() == id) {
                    out.add(h);
                    it.remove();
                    found = true;
                    break;
                }
            }
            if (!found)
                throw new IllegalArgumentException("no held message with id " + id);
        }
        return out;
    }

    /** The ids of held messages matching (type, from, to, tx), oldest first (null fields match any). */
    synchronized List<Integer> matching(String type, String from, String to, String tx) {
        List<Integer> ids = new ArrayList<>();
        for (Held h : held) {
            if ((type == null || type.equals(h.type())) && (from == null || from.equals(h.from()))
                && (to == null || to.equals(h.to())) && (tx == null || tx.equals(h.tx())))
                ids.add(h.id());
        }
        return ids;
    }

    /** Forgets held messages from or to a stopped node: they can never be delivered. */
    synchronized int forget(String node) {
        int before = held.size();
        held.removeIf(h -> h.from().equals(node) || h.to().equals(node));
        return before - held.size();
    }
}
