package tidemark.ignite;

import com.google.gson.JsonObject;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.ignite.cache.CacheAtomicityMode;
import org.apache.ignite.cache.CacheWriteSynchronizationMode;
import org.apache.ignite.cache.PartitionLossPolicy;
import org.apache.ignite.cache.affinity.rendezvous.RendezvousAffinityFunction;
import org.apache.ignite.configuration.CacheConfiguration;
import org.apache.ignite.configuration.DataRegionConfiguration;
import org.apache.ignite.configuration.DataStorageConfiguration;
import org.apache.ignite.configuration.IgniteConfiguration;
import org.apache.ignite.configuration.TransactionConfiguration;
import org.apache.ignite.configuration.WALMode;
import org.apache.ignite.failure.StopNodeFailureHandler;
import org.apache.ignite.spi.discovery.tcp.TcpDiscoverySpi;
import org.apache.ignite.spi.discovery.tcp.ipfinder.vm.TcpDiscoveryVmIpFinder;

/** The cluster's configuration, from the "start" command, and the IgniteConfiguration of each node. */
final class ClusterSetup {
    static final String CACHE = "tidemark";
    /** Checkpoints by timer: practically never, so a failed node restarts from its WAL (forced ones still run). */
    static final long CHECKPOINT_FREQUENCY_MS = 3_600_000;
    /** Ports per harness: discovery at base..base+19, communication at base+20..base+39. */
    static final int PORT_RANGE = 20;

    /** The servers s1..sN in the order they start (the first is the oldest: it coordinates). */
    final List<String> servers = new ArrayList<>();
    final int partitions;
    final int backups;
    final Integer walRebalanceThreshold;
    final PartitionLossPolicy lossPolicy;
    final boolean checkpoints;
    /** CacheConfiguration.rebalanceBatchSize in bytes; 0 for Ignite's default (512 KiB). */
    final int rebalanceBatchBytes;
    final int basePort;
    final Path workDir;

    ClusterSetup(JsonObject args, Path workDir) {
        int count = Json.intOr(args, "servers", 3);
        List<String> order = Json.strings(args, "order");
        for (int i = 1; i <= count; i++)
            servers.add("s" + i);
        if (!order.isEmpty()) {
            if (order.size() != count || !order.containsAll(servers))
                throw new IllegalArgumentException("order must list s1..s" + count + " once each, got " + order);
            servers.clear();
            servers.addAll(order);
        }
        partitions = Json.intOr(args, "partitions", 1);
        backups = Json.intOr(args, "backups", count - 1);
        walRebalanceThreshold = args.has("wal_rebalance_threshold") ? args.get("wal_rebalance_threshold").getAsInt() : null;
        lossPolicy = PartitionLossPolicy.valueOf(Json.strOr(args, "loss_policy", "READ_WRITE_SAFE"));
        checkpoints = Json.boolOr(args, "checkpoints", true);
        rebalanceBatchBytes = Json.intOr(args, "rebalance_batch_bytes", 0);
        basePort = Json.intOr(args, "base_port", 47500);
        this.workDir = workDir;
        if (partitions < 1 || partitions > 65000 || backups < 0 || count < 1 || count > PORT_RANGE - 2)
            throw new IllegalArgumentException("servers 1.." + (PORT_RANGE - 2) + ", partitions 1..65000, backups >= 0");
    }

    CacheConfiguration<Integer, String> cache() {
        CacheConfiguration<Integer, String> cfg = new CacheConfiguration<Integer, String>(CACHE)
            .setAtomicityMode(CacheAtomicityMode.TRANSACTIONAL)
            .setWriteSynchronizationMode(CacheWriteSynchronizationMode.FULL_SYNC)
            .setBackups(backups)
            .setPartitionLossPolicy(lossPolicy)
            .setAffinity(new RendezvousAffinityFunction(false, partitions));
        if (rebalanceBatchBytes > 0) {
            // Small batches, each sent only once the demander asked for it: one supply message per batch.
            cfg.setRebalanceBatchSize(rebalanceBatchBytes);
            cfg.setRebalanceBatchesPrefetchCount(1);
        }
        return cfg;
    }

    IgniteConfiguration node(String name, boolean client, MessageControl control, LogCapture logs) {
        TcpDiscoveryVmIpFinder finder = new TcpDiscoveryVmIpFinder()
            .setAddresses(List.of("127.0.0.1:" + basePort + ".." + (basePort + PORT_RANGE - 1)));
        TcpDiscoverySpi disco = new TcpDiscoverySpi().setIpFinder(finder);
        disco.setLocalAddress("127.0.0.1");
        disco.setLocalPort(basePort);
        disco.setLocalPortRange(PORT_RANGE);
        ControlledSpi comm = new ControlledSpi(name, control);
        comm.setLocalAddress("127.0.0.1");
        comm.setLocalPort(basePort + PORT_RANGE);
        comm.setLocalPortRange(PORT_RANGE);

        DataStorageConfiguration storage = new DataStorageConfiguration()
            .setWalMode(WALMode.LOG_ONLY)
            .setWalSegmentSize(1 << 20)
            .setWalSegments(4)
            .setCheckpointFrequency(CHECKPOINT_FREQUENCY_MS)
            .setDefaultDataRegionConfiguration(new DataRegionConfiguration()
                .setPersistenceEnabled(true)
                .setInitialSize(32L << 20)
                .setMaxSize(64L << 20));

        IgniteConfiguration cfg = new IgniteConfiguration()
            .setIgniteInstanceName(name)
            .setConsistentId(name)
            .setClientMode(client)
            .setWorkDirectory(workDir.resolve(name).toString())
            .setDiscoverySpi(disco)
            .setCommunicationSpi(comm)
            .setGridLogger(logs.logger(name))
            .setLifecycleBeans(new Starting(name))
            .setFailureHandler(new StopNodeFailureHandler())
            .setFailureDetectionTimeout(10_000)
            .setClientConnectorConfiguration(null)
            .setConnectorConfiguration(null)
            .setPeerClassLoadingEnabled(false)
            .setMetricsLogFrequency(0)
            .setTransactionConfiguration(new TransactionConfiguration().setDefaultTxTimeout(0))
            .setPublicThreadPoolSize(2)
            .setSystemThreadPoolSize(2)
            .setStripedPoolSize(2)
            .setQueryThreadPoolSize(1)
            .setDataStreamerThreadPoolSize(1)
            .setManagementThreadPoolSize(1)
            .setPeerClassLoadingThreadPoolSize(1)
            .setServiceThreadPoolSize(1)
            .setUtilityCachePoolSize(1)
            .setAsyncCallbackPoolSize(1)
            .setRebalanceThreadPoolSize(1)
            .setSnapshotThreadPoolSize(1);
        if (!client)
            cfg.setDataStorageConfiguration(storage);
        return cfg;
    }
}
