package tidemark.hazelcast;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.hazelcast.cluster.Address;
import com.hazelcast.cluster.ClusterState;
import com.hazelcast.config.Config;
import com.hazelcast.config.ConfigAccessor;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.MapConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.instance.EndpointQualifier;
import com.hazelcast.instance.FirewallingNodeContext;
import com.hazelcast.instance.impl.HazelcastInstanceFactory;
import com.hazelcast.instance.impl.HazelcastInstanceProxy;
import com.hazelcast.instance.impl.Node;
import com.hazelcast.internal.partition.InternalPartition;
import com.hazelcast.internal.partition.PartitionReplica;
import com.hazelcast.internal.partition.impl.InternalPartitionServiceImpl;
import com.hazelcast.internal.server.FirewallingServer;
import com.hazelcast.internal.server.ServerConnectionManager;
import com.hazelcast.spi.impl.NodeEngineImpl;
import com.hazelcast.spi.impl.PartitionSpecificRunnable;
import com.hazelcast.spi.properties.ClusterProperty;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The members in this JVM: their configuration (TCP/IP join on 127.0.0.1, multicast off, every member behind
 * Hazelcast's firewalling network with the Traffic filter), starting, killing and adding them, the cluster
 * state, and the helpers that run code on a member's partition thread.
 */
final class Members {
    static final int MAX_MEMBERS = 20; // ports base+1 .. base+20

    final Traffic traffic;
    final Map<String, HazelcastInstance> alive = new LinkedHashMap<>();
    final List<String> down = new ArrayList<>();
    private final Map<String, Integer> ports = new LinkedHashMap<>();
    Setup setup;

    /** The cluster's configuration, from the `start` command. */
    record Setup(int partitions, int backups, int asyncBackups, List<String> maps, int intervalSeconds,
        int maxParallel, int basePort, boolean noMigration, long backupTimeoutMs) {
        static Setup of(Args a) {
            int backups = a.bounded("backups", 1, 0, 6);
            int async = a.bounded("async_backups", 0, 0, 6);
            if (backups + async < 1 || backups + async > 6)
                throw new IllegalArgumentException("backups + async_backups must be in 1..6");
            List<String> maps = a.has("maps") ? a.strings("maps") : List.of("map1", "map2");
            if (maps.isEmpty() || maps.contains("internal"))
                throw new IllegalArgumentException("maps: at least one, and none named internal");
            return new Setup(a.bounded("partitions", 1, 1, 10_000), backups, async, maps,
                a.bounded("interval_s", 3600, 1, 86_400), a.bounded("max_parallel", 10, 0, 1000),
                a.bounded("base_port", 0, 1024, 65_000), a.flag("no_migration", false),
                a.millis("backup_timeout_ms", 1000));
        }
    }

    Members(Traffic traffic) {
        this.traffic = traffic;
    }

    static Node node(HazelcastInstance hz) {
        return ((HazelcastInstanceProxy) hz).getOriginal().node;
    }

    static NodeEngineImpl engine(HazelcastInstance hz) {
        return node(hz).getNodeEngine();
    }

    static InternalPartitionServiceImpl partitions(HazelcastInstance hz) {
        return node(hz).partitionService;
    }

    HazelcastInstance member(String name) {
        HazelcastInstance hz = alive.get(name);
        if (hz == null)
            throw new IllegalArgumentException("no running member '" + name + "' (running: " + alive.keySet() + ")");
        return hz;
    }

    String nameOf(Address address) {
        for (Map.Entry<String, HazelcastInstance> e : alive.entrySet())
            if (node(e.getValue()).getThisAddress().equals(address))
                return e.getKey();
        return address.toString();
    }

    String nameOf(PartitionReplica replica) {
        return replica == null ? null : nameOf(replica.address());
    }

    /** The sender's network below the firewall: what a held message is finally written to. */
    ServerConnectionManager network(String member) {
        return ((FirewallingServer) node(member(member)).getServer()).delegate
            .getConnectionManager(EndpointQualifier.MEMBER);
    }

    // --- lifecycle ------------------------------------------------------------------------------------------

    JsonObject start(Setup s, List<String> names) {
        if (setup != null)
            throw new IllegalArgumentException("the cluster is started already");
        if (names.size() < 1 || names.size() > 7)
            throw new IllegalArgumentException("members: 1 to 7 names");
        setup = s;
        for (String name : names)
            launch(name);
        HazelcastInstance first = alive.values().iterator().next();
        first.getPartitionService().getPartition(0).getOwner(); // the master assigns the partitions now
        awaitStable(60_000);
        if (s.noMigration())
            changeState(ClusterState.NO_MIGRATION);
        return table();
    }

    /** Changes the cluster state; Hazelcast refuses while its migration queue is not empty: then again. */
    private void changeState(ClusterState state) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                alive.values().iterator().next().getCluster().changeClusterState(state);
                return;
            }
            catch (IllegalStateException e) {
                if (System.nanoTime() > end)
                    throw e;
                sleep(50);
            }
        }
    }

    private Config config(String name, int port) {
        Setup s = setup;
        Config c = new Config();
        c.setInstanceName(name);
        c.setClusterName("tidemark-" + s.basePort());
        NetworkConfig net = c.getNetworkConfig();
        net.setPort(port).setPortAutoIncrement(false);
        net.getInterfaces().setEnabled(true).addInterface("127.0.0.1");
        JoinConfig join = net.getJoin();
        join.getMulticastConfig().setEnabled(false);
        join.getAutoDetectionConfig().setEnabled(false);
        join.getTcpIpConfig().setEnabled(true);
        ports.values().forEach(p -> join.getTcpIpConfig().addMember("127.0.0.1:" + p));
        join.getTcpIpConfig().addMember("127.0.0.1:" + port);
        c.setProperty(ClusterProperty.PARTITION_COUNT.getName(), String.valueOf(s.partitions()));
        c.setProperty(ClusterProperty.PARTITION_BACKUP_SYNC_INTERVAL.getName(), String.valueOf(s.intervalSeconds()));
        c.setProperty(ClusterProperty.PARTITION_MAX_PARALLEL_REPLICATIONS.getName(), String.valueOf(s.maxParallel()));
        c.setProperty(ClusterProperty.OPERATION_BACKUP_TIMEOUT_MILLIS.getName(), String.valueOf(s.backupTimeoutMs()));
        c.setProperty(ClusterProperty.WAIT_SECONDS_BEFORE_JOIN.getName(), "0");
        c.setProperty(ClusterProperty.MAX_WAIT_SECONDS_BEFORE_JOIN.getName(), "0");
        c.setProperty(ClusterProperty.HEARTBEAT_INTERVAL_SECONDS.getName(), "1");
        c.setProperty(ClusterProperty.MAX_NO_HEARTBEAT_SECONDS.getName(), "10");
        c.setProperty(ClusterProperty.PHONE_HOME_ENABLED.getName(), "false");
        c.setProperty(ClusterProperty.SHUTDOWNHOOK_ENABLED.getName(), "false");
        c.setProperty(ClusterProperty.LOGGING_TYPE.getName(), "jdk");
        c.setProperty(ClusterProperty.HEALTH_MONITORING_LEVEL.getName(), "OFF");
        c.setProperty(ClusterProperty.SOCKET_BIND_ANY.getName(), "false");
        for (String map : s.maps())
            c.addMapConfig(new MapConfig(map).setBackupCount(s.backups()).setAsyncBackupCount(s.asyncBackups()));
        ConfigAccessor.getServicesConfig(c).addServiceConfig(InternalService.config(s.backups(), s.asyncBackups()));
        c.getSerializationConfig().addDataSerializableFactory(Ops.FACTORY_ID, new Ops());
        return c;
    }

    /** Starts (and joins) one member; its outgoing packets pass the traffic filter from the start. */
    JsonObject launch(String name) {
        if (alive.containsKey(name))
            throw new IllegalArgumentException("member '" + name + "' is running already");
        if (ports.size() >= MAX_MEMBERS && !ports.containsKey(name))
            throw new IllegalArgumentException("at most " + MAX_MEMBERS + " members in one harness");
        int port = ports.computeIfAbsent(name, n -> setup.basePort() + 1 + ports.size());
        HazelcastInstance hz = HazelcastInstanceFactory.newHazelcastInstance(config(name, port), name,
            new FirewallingNodeContext());
        Node node = node(hz);
        FirewallingServer server = (FirewallingServer) node.getServer();
        ((FirewallingServer.FirewallingServerConnectionManager) server.getConnectionManager(EndpointQualifier.MEMBER))
            .setPacketFilter(traffic.filterFor(name, node.getSerializationService(), this::nameOf, this::network));
        alive.put(name, hz);
        down.remove(name);
        await(() -> alive.values().stream().allMatch(m -> m.getCluster().getMembers().size() == alive.size()),
            60_000, "every member to see " + name);
        if (partitions(hz).getPartitionStateManager().isInitialized())
            awaitStable(60_000); // a join into an assigned table: its migrations
        return table();
    }

    /** Terminates a member abruptly (no graceful shutdown): its held messages are lost with it. */
    JsonObject kill(List<String> names) {
        List<HazelcastInstance> doomed = new ArrayList<>();
        for (String name : names)
            doomed.add(member(name));
        for (String name : names) {
            alive.remove(name);
            down.add(name);
            traffic.forget(name);
        }
        List<Thread> stopping = new ArrayList<>();
        for (HazelcastInstance hz : doomed) { // simultaneously, as Hazelcast's stress test does
            Thread t = new Thread(() -> hz.getLifecycleService().terminate());
            t.start();
            stopping.add(t);
        }
        for (Thread t : stopping)
            join(t);
        await(() -> alive.values().stream().allMatch(m -> m.getCluster().getMembers().size() == alive.size()),
            60_000, "the survivors to remove " + names);
        awaitStable(120_000);
        return table();
    }

    private static void join(Thread t) {
        try {
            t.join();
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Lets the master repartition (state ACTIVE) until every migration is done; then NO_MIGRATION again. */
    JsonObject migrate() {
        changeState(ClusterState.ACTIVE);
        awaitStable(120_000);
        if (setup.noMigration())
            changeState(ClusterState.NO_MIGRATION);
        return table();
    }

    /** Every member terminated and forgotten, so that `start` can start a new cluster in this JVM. */
    void reset() {
        alive.values().forEach(hz -> hz.getLifecycleService().terminate());
        alive.clear();
        down.clear();
        ports.clear();
        setup = null;
    }

    // --- waiting ----------------------------------------------------------------------------------------------

    static void await(BooleanSupplier done, long timeoutMs, String what) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > end)
                throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what);
            sleep(20);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }

    /**
     * Until the partition table is settled: every member has the same table stamp, no partition names a member
     * that is gone, every partition has an owner, and the master runs and queues no migration - twice in a row.
     * (Not PartitionService.isClusterSafe: that one sends anti-entropy checks of its own.)
     */
    void awaitStable(long timeoutMs) {
        int[] stableFor = {0};
        await(() -> {
            stableFor[0] = settled() ? stableFor[0] + 1 : 0;
            return stableFor[0] >= 3;
        }, timeoutMs, "the partition table to settle");
    }

    private boolean settled() {
        Long stamp = null;
        for (HazelcastInstance hz : alive.values()) {
            InternalPartitionServiceImpl ps = partitions(hz);
            if (stamp != null && stamp != ps.getPartitionStateStamp())
                return false;
            stamp = ps.getPartitionStateStamp();
            if (ps.isLocalMemberMaster() && (ps.hasOnGoingMigration() || ps.getMigrationQueueSize() > 0))
                return false;
            for (InternalPartition p : ps.getInternalPartitions()) {
                if (p.getOwnerReplicaOrNull() == null)
                    return false;
                for (int i = 0; i < InternalPartition.MAX_REPLICA_COUNT; i++) {
                    PartitionReplica r = p.getReplica(i);
                    if (r != null && hz.getCluster().getMembers().stream().noneMatch(m -> m.getUuid().equals(r.uuid())))
                        return false;
                }
            }
        }
        return stamp != null;
    }

    // --- running on partition threads ---------------------------------------------------------------------

    /** Runs `task` on the member's thread of that partition (after what its queue holds) and returns its value. */
    static <T> T onPartition(HazelcastInstance hz, int partition, Supplier<T> task) {
        CompletableFuture<T> done = new CompletableFuture<>();
        engine(hz).getOperationService().execute(new PartitionSpecificRunnable() {
            @Override
            public int getPartitionId() {
                return partition;
            }

            @Override
            public void run() {
                try {
                    done.complete(task.get());
                }
                catch (Throwable e) {
                    done.completeExceptionally(e);
                }
            }
        });
        try {
            return done.get(30, TimeUnit.SECONDS);
        }
        catch (Exception e) {
            throw new IllegalStateException("partition " + partition + " on " + hz.getName() + ": " + e, e);
        }
    }

    /** Once this answers, what `from` sent `to` for that partition before it has run there. */
    void barrier(String from, String to, int partition) {
        if (!alive.containsKey(from) || !alive.containsKey(to))
            return;
        Ops.Barrier op = new Ops.Barrier();
        op.setPartitionId(partition);
        try {
            engine(member(from)).getOperationService()
                .createInvocationBuilder(InternalService.NAME, op, node(member(to)).getThisAddress())
                .setTryCount(1).invoke().get(30, TimeUnit.SECONDS);
        }
        catch (Exception e) {
            throw new IllegalStateException("barrier " + from + " -> " + to + " on partition " + partition + ": " + e, e);
        }
    }

    // --- the partition table ---------------------------------------------------------------------------------

    String owner(int partition) {
        HazelcastInstance any = alive.values().iterator().next();
        return nameOf(partitions(any).getPartition(partition).getOwnerReplicaOrNull());
    }

    /** Per partition the members at replica indexes 0..6 (null where vacant), as the first member sees it. */
    JsonObject table() {
        JsonObject o = new JsonObject();
        JsonObject table = new JsonObject();
        if (!alive.isEmpty()) {
            HazelcastInstance any = alive.values().iterator().next();
            for (InternalPartition p : partitions(any).getInternalPartitions()) {
                JsonArray row = new JsonArray();
                for (int i = 0; i < InternalPartition.MAX_REPLICA_COUNT; i++)
                    row.add(nameOf(p.getReplica(i)));
                table.add(String.valueOf(p.getPartitionId()), row);
            }
            o.addProperty("state", any.getCluster().getClusterState().toString());
        }
        o.add("table", table);
        JsonArray names = new JsonArray();
        alive.keySet().forEach(names::add);
        o.add("alive", names);
        JsonArray gone = new JsonArray();
        down.forEach(gone::add);
        o.add("down", gone);
        return o;
    }

    int partitionOf(int key) {
        return alive.values().iterator().next().getPartitionService().getPartition(key).getPartitionId();
    }

    /** The first `count` int keys (from 0 up) that fall in the partition. */
    List<Integer> keys(int partition, int count) {
        List<Integer> out = new ArrayList<>();
        for (int k = 0; out.size() < count; k++) {
            if (partitionOf(k) == partition)
                out.add(k);
            if (k == Integer.MAX_VALUE)
                break;
        }
        return out;
    }

    boolean isAlive(String name) {
        return alive.containsKey(Objects.requireNonNull(name));
    }
}
