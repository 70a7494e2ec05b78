package counterkit;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A partition's update counter in persistent mode, as spec/UpdateCounter.tla describes it.
 *
 * <p>Counters 1..lwm are applied (or closed); {@code applied} holds the ranges applied above lwm, keyed by
 * start, each covering start+1..start+delta, never touching each other nor lwm; at most {@code limit} of
 * them (Ignite's MAX_MISSED_UPDATES). hwm is the last counter reserved. A {@link Bug} changes one
 * operation the way a known bug class does.
 */
final class Counter {
    /** Ignite's "Too many gaps": the node fails and the counter stays as it was. */
    static final class TooManyGaps extends Exception {
        TooManyGaps(String why) {
            super(why);
        }
    }

    long lwm;
    long hwm;
    final TreeMap<Long, Long> applied;
    boolean first;
    private final long limit;
    private final Bug bug;

    Counter(long lwm, long hwm, TreeMap<Long, Long> applied, boolean first, long limit, Bug bug) {
        this.lwm = lwm;
        this.hwm = hwm;
        this.applied = applied;
        this.first = first;
        this.limit = limit;
        this.bug = bug;
    }

    static Counter fresh(long limit, Bug bug) {
        return new Counter(0, 0, new TreeMap<>(), true, limit, bug);
    }

    Counter copy() {
        return new Counter(lwm, hwm, new TreeMap<>(applied), first, limit, bug);
    }

    /** Tx prepare on the primary: the transaction owns hwm+1..hwm+delta; returns where it starts. */
    long reserve(long delta) {
        if (hwm < lwm) {
            // Ignite asserts it: a copy whose hwm lags its lwm would hand out applied counters again.
            throw new IllegalStateException("LWM after HWM: lwm=" + lwm + ", hwm=" + hwm);
        }
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

    /** Whether an applied range ends exactly at {@code counter} (a new range starting there joins it). */
    private boolean rangeEndsAt(long counter) {
        Map.Entry<Long, Long> below = applied.lowerEntry(counter);
        return below != null && below.getKey() + below.getValue() == counter;
    }

    /**
     * Commit or rollback of start+1..start+delta: true if the copy lacked the whole range, false if it is
     * stale (start below lwm, whatever its end) or already held. At the gap limit a range that would be
     * one more queued range throws, and so does one starting where a queued range starts (Ignite checks
     * the limit before it looks for that range). A range partly held is no input 2PC produces.
     */
    boolean update(long start, long delta) throws TooManyGaps {
        if (start < lwm) {
            return false;
        }
        long end = start + delta;
        long held = 0;
        for (long c = start + 1; c <= end; c++) {
            held += holds(c) ? 1 : 0;
        }
        if (held != 0 && held != delta) {
            throw new IllegalArgumentException("update(" + start + ", " + delta + "): the range is partly applied");
        }
        boolean lacked = held == 0;
        boolean newRange = lacked && start > lwm && !applied.containsKey(end) && !rangeEndsAt(start);
        if (applied.size() >= limit && (newRange || applied.containsKey(start))) {
            throw new TooManyGaps("Too many gaps: " + applied.size() + " queued ranges");
        }
        if (!lacked) {
            return false;
        }
        if (bug == Bug.NO_OUT_OF_ORDER_TRACKING) {
            lwm = end;
            return true;
        }
        long from = start;
        long to = end;
        Map.Entry<Long, Long> left = applied.lowerEntry(start);
        if (left != null && left.getKey() + left.getValue() == start) {
            applied.remove(left.getKey());
            from = left.getKey();
        }
        Long right = applied.remove(to);
        if (right != null) {
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
        if (value < highestApplied()) {
            // The supplier lacks updates this copy applied: Ignite fails the node.
            throw new IllegalStateException("Failed to update the counter: " + value + " is below the highest"
                    + " applied counter " + highestApplied());
        }
        lwm = value;
        if (first) {
            applied.clear();
        }
        first = false;
    }

    /**
     * Node-left exchange: the holes are closed, hwm drops to the highest applied counter. Returns the
     * holes closed, each as its first and last counter, in counter order.
     */
    List<List<Long>> finalizeGaps() {
        List<List<Long>> holes = new ArrayList<>();
        if (bug == Bug.NODE_LEFT_WITHOUT_FINALIZE) {
            return holes;
        }
        long covered = lwm;
        for (Map.Entry<Long, Long> range : applied.entrySet()) {
            holes.add(List.of(covered + 1, range.getKey()));
            covered = range.getKey() + range.getValue();
        }
        lwm = covered;
        hwm = covered;
        applied.clear();
        return holes;
    }

    /** The counter a restarted node reads back from its partition meta page. */
    Counter restored() {
        long top = highestApplied();
        if (bug == Bug.GAPS_NOT_PERSISTED) {
            return new Counter(top, top, new TreeMap<>(), true, limit, bug);
        }
        return new Counter(lwm, top, new TreeMap<>(applied), true, limit, bug);
    }
}
