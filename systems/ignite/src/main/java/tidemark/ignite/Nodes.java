package tidemark.ignite;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import org.apache.ignite.Ignition;
import org.apache.ignite.cluster.BaselineNode;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.cluster.ClusterState;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.processors.cache.CacheGroupContext;
import org.apache.ignite.internal.processors.cache.distributed.dht.topology.GridDhtLocalPartition;
import org.apache.ignite.internal.processors.cache.distributed.dht.topology.GridDhtPartitionState;
import org.apache.ignite.internal.processors.cache.persistence.GridCacheDatabaseSharedManager;
import org.apache.ignite.internal.processors.cache.persistence.CheckpointState;
import org.apache.ignite.internal.processors.cache.persistence.wal.WALPointer;

/** The nodes of the harness's cluster: start, fail, restart, join, baseline, outage, waits, observation. */
final class Nodes {
    private static final String CLIENT = "c1";

    private final MessageControl control;
    private final LogCapture logs;
    private final Txs txs;
    private final ExecutorService starter = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "node-starter");
        t.setDaemon(true);
        return t;
    });
    private ClusterSetup setup;
    private final Map<String, IgniteEx> servers = new TreeMap<>();
    private final Map<String, Future<IgniteEx>> starting = new LinkedHashMap<>();
    private IgniteEx client;

    Nodes(MessageControl control, LogCapture logs, Txs txs) {
        this.control = control;
        this.logs = logs;
        this.txs = txs;
    }

    synchronized JsonObject start(ClusterSetup s) throws Exception {
        if (setup != null)
            throw new IllegalArgumentException("the cluster is already started");
        setup = s;
        if (s.walRebalanceThreshold != null)
            System.setProperty("IGNITE_PDS_WAL_REBALANCE_THRESHOLD", String.valueOf(s.walRebalanceThreshold));
        for (String name : s.servers)
            servers.put(name, (IgniteEx)Ignition.start(s.node(name, false, control, logs)));
        client = (IgniteEx)Ignition.start(s.node(CLIENT, true, control, logs));
        client.cluster().state(ClusterState.ACTIVE);
        client.cluster().baselineAutoAdjustEnabled(false);
        client.getOrCreateCache(s.cache());
        awaitExchange(30_000);
        if (!s.checkpoints) {
            for (IgniteEx ig : servers.values())
                db(ig).enableCheckpoints(false).get();
        }
        JsonObject o = new JsonObject();
        JsonArray names = new JsonArray();
        servers.keySet().forEach(names::add);
        o.add("servers", names);
        o.addProperty("client", CLIENT);
        return o;
    }

    synchronized IgniteEx client() {
        if (client == null)
            throw new IllegalArgumentException("no client: start or activate the cluster first");
        return client;
    }

    private IgniteEx server(String name) {
        IgniteEx ig = servers.get(name);
        if (ig == null)
            throw new IllegalArgumentException("no running server " + name + " (running: " + servers.keySet() + ")");
        return ig;
    }

    private static GridCacheDatabaseSharedManager db(IgniteEx ig) {
        return (GridCacheDatabaseSharedManager)ig.context().cache().context().database();
    }

    /** NodeFail: checkpoints off, then stop without waiting for anything (restart recovers from the WAL). */
    synchronized JsonObject fail(String name) throws Exception {
        IgniteEx ig = server(name);
        db(ig).enableCheckpoints(false).get();
        servers.remove(name);
        Ignition.stop(name, true);
        JsonObject o = new JsonObject();
        o.addProperty("forgotten", control.forget(name));
        return o;
    }

    /** Restart (same name, same persistence) or Join (a new server): starting blocks until it joined. */
    synchronized JsonObject launch(String name, boolean fresh, long waitMs) throws Exception {
        if (setup == null)
            throw new IllegalArgumentException("start the cluster first");
        if (servers.containsKey(name) || starting.containsKey(name))
            throw new IllegalArgumentException("server " + name + " is already running or starting");
        boolean known = java.nio.file.Files.exists(setup.workDir.resolve(name));
        if (fresh == known)
            throw new IllegalArgumentException(fresh ? "join needs a new name; " + name + " has persistence"
                : "restart needs a server that ran before; " + name + " did not");
        starting.put(name, starter.submit(() -> (IgniteEx)Ignition.start(setup.node(name, false, control, logs))));
        return awaitStart(name, waitMs);
    }

    JsonObject awaitStart(String name, long waitMs) throws Exception {
        Future<IgniteEx> fut;
        synchronized (this) {
            fut = starting.get(name);
        }
        JsonObject o = new JsonObject();
        o.addProperty("node", name);
        if (fut == null) {
            o.addProperty("started", servers.containsKey(name));
            return o;
        }
        try {
            IgniteEx ig = fut.get(waitMs, TimeUnit.MILLISECONDS);
            synchronized (this) {
                starting.remove(name);
                servers.put(name, ig);
            }
            if (!setup.checkpoints && ig.cluster().state().active())
                db(ig).enableCheckpoints(false).get();
            o.addProperty("started", true);
        }
        catch (TimeoutException e) {
            o.addProperty("started", false);
        }
        catch (Exception e) {
            synchronized (this) {
                starting.remove(name);
            }
            throw new IllegalStateException("server " + name + " failed to start: " + e.getCause(), e);
        }
        return o;
    }

    /** BaselineChange: the given servers (alive or in the current baseline), or all running servers. The
     * change runs an exchange (which the harness may hold): it is applied in the background, and the answer
     * says whether it completed within `waitMs`. It is asked of the oldest server, not the client: a client
     * sends the change as a compute job to a server, which could then not stop until the change completed. */
    JsonObject baseline(List<String> names, long waitMs) throws Exception {
        IgniteEx c;
        synchronized (this) {
            c = servers.values().stream().min(Comparator.comparingLong(ig -> ig.localNode().order()))
                .orElseThrow(() -> new IllegalArgumentException("no running server"));
        }
        Runnable change;
        if (names == null) {
            long ver = c.cluster().topologyVersion();
            change = () -> c.cluster().setBaselineTopology(ver);
        }
        else {
            Map<String, BaselineNode> known = new TreeMap<>();
            Collection<BaselineNode> current = c.cluster().currentBaselineTopology();
            if (current != null)
                current.forEach(n -> known.put(String.valueOf(n.consistentId()), n));
            for (ClusterNode n : c.cluster().forServers().nodes())
                known.put(String.valueOf(n.consistentId()), n);
            List<BaselineNode> chosen = new ArrayList<>();
            for (String n : names) {
                if (!known.containsKey(n))
                    throw new IllegalArgumentException("server " + n + " is neither running nor in the baseline");
                chosen.add(known.get(n));
            }
            change = () -> c.cluster().setBaselineTopology(chosen);
        }
        Future<?> fut = starter.submit(change);
        JsonObject o = new JsonObject();
        try {
            fut.get(waitMs, TimeUnit.MILLISECONDS);
            o.addProperty("done", true);
        }
        catch (TimeoutException e) {
            o.addProperty("done", false);
        }
        catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("the baseline change failed: " + e.getCause(), e.getCause());
        }
        o.add("baseline", baselineJson().get("baseline"));
        return o;
    }

    private JsonObject baselineJson() {
        JsonObject o = new JsonObject();
        JsonArray a = new JsonArray();
        Collection<BaselineNode> bl = client().cluster().currentBaselineTopology();
        if (bl != null)
            bl.stream().map(n -> String.valueOf(n.consistentId())).sorted().forEach(a::add);
        o.add("baseline", a);
        return o;
    }

    /** Checkpoint now on these servers (default: all), leaving checkpoints off again if they were off. */
    synchronized JsonObject checkpoint(List<String> names) throws Exception {
        JsonArray done = new JsonArray();
        for (String n : names == null ? new ArrayList<>(servers.keySet()) : names) {
            GridCacheDatabaseSharedManager db = db(server(n));
            db.enableCheckpoints(true).get();
            db.forceCheckpoint("tidemark").futureFor(CheckpointState.FINISHED).get();
            if (!setup.checkpoints)
                db.enableCheckpoints(false).get();
            done.add(n);
        }
        JsonObject o = new JsonObject();
        o.add("checkpointed", done);
        return o;
    }

    /** Total outage: every server and the client stop at once (checkpoints off first). */
    synchronized JsonObject outage() throws Exception {
        JsonArray stopped = new JsonArray();
        for (IgniteEx ig : servers.values())
            db(ig).enableCheckpoints(false).get();
        for (String n : new ArrayList<>(servers.keySet())) {
            servers.remove(n);
            Ignition.stop(n, true);
            control.forget(n);
            stopped.add(n);
        }
        if (client != null) {
            Ignition.stop(CLIENT, true);
            client = null;
        }
        JsonObject o = new JsonObject();
        o.add("stopped", stopped);
        return o;
    }

    /** After an outage: start the client again and activate (the baseline decides the owners). */
    synchronized JsonObject activate(long waitMs) throws Exception {
        if (client == null)
            client = (IgniteEx)Ignition.start(setup.node(CLIENT, true, control, logs));
        client.cluster().state(ClusterState.ACTIVE);
        for (IgniteEx ig : servers.values()) {
            if (!setup.checkpoints)
                db(ig).enableCheckpoints(false).get();
        }
        return awaitExchange(waitMs);
    }

    private List<IgniteEx> everyone() {
        List<IgniteEx> all = new ArrayList<>(servers.values());
        if (client != null)
            all.add(client);
        return all;
    }

    /** Until every node completed its last exchange and all agree on the ready version (stable twice). */
    synchronized JsonObject awaitExchange(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        String last = null;
        while (System.currentTimeMillis() < deadline) {
            String ver = agreedVersion();
            if (ver != null && ver.equals(last))
                return status(true, ver);
            last = ver;
            wait(100);
        }
        return status(false, agreedVersion());
    }

    /** Until the client saw every topology change the servers saw and (the servers' exchanges done) finished
     * its own exchange: a server's failure reaches the client through its discovery router, later when the
     * router itself failed, and a transaction begun before that maps its keys onto the departed primary. */
    synchronized JsonObject awaitClient(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!clientCaughtUp() && System.currentTimeMillis() < deadline)
            wait(50);
        JsonObject o = new JsonObject();
        o.addProperty("done", clientCaughtUp());
        return o;
    }

    private boolean clientCaughtUp() {
        if (client == null)
            return true;
        long latest = 0;
        boolean serversDone = true;
        for (IgniteEx ig : servers.values()) {
            latest = Math.max(latest, ig.context().discovery().topologyVersion());
            serversDone &= ig.context().cache().context().exchange().lastTopologyFuture().isDone();
        }
        if (client.context().discovery().topologyVersion() < latest)
            return false;
        var ex = client.context().cache().context().exchange();
        return !serversDone || ex.lastTopologyFuture().isDone()
            && ex.readyAffinityVersion().topologyVersion() == client.context().discovery().topologyVersion();
    }

    private String agreedVersion() {
        String ver = null;
        for (IgniteEx ig : everyone()) {
            var ex = ig.context().cache().context().exchange();
            if (!ex.lastTopologyFuture().isDone())
                return null;
            if (ex.readyAffinityVersion().topologyVersion() != ig.context().discovery().topologyVersion())
                return null;
            String v = Observer.version(ex.readyAffinityVersion());
            if (ver != null && !ver.equals(v))
                return null;
            ver = v;
        }
        return ver;
    }

    private static JsonObject status(boolean done, String ver) {
        JsonObject o = new JsonObject();
        o.addProperty("done", done);
        o.addProperty("topVer", ver);
        return o;
    }

    /** Until exchanges are done and every copy on a running server is OWNING or gone (LOST ones excepted). */
    synchronized JsonObject awaitRebalance(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            JsonObject ex = awaitExchange(Math.max(1, deadline - System.currentTimeMillis()));
            if (ex.get("done").getAsBoolean() && settled()) {
                JsonObject again = awaitExchange(Math.max(1, deadline - System.currentTimeMillis()));
                if (again.get("done").getAsBoolean() && settled() && again.get("topVer").equals(ex.get("topVer")))
                    return again;
            }
            wait(200);
        }
        return status(false, agreedVersion());
    }

    private boolean settled() {
        for (IgniteEx ig : servers.values()) {
            CacheGroupContext grp = Observer.group(ig);
            if (grp == null)
                continue;
            if (!Observer.rebalanceDone(grp))
                return false;
            for (GridDhtLocalPartition p : grp.topology().localPartitions()) {
                GridDhtPartitionState st = p.state();
                if (st != GridDhtPartitionState.OWNING && st != GridDhtPartitionState.EVICTED
                    && !grp.topology().lostPartitions().contains(p.id()))
                    return false;
            }
        }
        return true;
    }

    /** Every running server's view; each starting server's as far as it can be observed ("starting"); the
     * down servers by name. */
    synchronized JsonObject observe(boolean entries, boolean idleVerify) throws Exception {
        for (Map.Entry<String, Future<IgniteEx>> e : new ArrayList<>(starting.entrySet())) {
            if (e.getValue().isDone())
                awaitStart(e.getKey(), 0); // started meanwhile: a running server now (or its error)
        }
        JsonObject o = new JsonObject();
        JsonObject per = new JsonObject();
        for (Map.Entry<String, IgniteEx> e : servers.entrySet())
            per.add(e.getKey(), Observer.node(e.getValue(), entries, control));
        JsonObject startingNodes = new JsonObject();
        for (String name : starting.keySet()) {
            IgniteEx ig = Starting.INSTANCES.get(name);
            JsonObject view;
            try {
                view = ig == null ? new JsonObject() : Observer.node(ig, entries, control);
            }
            catch (Exception | AssertionError e) {
                view = new JsonObject(); // not far enough into its start to be observed
                view.addProperty("unobservable", String.valueOf(e));
            }
            startingNodes.add(name, view);
        }
        o.add("nodes", per);
        o.add("starting", startingNodes);
        JsonArray down = new JsonArray();
        if (setup != null) {
            try (var dirs = java.nio.file.Files.list(setup.workDir)) {
                dirs.map(p -> p.getFileName().toString())
                    .filter(n -> n.matches("s\\d+") && !servers.containsKey(n) && !starting.containsKey(n))
                    .sorted().forEach(down::add);
            }
        }
        o.add("down", down);
        if (client != null) {
            // With every server down the client is disconnected (it reconnects when one is back): no baseline.
            try {
                o.add("baseline", baselineJson().get("baseline"));
            }
            catch (org.apache.ignite.IgniteClientDisconnectedException e) {
                o.addProperty("clientDisconnected", true);
            }
            o.add("txs", txs.all());
        }
        if (idleVerify)
            o.add("idle_verify", idleVerify());
        return o;
    }

    /** Every running server's copies as audit snapshot rows (Observer.snapshot). */
    synchronized JsonObject snapshot() throws Exception {
        JsonObject o = new JsonObject();
        for (Map.Entry<String, IgniteEx> e : servers.entrySet())
            o.add(e.getKey(), Observer.snapshot(e.getValue()));
        return o;
    }

    /** idle_verify waits for a checkpoint on every server: checkpoints are on for its duration. */
    synchronized JsonObject idleVerify() throws Exception {
        return checkpointed(() -> Observer.idleVerify(servers.values().iterator().next()));
    }

    /** idle_verify --dump [--skip-zeros], with checkpoints on like idle_verify. */
    synchronized JsonObject idleVerifyDump(boolean skipZeros) throws Exception {
        return checkpointed(() -> Observer.idleVerifyDump(servers.values().iterator().next(), skipZeros));
    }

    private JsonObject checkpointed(java.util.concurrent.Callable<JsonObject> task) throws Exception {
        if (servers.isEmpty())
            throw new IllegalArgumentException("no running server");
        for (IgniteEx ig : servers.values())
            db(ig).enableCheckpoints(true).get();
        try {
            return task.call();
        }
        finally {
            if (!setup.checkpoints) {
                for (IgniteEx ig : servers.values())
                    db(ig).enableCheckpoints(false).get();
            }
        }
    }

    /** At exit: every node stops. */
    synchronized void stopAll() {
        stopNodes();
        starter.shutdownNow();
    }

    /** Every node stops, one at a time: Ignite's stop of a node whose start was cut short can throw (a
     * NullPointerException from its half-started components), which must neither stop the others from
     * stopping nor fail the reset. The errors are returned. */
    private JsonArray stopNodes() {
        starting.values().forEach(f -> f.cancel(true));
        List<String> names = new ArrayList<>(starting.keySet());
        names.addAll(servers.keySet());
        names.add(CLIENT);
        starting.clear();
        JsonArray errors = new JsonArray();
        for (String name : names) {
            try {
                Ignition.stop(name, true);
            }
            catch (RuntimeException | AssertionError e) {
                errors.add(name + ": " + e);
            }
        }
        try {
            Ignition.stopAll(true); // whatever is left (a node Ignite registered under another name)
        }
        catch (RuntimeException | AssertionError e) {
            errors.add("stopAll: " + e);
        }
        Starting.INSTANCES.clear();
        servers.clear();
        client = null;
        return errors;
    }

    /** A new cluster can start in this JVM: every node stops, its persistence and the message rules, records
     * and transactions are forgotten (each scenario gets fresh persistence directories). */
    synchronized JsonObject reset() throws Exception {
        // Held messages are delivered first: a node waiting for one (a joining server's exchange) could not
        // stop, and nothing is observed any more.
        control.clearRules();
        for (MessageControl.Held h : control.take(control.matching(null, null, null, null)))
            h.deliver().run();
        for (Future<IgniteEx> f : starting.values()) {
            try {
                f.get(10, TimeUnit.SECONDS);
            }
            catch (Exception e) {
                f.cancel(true); // a start that fails or hangs is cut short; stopping the nodes follows
            }
        }
        JsonArray stopErrors = stopNodes();
        control.reset();
        txs.shutdown();
        System.clearProperty("IGNITE_PDS_WAL_REBALANCE_THRESHOLD");
        JsonArray removed = new JsonArray();
        if (setup != null) {
            try (var dirs = java.nio.file.Files.list(setup.workDir)) {
                for (Path dir : dirs.filter(java.nio.file.Files::isDirectory).collect(Collectors.toList())) {
                    deleteTree(dir);
                    removed.add(dir.getFileName().toString());
                }
            }
        }
        setup = null;
        JsonObject o = new JsonObject();
        o.add("removed", removed);
        if (stopErrors.size() > 0)
            o.add("stopErrors", stopErrors);
        return o;
    }

    private static void deleteTree(Path dir) throws java.io.IOException {
        try (var paths = java.nio.file.Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).collect(Collectors.toList()))
                java.nio.file.Files.delete(p);
        }
    }

    /** TruncateWal: a checkpoint, then the WAL history before it is given up (its checkpoints forgotten and
     * archived segments below it deleted), so this server supplies history only from its counters now. */
    synchronized JsonObject truncateWal(String name, boolean dry) throws Exception {
        IgniteEx ig = server(name);
        GridCacheDatabaseSharedManager db = db(ig);
        if (dry) {
            // Ignite keeps history an exchange or a rebalancing reserved: it would not truncate it.
            WALPointer first = db.checkpointHistory().firstCheckpointPointer();
            JsonObject o = new JsonObject();
            o.addProperty("reserved", first != null && ig.context().cache().context().wal().reserved(first));
            return o;
        }
        checkpoint(List.of(name));
        var hist = db.checkpointHistory();
        int before = hist.checkpoints().size();
        List<?> removed = hist.removeCheckpoints(before - 1);
        WALPointer mark = hist.lastCheckpoint().checkpointMark();
        int segments = ig.context().cache().context().wal().truncate(mark);
        JsonObject o = new JsonObject();
        o.addProperty("checkpointsRemoved", removed.size());
        o.addProperty("segmentsDeleted", segments);
        o.addProperty("reservedForPreloading", String.valueOf(db.latestWalPointerReservedForPreloading()));
        return o;
    }
}
