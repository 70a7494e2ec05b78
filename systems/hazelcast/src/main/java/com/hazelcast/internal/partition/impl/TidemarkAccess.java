package com.hazelcast.internal.partition.impl;

import com.hazelcast.internal.services.ServiceNamespace;
import com.hazelcast.spi.impl.NodeEngineImpl;
import com.hazelcast.spi.impl.PartitionSpecificRunnable;
import java.util.ArrayList;
import java.util.List;

/**
 * tidemark's harness reads a few package-private parts of Hazelcast's partition service (it is compiled into
 * this package for that; nothing here changes Hazelcast's behaviour): the anti-entropy task of one partition,
 * to run a round now, and the replica sync requests in flight.
 */
public final class TidemarkAccess {
    private TidemarkAccess() {
    }

    /** One sync request in flight on a member (ReplicaFragmentSyncInfo). */
    public record SyncInFlight(int partition, ServiceNamespace namespace, int replica, String targetUuid) {
    }

    /** The owner's anti-entropy task for one partition (what the periodic AntiEntropyTask runs per partition). */
    public static PartitionSpecificRunnable antiEntropy(NodeEngineImpl nodeEngine, int partitionId) {
        return new PartitionPrimaryReplicaAntiEntropyTask(nodeEngine, partitionId, null);
    }

    public static List<SyncInFlight> syncsInFlight(PartitionReplicaManager manager) {
        List<SyncInFlight> out = new ArrayList<>();
        for (ReplicaFragmentSyncInfo info : manager.getOngoingReplicaSyncRequests())
            out.add(new SyncInFlight(info.partitionId, info.namespace, info.replicaIndex, info.target.uuid().toString()));
        return out;
    }
}
