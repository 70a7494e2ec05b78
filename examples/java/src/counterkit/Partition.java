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
 * restart, and an exchange follows (node-left, with finalize, or a join); the primary may change at an
 * exchange. Steps are refused (NotEnabled) where the cluster could not take them.
 */
final class Partition implements Model {
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
    final long maxCounter;
    final List<Long> deltas;
    final long maxMissedUpdates;
    final Bug bug;

    Map<String, Counter> counters = new TreeMap<>();
    Map<String, Set<Range>> pending = new TreeMap<>();
    Map<String, TreeSet<Long>> done = new TreeMap<>();
    Set<Range> committed = new HashSet<>();
    Set<Range> rolledBack = new HashSet<>();
    Set<String> rejoined = new TreeSet<>();
    String primary;
    Object action;

    Partition(List<String> copies, String primary, long maxCounter, List<Long> deltas, long maxMissedUpdates,
            Bug bug) {
        this.copies = copies;
        this.primary = primary;
        this.maxCounter = maxCounter;
        this.deltas = deltas;
        this.maxMissedUpdates = maxMissedUpdates;
        this.bug = bug;
        for (String c : copies) {
            counters.put(c, Counter.fresh(maxMissedUpdates, bug));
            pending.put(c, new HashSet<>());
            done.put(c, new TreeSet<>());
        }
        action = Map.of("name", "Init");
    }

    // --- steps --------------------------------------------------------------------------------------

    /**
     * Takes the step the action names. What the action records the operations returned (reserve's start,
     * update's result, the exchange's value and finalize's gaps) is not an input: the step's action is
     * rebuilt from what this implementation returned, so a difference shows in the state's action.
     */
    @Override
    public void step(Map<String, Object> step) throws NotEnabled {
        String name = Itf.string(step.get("name"));
        action = switch (name) {
            case "Reserve" -> reserve(Itf.string(step.get("copy")), Itf.number(step.get("delta")));
            case "Commit" -> commit(Itf.string(step.get("copy")), range(step));
            case "Rollback" -> rollback(Itf.string(step.get("copy")), range(step));
            case "Drop" -> drop(Itf.string(step.get("copy")), range(step));
            case "Replay" -> replay(Itf.string(step.get("copy")), range(step));
            case "Restart" -> restart(Itf.string(step.get("copy")));
            case "Exchange" -> exchange(Itf.string(step.get("primary")));
            case "JoinExchange" -> joinExchange(Itf.string(step.get("primary")));
            default -> throw new NotEnabled("no action " + name);
        };
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

    private Map<String, Object> reserve(String c, long delta) throws NotEnabled {
        require(c.equals(primary), "only the primary reserves");
        require(rejoined.isEmpty(), "an exchange is due");
        require(deltas.contains(delta), "no such range size");
        Counter counter = counters.get(primary);
        require(counter.hwm + delta <= maxCounter, "the counter bound is reached");
        Range reserved = new Range(counter.reserve(delta), delta);
        for (String each : copies) {
            pending.get(each).add(reserved);
        }
        return named("Reserve", c, reserved);
    }

    /** What update(start, delta) returns on the counter, or that it threw at the gap limit. */
    private static String update(Counter counter, Range r) {
        try {
            return counter.update(r.start(), r.delta()) ? APPLIED : IGNORED;
        } catch (Counter.TooManyGaps full) {
            return TOO_MANY_GAPS;
        }
    }

    /**
     * Copy c applies range r and, unless its update threw at the gap limit (the node then fails, which the
     * model leaves to a later Restart, so nothing changes), the range is durable and its outcome decided.
     */
    private Map<String, Object> apply(String name, String c, Range r, Set<Range> outcomes) {
        String result = update(counters.get(c), r);
        if (!result.equals(TOO_MANY_GAPS)) {
            pending.get(c).remove(r);
            for (long i = r.start() + 1; i <= r.start() + r.delta(); i++) {
                done.get(c).add(i);
            }
            outcomes.add(r);
            forgetDecided();
        }
        return updated(name, c, r, result);
    }

    /** Outcomes are kept only while their range is pending on some copy (spec Remember). */
    private void forgetDecided() {
        for (Set<Range> outcomes : List.of(committed, rolledBack)) {
            outcomes.removeIf(r -> pending.values().stream().noneMatch(p -> p.contains(r)));
        }
    }

    private Map<String, Object> commit(String c, Range r) throws NotEnabled {
        copy(c);
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!rolledBack.contains(r), "rolled back");
        return apply("Commit", c, r, committed);
    }

    private boolean backupsFinished(Range r) {
        return copies.stream().filter(b -> !b.equals(primary)).noneMatch(b -> pending.get(b).contains(r));
    }

    private Map<String, Object> rollback(String c, Range r) throws NotEnabled {
        copy(c);
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!committed.contains(r), "committed");
        require(!c.equals(primary) || backupsFinished(r), "the primary rolls back last");
        return apply("Rollback", c, r, rolledBack);
    }

    private Map<String, Object> drop(String c, Range r) throws NotEnabled {
        copy(c);
        require(!c.equals(primary) && rejoined.contains(primary), "only a backup whose primary failed drops");
        require(pending.get(c).contains(r), "not pending on " + c);
        require(!committed.contains(r), "committed");
        pending.get(c).remove(r);
        rolledBack.add(r);
        forgetDecided();
        return named("Drop", c, r);
    }

    /** WAL replay on a recovering copy: the record is already in the counter, update only reports so. */
    private Map<String, Object> replay(String c, Range r) throws NotEnabled {
        copy(c);
        require(rejoined.contains(c), "only a recovering copy replays its WAL");
        require(r.delta() == 1 && done.get(c).contains(r.start() + 1), "no such WAL record on " + c);
        return updated("Replay", c, r, update(counters.get(c), r));
    }

    private List<String> survivors() {
        return copies.stream().filter(c -> !rejoined.contains(c)).toList();
    }

    private Map<String, Object> restart(String c) throws NotEnabled {
        copy(c);
        require(survivors().stream().anyMatch(s -> !s.equals(c)), "the last copy alive");
        counters.put(c, counters.get(c).restored());
        pending.get(c).clear();
        rejoined.add(c);
        forgetDecided();
        return restarted(c);
    }

    private boolean released() {
        return pending.values().stream().allMatch(Set::isEmpty);
    }

    /** Who may be primary after a node-left exchange: the primary if it survived, else any survivor. */
    private List<String> newPrimaries() {
        return rejoined.contains(primary) ? survivors() : List.of(primary);
    }

    /** Survivors finalize (a node left), restarted copies bring what they restored; gaps per survivor. */
    private Map<String, Object> finalizeSurvivors(Map<String, Counter> brought) {
        Map<String, Object> gaps = new TreeMap<>();
        for (String c : copies) {
            Counter counter = counters.get(c).copy();
            if (!rejoined.contains(c)) {
                gaps.put(c, counter.finalizeGaps());
            }
            brought.put(c, counter);
        }
        return gaps;
    }

    private static long maxLwm(Map<String, Counter> counters) {
        return counters.values().stream().mapToLong(c -> c.lwm).max().orElse(0);
    }

    private static Map<String, Object> exchanged(String name, long lwm, String primary) {
        Map<String, Object> step = new LinkedHashMap<>();
        step.put("name", name);
        step.put("lwm", lwm);
        step.put("primary", primary);
        return step;
    }

    private Map<String, Object> exchange(String np) throws NotEnabled {
        require(!rejoined.isEmpty() && released(), "no node-left exchange is due");
        require(newPrimaries().contains(np), np + " cannot be primary after this exchange");
        Map<String, Counter> brought = new TreeMap<>();
        Map<String, Object> gaps = finalizeSurvivors(brought);
        long value = maxLwm(brought);
        for (String c : copies) {
            brought.get(c).updateLwm(value);
            for (long i = 1; i <= value; i++) {
                done.get(c).add(i);
            }
        }
        counters = brought;
        rejoined.clear();
        primary = np;
        Map<String, Object> step = exchanged("Exchange", value, np);
        step.put("gaps", gaps);
        return step;
    }

    private Map<String, Object> joinExchange(String np) throws NotEnabled {
        copy(np);
        require(rejoined.isEmpty() && released(), "no join exchange is due");
        long value = maxLwm(counters);
        for (Counter counter : counters.values()) {
            counter.updateLwm(value);
        }
        primary = np;
        return exchanged("JoinExchange", value, np);
    }

    // --- enabled steps ------------------------------------------------------------------------------

    private static final String APPLIED = "applied";
    private static final String IGNORED = "ignored";
    private static final String TOO_MANY_GAPS = "too many gaps";

    private static Map<String, Object> named(String name, String c, Range r) {
        Map<String, Object> step = new LinkedHashMap<>();
        step.put("name", name);
        step.put("copy", c);
        step.put("start", r.start());
        step.put("delta", r.delta());
        return step;
    }

    private static Map<String, Object> updated(String name, String c, Range r, String result) {
        Map<String, Object> step = named(name, c, r);
        step.put("result", result);
        return step;
    }

    private static Map<String, Object> restarted(String c) {
        return Map.of("name", "Restart", "copy", c);
    }

    @Override
    public List<Object> enabled() {
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
            Counter counter = counters.get(c);
            for (Range r : pending.get(c)) {
                String result = update(counter.copy(), r);
                if (!rolledBack.contains(r)) {
                    steps.add(updated("Commit", c, r, result));
                }
                if (!committed.contains(r) && (!c.equals(primary) || backupsFinished(r))) {
                    steps.add(updated("Rollback", c, r, result));
                }
                if (!committed.contains(r) && !c.equals(primary) && rejoined.contains(primary)) {
                    steps.add(named("Drop", c, r));
                }
            }
            if (rejoined.contains(c)) {
                for (long i : done.get(c)) {
                    Range record = new Range(i - 1, 1);
                    steps.add(updated("Replay", c, record, update(counter.copy(), record)));
                }
            }
            if (survivors().stream().anyMatch(s -> !s.equals(c))) {
                steps.add(restarted(c));
            }
        }
        if (released() && !rejoined.isEmpty()) {
            Map<String, Counter> brought = new TreeMap<>();
            Map<String, Object> gaps = finalizeSurvivors(brought);
            for (String np : newPrimaries()) {
                Map<String, Object> step = exchanged("Exchange", maxLwm(brought), np);
                step.put("gaps", gaps);
                steps.add(step);
            }
        } else if (released()) {
            for (String np : copies) {
                steps.add(exchanged("JoinExchange", maxLwm(counters), np));
            }
        }
        return steps;
    }

    // --- the abstract state (ITF) -------------------------------------------------------------------

    @Override
    public Map<String, Object> itf() {
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
        state.put("primary", primary);
        state.put("action", action);
        return state;
    }

    /** Put the copies into the given abstract state. */
    @Override
    public void load(Map<String, Object> state) {
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
                    (Boolean) record.get("first"), maxMissedUpdates, bug));
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
        primary = Itf.string(state.get("primary"));
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
