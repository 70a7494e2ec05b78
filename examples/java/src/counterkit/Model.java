package counterkit;

import java.util.List;
import java.util.Map;

/** A spec's implementation as the driver sees it: steps by action, the enabled actions, states as ITF. */
interface Model {
    /** Takes the step the action names, or refuses it (NotEnabled) leaving the state unchanged. */
    void step(Map<String, Object> action) throws Partition.NotEnabled;

    /** Every action the implementation can take now. */
    List<Object> enabled();

    /** The abstract state, one key per spec variable. */
    Map<String, Object> itf();

    /** Puts the implementation into the given abstract state. */
    void load(Map<String, Object> state);
}
