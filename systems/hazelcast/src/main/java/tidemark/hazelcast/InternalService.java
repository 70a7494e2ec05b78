package tidemark.hazelcast;

import com.hazelcast.config.ServiceConfig;
import com.hazelcast.internal.partition.MigrationAwareService;
import com.hazelcast.internal.partition.MigrationEndpoint;
import com.hazelcast.internal.partition.PartitionMigrationEvent;
import com.hazelcast.internal.partition.PartitionReplicationEvent;
import com.hazelcast.internal.services.ManagedService;
import com.hazelcast.nio.ObjectDataInput;
import com.hazelcast.nio.ObjectDataOutput;
import com.hazelcast.nio.serialization.IdentifiedDataSerializable;
import com.hazelcast.spi.impl.NodeEngine;
import com.hazelcast.spi.impl.operationservice.BackupAwareOperation;
import com.hazelcast.spi.impl.operationservice.BackupOperation;
import com.hazelcast.spi.impl.operationservice.Operation;
import java.io.IOException;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A service that is not fragment-aware, so its operations share Hazelcast's one internal namespace
 * (NonFragmentedServiceNamespace): per partition a map key -> value, written by backup-aware puts and
 * replicated whole by replica sync and migration (prepareReplicationOperation). Backups as configured (the
 * `backups` and `async_backups` properties). Its data is touched only on partition threads.
 */
final class InternalService implements ManagedService, MigrationAwareService {
    static final String NAME = "tidemark:internal";

    private final Map<Integer, Map<Integer, Integer>> partitions = new ConcurrentHashMap<>();
    private int backups;
    private int asyncBackups;

    static ServiceConfig config(int backups, int asyncBackups) {
        Properties p = new Properties();
        p.setProperty("backups", String.valueOf(backups));
        p.setProperty("async_backups", String.valueOf(asyncBackups));
        return new ServiceConfig().setEnabled(true).setName(NAME).setImplementation(new InternalService())
            .setProperties(p);
    }

    @Override
    public void init(NodeEngine nodeEngine, Properties properties) {
        backups = Integer.parseInt(properties.getProperty("backups", "1"));
        asyncBackups = Integer.parseInt(properties.getProperty("async_backups", "0"));
    }

    @Override
    public void reset() {
        partitions.clear();
    }

    @Override
    public void shutdown(boolean terminate) {
        partitions.clear();
    }

    /** A copy of the partition's entries (empty when it has none). */
    Map<Integer, Integer> entries(int partition) {
        return new TreeMap<>(partitions.getOrDefault(partition, Map.of()));
    }

    private Map<Integer, Integer> store(int partition) {
        return partitions.computeIfAbsent(partition, p -> new ConcurrentHashMap<>());
    }

    private int totalBackups() {
        return backups + asyncBackups;
    }

    @Override
    public Operation prepareReplicationOperation(PartitionReplicationEvent event) {
        Map<Integer, Integer> data = partitions.get(event.getPartitionId());
        if (event.getReplicaIndex() > totalBackups() || data == null || data.isEmpty())
            return null;
        return new Replication(new TreeMap<>(data));
    }

    @Override
    public void beforeMigration(PartitionMigrationEvent event) {
    }

    @Override
    public void commitMigration(PartitionMigrationEvent event) {
        int now = event.getNewReplicaIndex();
        if (now == -1 || now > totalBackups())
            partitions.remove(event.getPartitionId());
    }

    @Override
    public void rollbackMigration(PartitionMigrationEvent event) {
        int before = event.getCurrentReplicaIndex();
        if (event.getMigrationEndpoint() == MigrationEndpoint.DESTINATION && (before == -1 || before > totalBackups()))
            partitions.remove(event.getPartitionId());
    }

    /** The base of the service's operations: a key and a value. */
    abstract static class KeyValueOp extends Operation implements IdentifiedDataSerializable {
        int key;
        int value;

        @Override
        public String getServiceName() {
            return NAME;
        }

        @Override
        public int getFactoryId() {
            return Ops.FACTORY_ID;
        }

        @Override
        protected void writeInternal(ObjectDataOutput out) throws IOException {
            out.writeInt(key);
            out.writeInt(value);
        }

        @Override
        protected void readInternal(ObjectDataInput in) throws IOException {
            key = in.readInt();
            value = in.readInt();
        }

        void apply() {
            InternalService service = getService();
            service.store(getPartitionId()).put(key, value);
        }
    }

    /** A put on the owner; its backups carry the replica versions like any backup-aware operation. */
    static final class Put extends KeyValueOp implements BackupAwareOperation {
        Put() {
        }

        Put(int key, int value) {
            this.key = key;
            this.value = value;
        }

        @Override
        public void run() {
            apply();
        }

        @Override
        public boolean shouldBackup() {
            return true;
        }

        @Override
        public int getSyncBackupCount() {
            return ((InternalService) getService()).backups;
        }

        @Override
        public int getAsyncBackupCount() {
            return ((InternalService) getService()).asyncBackups;
        }

        @Override
        public Operation getBackupOperation() {
            PutBackup backup = new PutBackup();
            backup.key = key;
            backup.value = value;
            return backup;
        }

        @Override
        public int getClassId() {
            return Ops.INTERNAL_PUT;
        }
    }

    /** A put's backup on a replica; it fails while the harness switches the member to failing. */
    static final class PutBackup extends KeyValueOp implements BackupOperation {
        @Override
        public void run() {
            Ops.failIfSwitched();
            apply();
        }

        @Override
        public int getClassId() {
            return Ops.INTERNAL_BACKUP;
        }
    }

    /** The partition's whole data, installed on a replica by sync or migration. */
    static final class Replication extends Operation implements IdentifiedDataSerializable {
        private Map<Integer, Integer> data = new TreeMap<>();

        Replication() {
        }

        Replication(Map<Integer, Integer> data) {
            this.data = data;
        }

        Map<Integer, Integer> data() {
            return data;
        }

        @Override
        public void run() {
            InternalService service = getService();
            Map<Integer, Integer> store = service.store(getPartitionId());
            store.clear();
            store.putAll(data);
        }

        @Override
        public String getServiceName() {
            return NAME;
        }

        @Override
        public int getFactoryId() {
            return Ops.FACTORY_ID;
        }

        @Override
        public int getClassId() {
            return Ops.INTERNAL_REPLICATION;
        }

        @Override
        protected void writeInternal(ObjectDataOutput out) throws IOException {
            out.writeInt(data.size());
            for (Map.Entry<Integer, Integer> e : data.entrySet()) {
                out.writeInt(e.getKey());
                out.writeInt(e.getValue());
            }
        }

        @Override
        protected void readInternal(ObjectDataInput in) throws IOException {
            int n = in.readInt();
            data = new TreeMap<>();
            for (int i = 0; i < n; i++)
                data.put(in.readInt(), in.readInt());
        }
    }
}
