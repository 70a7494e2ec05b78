package counterkit;

import java.util.Map;
import java.util.TreeMap;

/**
 * A partition's update counter in persistent mode, as spec/UpdateCounter.tla describes it.
 *
 * <p>Counters 1..lwm are applied (or closed); {@code gaps} holds the ranges applied above lwm, keyed by
 * start, each covering start+1..start+delta, never touching each other nor lwm. hwm is the last
 * counter reserved. A {@link Bug} changes one operation the way a known bug class does.
 */
final class Counter {
    long lwm;
    long hwm;
    final TreeMap<Long, Long> applied;
    boolean first;
    private final Bug bug;

    Counter(long lwm, long hwm, TreeMap<Long, Long> applied, boolean first, Bug bug) {
        this.lwm = lwm;
        this.hwm = hwm;
        this.applied = applied;
        this.first = first;
        this.bug = bug;
    }

    static Counter fresh(Bug bug) {
        return new Counter(0, 0, new TreeMap<>(), true, bug);
    }

    Counter copy() {
        return new Counter(lwm, hwm, new TreeMap<>(applied), first, bug);
    }

    /** Tx prepare on the primary: the transaction owns hwm+1..hwm+delta; returns where it starts. */
    long reserve(long delta) {
        long start = hwm;
        hwm += delta;
        return start;
    }

    private boolean holds(long counter) {
        if (counter <= lwm) {
            return true;
        }
        Map.Entry<Long, Long> below = applied.lowerEntry(counter);
        return below != null && counter <= below.getKey() + below.getValue();
    }

    /** Commit or rollback of start+1..start+delta; a stale or already held range changes nothing. */
    boolean update(long start, long delta) {
        if (start < lwm) {
            return false;
        }
        for (long c = start + 1; c <= start + delta; c++) {
            if (holds(c)) {
                return false;
            }
        }
        if (bug == Bug.NO_OUT_OF_ORDER_TRACKING) {
            lwm = start + delta;
            return true;
        }
        long from = start;
        long to = start + delta;
        Map.Entry<Long, Long> left = applied.lowerEntry(start);
        if (left != null && left.getKey() + left.getValue() == start) {
            applied.remove(left.getKey());
            from = left.getKey();
        }
        Long right = applied.get(to);
        if (right != null) {
            applied.remove(to);
            to += right;
        }
        if (from == lwm) {
            lwm = to;
        } else {
            applied.put(from, to - from);
        }
        return true;
    }

    long highestApplied() {
        if (applied.isEmpty()) {
            return lwm;
        }
        Map.Entry<Long, Long> last = applied.lastEntry();
        return last.getKey() + last.getValue();
    }

    /** The exchange's absolute value: raises hwm; the first one drops the gaps (rebalancing fills them). */
    void updateLwm(long value) {
        long raised = Math.max(hwm, Math.max(value, lwm));
        if (bug != Bug.STALE_HWM_AFTER_SWITCH) {
            hwm = raised;
        }
        if (value < lwm) {
            return;
        }
        lwm = value;
        if (first) {
            applied.clear();
        }
        first = false;
    }

    /** Node-left exchange: the holes are closed, hwm drops to the highest applied counter. */
    void finalizeGaps() {
        if (bug == Bug.NODE_LEFT_WITHOUT_FINALIZE) {
            return;
        }
        long top = highestApplied();
        lwm = top;
        hwm = top;
        applied.clear();
    }

    /** The counter a restarted node reads back from its partition meta page. */
    Counter restored() {
        long top = highestApplied();
        if (bug == Bug.GAPS_NOT_PERSISTED) {
            return new Counter(top, top, new TreeMap<>(), true, bug);
        }
        return new Counter(lwm, top, new TreeMap<>(applied), true, bug);
    }
}
