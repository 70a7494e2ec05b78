package counterkit;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The copies of one partition and what happens around their counters (spec/UpdateCounter.tla): the
 * primary reserves ranges, copies commit, roll back or drop them, WAL records are replayed, copies
 * restart, and an exchange follows. Steps are refused (NotEnabled) where the cluster could not take them.
 */
final class Partition {
    record Range(long start, long delta) {
        List<Object> itf() {
            return List.of(start, delta);
        }
    }

    static final class NotEnabled extends Exception {
        NotEnabled(String why) {
            super(why);
        }
    }

    final List<String> copies;
    final String primary;
    final long maxCounter;
    final List<Long> deltas;
    final Bug bug;

    Map<String, Counter> counters = new TreeMap<>();
    Map<String, Set<Range>> pending = new TreeMap<>();
    Map<String, TreeSet<Long>> done = new TreeMap<>();
    Set<Range> committed = new HashSet<>();
    Set<Range> rolledBack = new HashSet<>();
    Set<String> rejoined = new TreeSet<>();
    Object action;

    Partition(List<String> copies, String primary, long maxCounter, List<Long> deltas, Bug bug) {
        this.copies = copies;
        this.primary = primary;
        this.maxCounter = maxCounter;
        this.deltas = deltas;
        this.bug = bug;
        for (String c : copies) {
            counters.put(c, Counter.fresh(bug));
            pending.put(c, new HashSet<>());
            done.put(c, new TreeSet<>());
        }
        action = Map.of("name", "Init");
    }

    // --- steps --------------------------------------------------------------------------------------

    void step(Map<String, Object> step) throws NotEnabled {
        String name = Itf.string(step.get("name"));
        switch (name) {
            case "Reserve" -> reserve(Itf.string(step.get("copy")), range(step));
            case "Commit" -> commit(Itf.string(step.get("copy")), range(step));
            case "Rollback" -> rollback(Itf.string(step.get("copy")), range(step));
            case "Drop" -> drop(Itf.string(step.get("copy")), range(step));
            case "Replay" -> replay(Itf.string(step.get("copy")), range(step));
            case "Restart" -> restart(Itf.string(step.get("copy")));
            case "Exchange" -> exchange(Itf.number(step.get("lwm")));
            default -> throw new NotEnabled("no action " + name);
        }
        action = step;
    }

    private static Range range(Map<String, Object> step) {
        return new Range(Itf.number(step.get("start")), Itf.number(step.get("delta")));
    }

    private void copy(String c) throws NotEnabled {
        if (!counters.containsKey(c)) {
            throw new NotEnabled("no copy " + c);
        }
    }

    private static void require(boolean condition, String why) throws NotEnabled {
        if (!condition) {
            throw new NotEnabled(why);
        }
    }

    private void reserve(String c, Range r) throws NotEnabled {
        require(c.equals(primary), "only the primary reserves");
        require(rejoined.isEmpty(), "an exchange is due");
        require(deltas.contains(r.delta()), "no such range size");
        Counter counter = counters.get(primary);
        require(counter.hwm + r.delta() <= maxCounter, "the counter bound is reached");
        require(counter.hwm == r.start(), "the next range starts at " + counter.hwm);
        long start = counter.reserve(r.delta());
        Range reserved = new Range(start, r.delta());
        for (String each : copies) {
            pending.get(each).add(reserved);
        }
    }

    private void apply(String c, Range r) {
        counters.get(c).update(r.start(), r.delta());
        pending.get(c).remove(r);
        for (long i = r.start() + 1; i <= r.start() + r.delta(); i++) {
            done.get(c).add(i);
        }
    }

    private void commit(String c, Range r) throws NotEnabled {
        copy(c);
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!rolledBack.contains(r), "rolled back");
        apply(c, r);
        committed.add(r);
    }

    private boolean backupsFinished(Range r) {
        return copies.stream().filter(b -> !b.equals(primary)).noneMatch(b -> pending.get(b).contains(r));
    }

    private void rollback(String c, Range r) throws NotEnabled {
        copy(c);
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!committed.contains(r), "committed");
        require(!c.equals(primary) || backupsFinished(r), "the primary rolls back last");
        apply(c, r);
        rolledBack.add(r);
    }

    private void drop(String c, Range r) throws NotEnabled {
        copy(c);
        require(!c.equals(primary) && rejoined.contains(primary), "only a backup whose primary failed drops");
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!committed.contains(r), "committed");
        pending.get(c).remove(r);
        rolledBack.add(r);
    }

    private void replay(String c, Range r) throws NotEnabled {
        copy(c);
        require(r.delta() == 1 && done.get(c).contains(r.start() + 1), "no such WAL record on " + c);
        counters.get(c).update(r.start(), 1);
    }

    private List<String> survivors() {
        return copies.stream().filter(c -> !rejoined.contains(c)).toList();
    }

    private void restart(String c) throws NotEnabled {
        copy(c);
        require(survivors().stream().anyMatch(s -> !s.equals(c)), "the last copy alive");
        counters.put(c, counters.get(c).restored());
        pending.get(c).clear();
        rejoined.add(c);
    }

    /** The counters copies bring to the exchange (survivors finalize) and the value it sends. */
    private Map<String, Counter> exchanged() {
        Map<String, Counter> brought = new TreeMap<>();
        for (String c : copies) {
            Counter counter = counters.get(c).copy();
            if (!rejoined.contains(c)) {
                counter.finalizeGaps();
            }
            brought.put(c, counter);
        }
        return brought;
    }

    private static long maxLwm(Map<String, Counter> brought) {
        return brought.values().stream().mapToLong(c -> c.lwm).max().orElse(0);
    }

    private boolean exchangeDue() {
        return !rejoined.isEmpty() && pending.values().stream().allMatch(Set::isEmpty);
    }

    private void exchange(long lwm) throws NotEnabled {
        require(exchangeDue(), "no exchange is due");
        Map<String, Counter> brought = exchanged();
        long value = maxLwm(brought);
        require(value == lwm, "the exchange sends " + value);
        for (String c : copies) {
            brought.get(c).updateLwm(value);
            for (long i = 1; i <= value; i++) {
                done.get(c).add(i);
            }
        }
        counters = brought;
        rejoined.clear();
    }

    // --- enabled steps ------------------------------------------------------------------------------

    private static Map<String, Object> named(String name, String c, Range r) {
        Map<String, Object> step = new LinkedHashMap<>();
        step.put("name", name);
        step.put("copy", c);
        step.put("start", r.start());
        step.put("delta", r.delta());
        return step;
    }

    List<Object> enabled() {
        List<Object> steps = new ArrayList<>();
        Counter p = counters.get(primary);
        if (rejoined.isEmpty()) {
            for (long d : deltas) {
                if (p.hwm + d <= maxCounter) {
                    steps.add(named("Reserve", primary, new Range(p.hwm, d)));
                }
            }
        }
        for (String c : copies) {
            for (Range r : pending.get(c)) {
                if (!rolledBack.contains(r)) {
                    steps.add(named("Commit", c, r));
                }
                if (!committed.contains(r) && (!c.equals(primary) || backupsFinished(r))) {
                    steps.add(named("Rollback", c, r));
                }
                if (!committed.contains(r) && !c.equals(primary) && rejoined.contains(primary)) {
                    steps.add(named("Drop", c, r));
                }
            }
            for (long i : done.get(c)) {
                steps.add(named("Replay", c, new Range(i - 1, 1)));
            }
            if (survivors().stream().anyMatch(s -> !s.equals(c))) {
                steps.add(Map.of("name", "Restart", "copy", c));
            }
        }
        if (exchangeDue()) {
            steps.add(Map.of("name", "Exchange", "lwm", maxLwm(exchanged())));
        }
        return steps;
    }

    // --- the abstract state (ITF) -------------------------------------------------------------------

    Map<String, Object> itf() {
        Map<String, Object> counter = new TreeMap<>();
        Map<String, Object> pendingOut = new TreeMap<>();
        Map<String, Object> doneOut = new TreeMap<>();
        for (String c : copies) {
            Counter k = counters.get(c);
            List<Object> items = new ArrayList<>();
            k.applied.forEach((start, delta) -> items.add(List.of(start, delta)));
            Map<String, Object> record = new TreeMap<>();
            record.put("lwm", k.lwm);
            record.put("hwm", k.hwm);
            record.put("items", items);
            record.put("first", k.first);
            counter.put(c, record);
            pendingOut.put(c, Itf.set(pending.get(c).stream().map(Range::itf).toList()));
            doneOut.put(c, Itf.set(new ArrayList<>(done.get(c))));
        }
        Map<String, Object> state = new TreeMap<>();
        state.put("counter", counter);
        state.put("pending", pendingOut);
        state.put("done", doneOut);
        state.put("committed", Itf.set(committed.stream().map(Range::itf).toList()));
        state.put("rolledBack", Itf.set(rolledBack.stream().map(Range::itf).toList()));
        state.put("rejoined", Itf.set(new ArrayList<>(rejoined)));
        state.put("action", action);
        return state;
    }

    /** Put the copies into the given abstract state. */
    void load(Map<String, Object> state) {
        Map<String, Object> counter = Itf.function(state.get("counter"));
        Map<String, Object> pendingIn = Itf.function(state.get("pending"));
        Map<String, Object> doneIn = Itf.function(state.get("done"));
        counters = new TreeMap<>();
        pending = new TreeMap<>();
        done = new TreeMap<>();
        for (String c : copies) {
            Map<String, Object> record = Itf.record(counter.get(c));
            TreeMap<Long, Long> applied = new TreeMap<>();
            for (Object item : Itf.list(record.get("items"))) {
                List<Object> pair = Itf.list(item);
                applied.put(Itf.number(pair.get(0)), Itf.number(pair.get(1)));
            }
            counters.put(c, new Counter(Itf.number(record.get("lwm")), Itf.number(record.get("hwm")), applied,
                    (Boolean) record.get("first"), bug));
            pending.put(c, ranges(pendingIn.get(c)));
            TreeSet<Long> held = new TreeSet<>();
            for (Object i : Itf.set(doneIn.get(c))) {
                held.add(Itf.number(i));
            }
            done.put(c, held);
        }
        committed = ranges(state.get("committed"));
        rolledBack = ranges(state.get("rolledBack"));
        rejoined = new TreeSet<>();
        for (Object c : Itf.set(state.get("rejoined"))) {
            rejoined.add(Itf.string(c));
        }
        action = state.get("action");
    }

    private static Set<Range> ranges(Object value) {
        Set<Range> out = new HashSet<>();
        for (Object r : Itf.set(value)) {
            List<Object> pair = Itf.list(r);
            out.add(new Range(Itf.number(pair.get(0)), Itf.number(pair.get(1))));
        }
        return out;
    }
}
