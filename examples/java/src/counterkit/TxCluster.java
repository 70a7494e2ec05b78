package counterkit;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Two-phase commit assigning partition update counters (spec/TxCounters.tla, docs/twophase.md): a near
 * node runs transactions, the primary locks their keys and reserves a counter range per partition at
 * prepare, backups take the primary's counters, every node commits (WAL, data, update) in any order,
 * rollback closes the range with update(start, delta) and a rollback record, servers crash and restart
 * from their WAL, tx recovery settles a transaction whose primary failed and the exchange finalizes the
 * survivors' counters. The counters are {@link Counter}s. Steps are refused (NotEnabled) where the
 * cluster could not take them; guards are checked before anything changes.
 */
final class TxCluster implements Model {
    /** A transaction as one server knows it: its state and its writes, key to counter. */
    record ServerTx(String state, TreeMap<Long, Long> writes) {
    }

    /** The near node's transaction: its state, the version it mapped on and the primary it mapped to. */
    record NearTx(String state, List<Long> ver, String primary) {
    }

    /** What a key holds on a server: the transaction that wrote it and the update's counter. */
    record Datum(String tx, long cntr) {
    }

    /** A WAL record: a data record (key, tx, cntr) or a rollback record (part, start, delta). */
    record WalRecord(String type, long key, String tx, long cntr, long part, long start, long delta) {
        static WalRecord data(long key, String tx, long cntr) {
            return new WalRecord("data", key, tx, cntr, 0, 0, 0);
        }

        static WalRecord rollback(long part, long start, long delta) {
            return new WalRecord("rollback", 0, "", 0, part, start, delta);
        }
    }

    /** A message; the fields its type does not carry are null. */
    record Msg(String type, String tx, String to, String sender, List<Long> ver, Boolean commit,
            TreeMap<Long, Long> writes) {
        String receiver() {
            return to == null ? "near" : to;
        }
    }

    private static final Set<String> ACTIVE = Set.of("locked", "preparing", "prepared", "rollingBack");
    private static final long GAP_LIMIT = 10000;

    private final List<String> servers = new ArrayList<>();
    private final List<String> ownerList = new ArrayList<>();
    private final long partitions;
    private final long maxFailures;
    private final Map<String, TreeSet<Long>> keysOf = new TreeMap<>();
    private final Bug bug;

    private TreeSet<String> alive;
    private TreeSet<String> restarted;
    private List<Long> topVer;
    private List<Long> readyVer;
    private List<String> owners;
    private TreeMap<String, NearTx> near;
    private TreeMap<String, TreeMap<String, ServerTx>> txs;
    private TreeMap<String, TreeMap<Long, Counter>> counter;
    private TreeMap<String, TreeMap<Long, Datum>> data;
    private TreeMap<String, Set<WalRecord>> wal;
    private Set<Msg> msgs;
    private Object action;

    /** The cluster under the model's constants (ITF values, as in the init request), in its initial state. */
    TxCluster(Map<String, Object> constants, Bug bug) {
        this.bug = bug;
        long serverCount = Itf.number(constants.get("ServerCount"));
        long backups = Itf.number(constants.get("Backups"));
        partitions = Itf.number(constants.get("Partitions"));
        maxFailures = Itf.number(constants.get("MaxFailures"));
        for (long i = 1; i <= serverCount; i++) {
            servers.add("s" + i);
            if (i <= backups + 1) {
                ownerList.add("s" + i);
            }
        }
        // Transactions are named t1, t2, ... in the order of their smallest keys.
        List<TreeSet<Long>> keySets = new ArrayList<>();
        for (Object ks : Itf.set(constants.get("TxKeys"))) {
            TreeSet<Long> keys = new TreeSet<>();
            Itf.set(ks).forEach(k -> keys.add(Itf.number(k)));
            keySets.add(keys);
        }
        keySets.sort((a, b) -> Long.compare(a.first(), b.first()));
        for (int i = 0; i < keySets.size(); i++) {
            keysOf.put("t" + (i + 1), keySets.get(i));
        }
        alive = new TreeSet<>(servers);
        restarted = new TreeSet<>();
        topVer = List.of(1L, 0L);
        readyVer = topVer;
        owners = List.copyOf(ownerList);
        near = new TreeMap<>();
        keysOf.keySet().forEach(t -> near.put(t, new NearTx("idle", topVer, ownerList.get(0))));
        txs = new TreeMap<>();
        counter = new TreeMap<>();
        data = new TreeMap<>();
        wal = new TreeMap<>();
        for (String n : servers) {
            txs.put(n, new TreeMap<>());
            counter.put(n, freshCounters(n));
            data.put(n, new TreeMap<>());
            wal.put(n, new HashSet<>());
        }
        msgs = new HashSet<>();
        action = Map.of("name", "Init");
    }

    private TreeMap<Long, Counter> freshCounters(String n) {
        TreeMap<Long, Counter> out = new TreeMap<>();
        if (ownerList.contains(n)) {
            for (long p = 0; p < partitions; p++) {
                out.put(p, Counter.fresh(GAP_LIMIT, bug));
            }
        }
        return out;
    }

    // --- helpers ------------------------------------------------------------------------------------

    private long part(long key) {
        return key % partitions;
    }

    private static void require(boolean condition, String why) throws Partition.NotEnabled {
        if (!condition) {
            throw new Partition.NotEnabled(why);
        }
    }

    private ServerTx tx(String n, String t) {
        return txs.get(n).get(t);
    }

    private boolean inState(String n, String t, String state) {
        ServerTx x = tx(n, t);
        return x != null && x.state.equals(state);
    }

    private boolean hasActive(String n, String t) {
        ServerTx x = tx(n, t);
        return x != null && ACTIVE.contains(x.state);
    }

    /** No transaction holding locks on n writes a key t writes (t itself included). */
    private boolean locksFree(String n, String t) {
        for (String o : txs.get(n).keySet()) {
            if (hasActive(n, o) && keysOf.get(o).stream().anyMatch(keysOf.get(t)::contains)) {
                return false;
            }
        }
        return true;
    }

    private Msg find(Predicate<Msg> wanted) {
        return msgs.stream().filter(wanted).findFirst().orElse(null);
    }

    /** Messages reach only a live receiver (the near node never fails). */
    private void send(List<Msg> out) {
        for (Msg m : out) {
            if (m.receiver().equals("near") || alive.contains(m.receiver())) {
                msgs.add(m);
            }
        }
    }

    private void reply(Msg m, List<Msg> out) {
        msgs.remove(m);
        send(out);
    }

    private List<String> dhtNodes(String n) {
        return owners.stream().filter(o -> !o.equals(n)).toList();
    }

    private boolean answered(String kind, String t, String n) {
        return dhtNodes(n).stream().filter(alive::contains)
                .allMatch(b -> msgs.contains(new Msg(kind, t, n, b, null, null, null)));
    }

    /** Each partition's range of writes ws: the partition to (start, delta). */
    private TreeMap<Long, long[]> ranges(TreeMap<Long, Long> ws) {
        TreeMap<Long, long[]> out = new TreeMap<>();
        ws.forEach((k, c) -> out.merge(part(k), new long[] {c - 1, 1},
                (a, b) -> new long[] {Math.min(a[0], b[0]), a[1] + b[1]}));
        return out;
    }

    /** update(start, delta) for each partition of ws on n; returns the partitions where it applied. */
    private List<Long> update(String n, TreeMap<Long, Long> ws) {
        List<Long> applied = new ArrayList<>();
        ranges(ws).forEach((p, r) -> {
            Counter c = counter.get(n).get(p);
            try {
                if (c != null && c.update(r[0], r[1])) {
                    applied.add(p);
                }
            } catch (Counter.TooManyGaps e) {
                throw new IllegalStateException(e.getMessage());
            }
        });
        return applied;
    }

    /** Commit on n: data records to the WAL, the keys written, then update(start, delta). */
    private void commitOn(String n, String t, TreeMap<Long, Long> ws) {
        ws.forEach((k, c) -> {
            wal.get(n).add(WalRecord.data(k, t, c));
            data.get(n).put(k, new Datum(t, c));
        });
        update(n, ws);
    }

    /** Rollback on n: update(start, delta), and a rollback record where it applied. */
    private void rollbackOn(String n, TreeMap<Long, Long> ws) {
        if (bug == Bug.ROLLBACK_LEAVES_RANGE_OPEN) {
            return;
        }
        TreeMap<Long, long[]> rs = ranges(ws);
        for (long p : update(n, ws)) {
            wal.get(n).add(WalRecord.rollback(p, rs.get(p)[0], rs.get(p)[1]));
        }
    }

    private void setState(String n, String t, String state) {
        txs.get(n).put(t, new ServerTx(state, tx(n, t).writes));
    }

    private void setNear(String t, String state) {
        NearTx x = near.get(t);
        near.put(t, new NearTx(state, x.ver, x.primary));
    }

    private boolean recoveryDue(String t) {
        NearTx x = near.get(t);
        return !alive.contains(x.primary) && Set.of("preparing", "committed", "rolledBack").contains(x.state)
                && (x.state.equals("preparing") || alive.stream().anyMatch(n -> inState(n, t, "prepared"))
                        || msgs.stream().anyMatch(m -> m.tx.equals(t)));
    }

    private boolean anyActive() {
        return alive.stream().anyMatch(n -> keysOf.keySet().stream().anyMatch(t -> hasActive(n, t)));
    }

    // --- steps --------------------------------------------------------------------------------------

    @Override
    public void step(Map<String, Object> step) throws Partition.NotEnabled {
        String name = Itf.string(step.get("name"));
        String t = step.containsKey("tx") ? Itf.string(step.get("tx")) : null;
        String n = step.containsKey("node") ? Itf.string(step.get("node")) : null;
        require(t == null || keysOf.containsKey(t), "no transaction " + t);
        require(n == null || servers.contains(n), "no server " + n);
        boolean onServer = t != null && n != null;
        require(!onServer || alive.contains(n), n + " is down");
        switch (name) {
            case "TxStart" -> txStart(t);
            case "TxRemap" -> txRemap(t);
            case "TxPrepare" -> txPrepare(t);
            case "TxCommit" -> txFinish(t, true);
            case "TxRollback" -> txRollback(t);
            case "Recover" -> recover(t);
            case "Lock" -> lock(t, n);
            case "LockRemap" -> lockRemap(t, n);
            case "Prepare" -> prepare(t, n);
            case "Prepared" -> prepared(t, n);
            case "Commit" -> commit(t, n);
            case "Rollback" -> rollback(t, n);
            case "RolledBack" -> rolledBack(t, n);
            case "BackupPrepare" -> backupPrepare(t, n);
            case "BackupCommit" -> backupCommit(t, n);
            case "BackupRollback" -> backupRollback(t, n);
            case "NodeFail" -> nodeFail(n);
            case "Restart" -> restart(n);
            case "Exchange" -> exchange();
            case "Done" -> done();
            default -> throw new Partition.NotEnabled("no action " + name);
        }
        Map<String, Object> taken = new TreeMap<>();
        taken.put("name", name);
        if (t != null) {
            taken.put("tx", t);
        }
        if (n != null) {
            taken.put("node", n);
        }
        action = taken;
    }

    private void mapAndLock(String t) {
        near.put(t, new NearTx("locking", readyVer, owners.get(0)));
        send(List.of(new Msg("LockRequest", t, owners.get(0), null, readyVer, null, null)));
    }

    private void txStart(String t) throws Partition.NotEnabled {
        require(near.get(t).state.equals("idle") && !owners.isEmpty(), t + " started or no owner");
        require(topVer.equals(readyVer), "an exchange is pending");
        mapAndLock(t);
    }

    private void txRemap(String t) throws Partition.NotEnabled {
        NearTx x = near.get(t);
        require(x.state.equals("locking") && !owners.isEmpty() && topVer.equals(readyVer), "not remappable");
        Msg m = find(o -> o.type.equals("LockResponse") && o.tx.equals(t) && !o.ver.equals(x.ver));
        require(m != null, "no remap answer");
        msgs.remove(m);
        mapAndLock(t);
    }

    private void txPrepare(String t) throws Partition.NotEnabled {
        NearTx x = near.get(t);
        Msg m = new Msg("LockResponse", t, null, x.primary, x.ver, null, null);
        require(x.state.equals("locking") && msgs.contains(m), "not locked");
        reply(m, List.of(new Msg("PrepareRequest", t, x.primary, null, null, null, null)));
        setNear(t, "preparing");
    }

    /** The near node decides: commit (TxCommit) or rollback after PREPARED. */
    private void txFinish(String t, boolean commit) throws Partition.NotEnabled {
        NearTx x = near.get(t);
        Msg m = new Msg("PrepareResponse", t, null, x.primary, null, null, null);
        require(x.state.equals("preparing") && msgs.contains(m), "not prepared");
        reply(m, List.of(new Msg("FinishRequest", t, x.primary, null, null, commit, null)));
        setNear(t, commit ? "committed" : "rolledBack");
    }

    private void txRollback(String t) throws Partition.NotEnabled {
        NearTx x = near.get(t);
        if (x.state.equals("preparing")) {
            txFinish(t, false);
            return;
        }
        require(x.state.equals("locking"), "nothing to roll back");
        require(!alive.contains(x.primary) || msgs.stream().noneMatch(m -> m.tx.equals(t)), "lock in flight");
        msgs.removeIf(m -> m.tx.equals(t));
        setNear(t, "rolledBack");
    }

    private void lock(String t, String n) throws Partition.NotEnabled {
        Msg m = new Msg("LockRequest", t, n, null, readyVer, null, null);
        require(topVer.equals(readyVer) && msgs.contains(m), "no lock request");
        require(locksFree(n, t), "keys locked");
        reply(m, List.of(new Msg("LockResponse", t, null, n, readyVer, null, null)));
        txs.get(n).put(t, new ServerTx("locked", new TreeMap<>()));
    }

    private void lockRemap(String t, String n) throws Partition.NotEnabled {
        require(topVer.equals(readyVer), "an exchange is pending");
        Msg m = find(o -> o.type.equals("LockRequest") && o.tx.equals(t) && n.equals(o.to) && !o.ver.equals(readyVer));
        require(m != null, "no stale lock request");
        reply(m, List.of(new Msg("LockResponse", t, null, n, readyVer, null, null)));
    }

    /** The counters from hwm: each key of t in p gets hwm+1, hwm+2, ... in key order. */
    private void assign(String t, long p, long hwm, TreeMap<Long, Long> into) {
        long next = hwm;
        for (long k : keysOf.get(t)) {
            if (part(k) == p) {
                into.put(k, ++next);
            }
        }
    }

    private void prepare(String t, String n) throws Partition.NotEnabled {
        Msg m = new Msg("PrepareRequest", t, n, null, null, null, null);
        require(msgs.contains(m) && inState(n, t, "locked"), "no prepare request or not locked");
        TreeMap<Long, Long> ws = new TreeMap<>();
        TreeSet<Long> ps = new TreeSet<>();
        keysOf.get(t).forEach(k -> ps.add(part(k)));
        for (long p : ps) {
            Counter c = counter.get(n).get(p);
            long start = c.reserve(keysOf.get(t).stream().filter(k -> part(k) == p).count());
            assign(t, p, start, ws);
        }
        txs.get(n).put(t, new ServerTx("preparing", ws));
        reply(m, dhtNodes(n).stream().map(b -> new Msg("DhtPrepareRequest", t, b, n, null, null, ws)).toList());
    }

    private void prepared(String t, String n) throws Partition.NotEnabled {
        require(inState(n, t, "preparing") && answered("DhtPrepareResponse", t, n), "backups not prepared");
        setState(n, t, "prepared");
        msgs.removeIf(m -> m.type.equals("DhtPrepareResponse") && m.tx.equals(t));
        msgs.add(new Msg("PrepareResponse", t, null, n, null, null, null));
    }

    /** Bug commit-in-prepare-order: n commits t only after every transaction it holds with lower counters. */
    private boolean commitsInOrder(String n, String t) {
        if (bug != Bug.COMMIT_IN_PREPARE_ORDER) {
            return true;
        }
        long first = tx(n, t).writes.values().stream().min(Long::compare).orElse(0L);
        return txs.get(n).entrySet().stream().noneMatch(e -> e.getValue().state.equals("prepared")
                && e.getValue().writes.values().stream().anyMatch(c -> c < first));
    }

    private void commit(String t, String n) throws Partition.NotEnabled {
        Msg m = new Msg("FinishRequest", t, n, null, null, true, null);
        require(msgs.contains(m) && inState(n, t, "prepared"), "no commit request or not prepared");
        require(commitsInOrder(n, t), "an earlier transaction is not committed");
        commitOn(n, t, tx(n, t).writes);
        reply(m, dhtNodes(n).stream().map(b -> new Msg("DhtFinishRequest", t, b, n, null, true, null)).toList());
        setState(n, t, "committed");
    }

    private void rollback(String t, String n) throws Partition.NotEnabled {
        Msg m = new Msg("FinishRequest", t, n, null, null, false, null);
        require(msgs.contains(m) && inState(n, t, "prepared"), "no rollback request or not prepared");
        reply(m, dhtNodes(n).stream().map(b -> new Msg("DhtFinishRequest", t, b, n, null, false, null)).toList());
        setState(n, t, "rollingBack");
    }

    private void rolledBack(String t, String n) throws Partition.NotEnabled {
        require(inState(n, t, "rollingBack") && answered("DhtFinishResponse", t, n), "backups not rolled back");
        rollbackOn(n, tx(n, t).writes);
        setState(n, t, "rolledBack");
        msgs.removeIf(m -> m.type.equals("DhtFinishResponse") && m.tx.equals(t));
    }

    private void backupPrepare(String t, String n) throws Partition.NotEnabled {
        Msg m = find(o -> o.type.equals("DhtPrepareRequest") && o.tx.equals(t) && n.equals(o.to));
        require(m != null && locksFree(n, t), "no prepare request or keys locked");
        TreeMap<Long, Long> ws = new TreeMap<>(m.writes);
        if (bug == Bug.BACKUP_RESERVES_OWN_RANGE) {
            ws.clear();
            for (Map.Entry<Long, long[]> r : ranges(m.writes).entrySet()) {
                assign(t, r.getKey(), counter.get(n).get(r.getKey()).reserve(r.getValue()[1]), ws);
            }
        }
        txs.get(n).put(t, new ServerTx("prepared", ws));
        reply(m, List.of(new Msg("DhtPrepareResponse", t, m.sender, n, null, null, null)));
    }

    private Msg finishRequest(String t, String n, boolean commit) throws Partition.NotEnabled {
        Msg m = find(o -> o.type.equals("DhtFinishRequest") && o.tx.equals(t) && n.equals(o.to) && o.commit == commit);
        require(m != null && inState(n, t, "prepared"), "no finish request or not prepared");
        return m;
    }

    private void backupCommit(String t, String n) throws Partition.NotEnabled {
        Msg m = finishRequest(t, n, true);
        require(commitsInOrder(n, t), "an earlier transaction is not committed");
        commitOn(n, t, tx(n, t).writes);
        msgs.remove(m);
        setState(n, t, "committed");
    }

    private void backupRollback(String t, String n) throws Partition.NotEnabled {
        Msg m = finishRequest(t, n, false);
        rollbackOn(n, tx(n, t).writes);
        reply(m, List.of(new Msg("DhtFinishResponse", t, m.sender, n, null, null, null)));
        setState(n, t, "rolledBack");
    }

    private void nodeFail(String n) throws Partition.NotEnabled {
        require(alive.contains(n) && servers.size() - alive.size() < maxFailures, "cannot fail");
        alive.remove(n);
        topVer = List.of(topVer.get(0) + 1, 0L);
        txs.put(n, new TreeMap<>());
        data.put(n, new TreeMap<>());
        counter.put(n, freshCounters(n));
        msgs.removeIf(m -> m.receiver().equals(n));
    }

    /** Restart: every WAL record replayed on empty counters and data, then the counters restored. */
    private void restart(String n) throws Partition.NotEnabled {
        require(!alive.contains(n) && !restarted.contains(n), n + " is not down");
        restarted.add(n);
        TreeMap<Long, Counter> rebuilt = freshCounters(n);
        TreeMap<Long, Datum> held = new TreeMap<>();
        for (WalRecord r : wal.get(n)) {
            long p = r.type.equals("data") ? part(r.key) : r.part;
            long[] range = r.type.equals("data") ? new long[] {r.cntr - 1, 1} : new long[] {r.start, r.delta};
            if (r.type.equals("data") && (!held.containsKey(r.key) || held.get(r.key).cntr < r.cntr)) {
                held.put(r.key, new Datum(r.tx, r.cntr));
            }
            if (rebuilt.containsKey(p)) {
                try {
                    rebuilt.get(p).update(range[0], range[1]);
                } catch (Counter.TooManyGaps e) {
                    throw new IllegalStateException(e.getMessage());
                }
            }
        }
        rebuilt.replaceAll((p, c) -> c.restored());
        counter.put(n, rebuilt);
        data.put(n, held);
    }

    /** Tx recovery: commit if the near node decided commit, else roll back (backups drop the counters). */
    private void recover(String t) throws Partition.NotEnabled {
        require(recoveryDue(t), "no recovery due");
        boolean commit = near.get(t).state.equals("committed");
        String outcome = commit ? "committed" : "rolledBack";
        setNear(t, outcome);
        for (String n : alive) {
            if (inState(n, t, "prepared")) {
                if (commit) {
                    commitOn(n, t, tx(n, t).writes);
                }
                setState(n, t, outcome);
            }
        }
        msgs.removeIf(m -> m.tx.equals(t));
    }

    private void exchange() throws Partition.NotEnabled {
        require(!topVer.equals(readyVer), "no exchange pending");
        require(!anyActive() && keysOf.keySet().stream().noneMatch(this::recoveryDue), "transactions unfinished");
        List<String> survivors = owners.stream().filter(alive::contains).toList();
        Map<Long, Long> maxLwm = new TreeMap<>();
        for (String n : survivors) {
            counter.get(n).forEach((p, c) -> {
                for (List<Long> hole : c.finalizeGaps()) {
                    wal.get(n).add(WalRecord.rollback(p, hole.get(0) - 1, hole.get(1) - hole.get(0) + 1));
                }
                maxLwm.merge(p, c.lwm, Math::max);
            });
        }
        for (String n : survivors) {
            counter.get(n).forEach((p, c) -> c.updateLwm(maxLwm.get(p)));
        }
        owners = survivors;
        readyVer = topVer;
    }

    private boolean quiet() {
        return near.values().stream().allMatch(x -> Set.of("idle", "committed", "rolledBack").contains(x.state))
                && msgs.isEmpty() && !anyActive() && topVer.equals(readyVer);
    }

    private void done() throws Partition.NotEnabled {
        require(quiet() && near.values().stream().noneMatch(x -> x.state.equals("idle")), "not done");
    }

    @Override
    public List<Object> enabled() {
        List<Map<String, Object>> candidates = new ArrayList<>();
        for (String t : keysOf.keySet()) {
            for (String name : List.of("TxStart", "TxRemap", "TxPrepare", "TxCommit", "TxRollback", "Recover")) {
                candidates.add(Map.of("name", name, "tx", t));
            }
            for (String n : alive) {
                for (String name : List.of("Lock", "LockRemap", "Prepare", "Prepared", "Commit", "Rollback",
                        "RolledBack", "BackupPrepare", "BackupCommit", "BackupRollback")) {
                    candidates.add(Map.of("name", name, "tx", t, "node", n));
                }
            }
        }
        for (String n : servers) {
            candidates.add(Map.of("name", "NodeFail", "node", n));
            candidates.add(Map.of("name", "Restart", "node", n));
        }
        candidates.add(Map.of("name", "Exchange"));
        candidates.add(Map.of("name", "Done"));
        Map<String, Object> now = itf();
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> candidate : candidates) {
            try {
                step(candidate);
                out.add(candidate);
                load(now);
            } catch (Partition.NotEnabled refused) {
                // refused before anything changed
            }
        }
        return out;
    }

    // --- the abstract state (ITF) -------------------------------------------------------------------

    /** A function as TLC prints it: the empty one as an empty sequence. */
    private static Object function(Map<?, ?> f, boolean stringKeys) {
        if (f.isEmpty()) {
            return List.of();
        }
        if (stringKeys) {
            return f;
        }
        List<Object> pairs = new ArrayList<>();
        f.forEach((k, v) -> pairs.add(List.of(k, v)));
        return Map.of("#map", pairs);
    }

    private static Object writes(TreeMap<Long, Long> ws) {
        List<Object> pairs = new ArrayList<>();
        ws.forEach((k, c) -> pairs.add(List.of(k, c)));
        return Itf.set(pairs);
    }

    private static Object msg(Msg m) {
        Map<String, Object> out = new TreeMap<>();
        out.put("type", m.type);
        out.put("tx", m.tx);
        if (m.to != null) {
            out.put("to", m.to);
        }
        if (m.sender != null) {
            out.put("sender", m.sender);
        }
        if (m.ver != null) {
            out.put("ver", m.ver);
        }
        if (m.commit != null) {
            out.put("commit", m.commit);
        }
        if (m.writes != null) {
            out.put("writes", writes(m.writes));
        }
        return out;
    }

    private static Object record(WalRecord r) {
        Map<String, Object> out = new TreeMap<>();
        out.put("type", r.type);
        if (r.type.equals("data")) {
            out.put("key", r.key);
            out.put("tx", r.tx);
            out.put("cntr", r.cntr);
        } else {
            out.put("part", r.part);
            out.put("start", r.start);
            out.put("delta", r.delta);
        }
        return out;
    }

    @Override
    public Map<String, Object> itf() {
        Map<String, Object> state = new TreeMap<>();
        state.put("alive", Itf.set(new ArrayList<>(alive)));
        state.put("restarted", Itf.set(new ArrayList<>(restarted)));
        state.put("topVer", topVer);
        state.put("readyVer", readyVer);
        state.put("owners", owners);
        Map<String, Object> nearOut = new TreeMap<>();
        near.forEach((t, x) -> nearOut.put(t, Map.of("state", x.state, "ver", x.ver, "primary", x.primary)));
        state.put("near", nearOut);
        Map<String, Object> txsOut = new TreeMap<>();
        Map<String, Object> counterOut = new TreeMap<>();
        Map<String, Object> dataOut = new TreeMap<>();
        Map<String, Object> walOut = new TreeMap<>();
        for (String n : servers) {
            Map<String, Object> held = new TreeMap<>();
            txs.get(n).forEach((t, x) -> held.put(t, Map.of("state", x.state, "writes", writes(x.writes))));
            txsOut.put(n, function(held, true));
            Map<Long, Object> counters = new TreeMap<>();
            counter.get(n).forEach((p, c) -> {
                List<Object> items = new ArrayList<>();
                c.applied.forEach((start, delta) -> items.add(List.of(start, delta)));
                counters.put(p, Map.of("lwm", c.lwm, "hwm", c.hwm, "items", items, "first", c.first));
            });
            counterOut.put(n, function(counters, false));
            Map<Long, Object> keys = new TreeMap<>();
            data.get(n).forEach((k, d) -> keys.put(k, Map.of("tx", d.tx, "cntr", d.cntr)));
            dataOut.put(n, function(keys, false));
            walOut.put(n, Itf.set(wal.get(n).stream().map(TxCluster::record).toList()));
        }
        state.put("txs", txsOut);
        state.put("counter", counterOut);
        state.put("data", dataOut);
        state.put("wal", walOut);
        state.put("msgs", Itf.set(msgs.stream().map(TxCluster::msg).toList()));
        state.put("action", action);
        return state;
    }

    /** A function's pairs, whether written as #map, as an object (string keys) or as <<>> (empty). */
    private static Map<String, Object> pairs(Object value) {
        if (value instanceof List<?> list && list.isEmpty()) {
            return new LinkedHashMap<>();
        }
        if (value instanceof Map<?, ?> map && map.get("#map") instanceof List<?> entries) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Object pair : entries) {
                List<Object> kv = Itf.list(pair);
                out.put(kv.get(0) instanceof String s ? s : Long.toString(Itf.number(kv.get(0))), kv.get(1));
            }
            return out;
        }
        return Itf.record(value);
    }

    private static List<Long> numbers(Object value) {
        return Itf.list(value).stream().map(Itf::number).toList();
    }

    private static TreeMap<Long, Long> writesIn(Object value) {
        TreeMap<Long, Long> ws = new TreeMap<>();
        for (Object w : Itf.set(value)) {
            List<Long> kc = numbers(w);
            ws.put(kc.get(0), kc.get(1));
        }
        return ws;
    }

    private static String field(Map<String, Object> record, String name) {
        return record.containsKey(name) ? Itf.string(record.get(name)) : null;
    }

    @Override
    public void load(Map<String, Object> state) {
        alive = new TreeSet<>();
        Itf.set(state.get("alive")).forEach(n -> alive.add(Itf.string(n)));
        restarted = new TreeSet<>();
        Itf.set(state.get("restarted")).forEach(n -> restarted.add(Itf.string(n)));
        topVer = numbers(state.get("topVer"));
        readyVer = numbers(state.get("readyVer"));
        owners = Itf.list(state.get("owners")).stream().map(Itf::string).toList();
        near = new TreeMap<>();
        pairs(state.get("near")).forEach((t, v) -> {
            Map<String, Object> x = Itf.record(v);
            near.put(t, new NearTx(Itf.string(x.get("state")), numbers(x.get("ver")), Itf.string(x.get("primary"))));
        });
        Map<String, Object> txsIn = pairs(state.get("txs"));
        Map<String, Object> counterIn = pairs(state.get("counter"));
        Map<String, Object> dataIn = pairs(state.get("data"));
        Map<String, Object> walIn = pairs(state.get("wal"));
        txs = new TreeMap<>();
        counter = new TreeMap<>();
        data = new TreeMap<>();
        wal = new TreeMap<>();
        for (String n : servers) {
            TreeMap<String, ServerTx> held = new TreeMap<>();
            pairs(txsIn.get(n)).forEach((t, v) -> {
                Map<String, Object> x = Itf.record(v);
                held.put(t, new ServerTx(Itf.string(x.get("state")), writesIn(x.get("writes"))));
            });
            txs.put(n, held);
            TreeMap<Long, Counter> counters = new TreeMap<>();
            pairs(counterIn.get(n)).forEach((p, v) -> {
                Map<String, Object> c = Itf.record(v);
                TreeMap<Long, Long> items = new TreeMap<>();
                Itf.list(c.get("items")).forEach(i -> items.put(numbers(i).get(0), numbers(i).get(1)));
                counters.put(Long.parseLong(p), new Counter(Itf.number(c.get("lwm")), Itf.number(c.get("hwm")), items,
                        (Boolean) c.get("first"), GAP_LIMIT, bug));
            });
            counter.put(n, counters);
            TreeMap<Long, Datum> keys = new TreeMap<>();
            pairs(dataIn.get(n)).forEach((k, v) -> {
                Map<String, Object> d = Itf.record(v);
                keys.put(Long.parseLong(k), new Datum(Itf.string(d.get("tx")), Itf.number(d.get("cntr"))));
            });
            data.put(n, keys);
            Set<WalRecord> records = new HashSet<>();
            for (Object v : Itf.set(walIn.get(n))) {
                Map<String, Object> r = Itf.record(v);
                records.add(Itf.string(r.get("type")).equals("data")
                        ? WalRecord.data(Itf.number(r.get("key")), Itf.string(r.get("tx")), Itf.number(r.get("cntr")))
                        : WalRecord.rollback(Itf.number(r.get("part")), Itf.number(r.get("start")),
                                Itf.number(r.get("delta"))));
            }
            wal.put(n, records);
        }
        msgs = new HashSet<>();
        for (Object v : Itf.set(state.get("msgs"))) {
            Map<String, Object> m = Itf.record(v);
            msgs.add(new Msg(Itf.string(m.get("type")), Itf.string(m.get("tx")), field(m, "to"), field(m, "sender"),
                    m.containsKey("ver") ? numbers(m.get("ver")) : null, (Boolean) m.get("commit"),
                    m.containsKey("writes") ? writesIn(m.get("writes")) : null));
        }
        action = state.get("action");
    }
}
