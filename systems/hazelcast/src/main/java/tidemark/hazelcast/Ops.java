package tidemark.hazelcast;

import com.hazelcast.map.EntryProcessor;
import com.hazelcast.nio.ObjectDataInput;
import com.hazelcast.nio.ObjectDataOutput;
import com.hazelcast.nio.serialization.DataSerializableFactory;
import com.hazelcast.nio.serialization.IdentifiedDataSerializable;
import com.hazelcast.spi.impl.operationservice.Operation;
import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The harness's own serializable types (one DataSerializableFactory): the barrier operation, the entry
 * processor that writes a map entry, and the internal (non-fragmented) service's operations. Also the switch
 * that makes backups fail on chosen members.
 */
final class Ops implements DataSerializableFactory {
    static final int FACTORY_ID = 7351;
    static final int BARRIER = 1;
    static final int SET_VALUE = 2;
    static final int INTERNAL_PUT = 3;
    static final int INTERNAL_BACKUP = 4;
    static final int INTERNAL_REPLICATION = 5;

    /** Members whose backup operations (map entry processor backups, internal backups) throw while set. */
    static final Set<String> FAILING = ConcurrentHashMap.newKeySet();

    @Override
    public IdentifiedDataSerializable create(int classId) {
        switch (classId) {
            case BARRIER:
                return new Barrier();
            case SET_VALUE:
                return new SetValue();
            case INTERNAL_PUT:
                return new InternalService.Put();
            case INTERNAL_BACKUP:
                return new InternalService.PutBackup();
            case INTERNAL_REPLICATION:
                return new InternalService.Replication();
            default:
                return null;
        }
    }

    /** The member a partition thread belongs to: Hazelcast names them hz.NAME.partition-operation.thread-N. */
    static String memberOfThread() {
        String t = Thread.currentThread().getName();
        int start = t.indexOf("hz.");
        int end = t.indexOf(".partition-operation");
        return start >= 0 && end > start ? t.substring(start + 3, end) : "";
    }

    /** Throws on a member switched to failing: a backup that fails while it applies. */
    static void failIfSwitched() {
        if (FAILING.contains(memberOfThread()))
            throw new IllegalStateException("backup made to fail by the harness on " + memberOfThread());
    }

    /**
     * A no-op on one partition of one member, sent after a released message on the same connection: once it
     * answers, the message ahead of it in that partition's queue has run (urgent ones run first anyway).
     */
    static final class Barrier extends Operation implements IdentifiedDataSerializable {
        @Override
        public void run() {
        }

        @Override
        public boolean validatesTarget() {
            return false; // runs on any replica, not only the owner
        }

        @Override
        public String getServiceName() {
            return InternalService.NAME;
        }

        @Override
        public int getFactoryId() {
            return FACTORY_ID;
        }

        @Override
        public int getClassId() {
            return BARRIER;
        }
    }

    /** map.executeOnKey(key, new SetValue(v)): the owner and each backup set the value; a backup can fail. */
    static final class SetValue implements EntryProcessor<Integer, Integer, Object>, IdentifiedDataSerializable {
        private int value;
        private boolean backup; // the copy the owner sends with its backups

        SetValue() {
        }

        SetValue(int value) {
            this.value = value;
        }

        int value() {
            return value;
        }

        @Override
        public Object process(Map.Entry<Integer, Integer> entry) {
            if (backup)
                failIfSwitched();
            entry.setValue(value);
            return null;
        }

        @Override
        public EntryProcessor<Integer, Integer, Object> getBackupProcessor() {
            SetValue copy = new SetValue(value);
            copy.backup = true;
            return copy;
        }

        @Override
        public void writeData(ObjectDataOutput out) throws IOException {
            out.writeInt(value);
            out.writeBoolean(backup);
        }

        @Override
        public void readData(ObjectDataInput in) throws IOException {
            value = in.readInt();
            backup = in.readBoolean();
        }

        @Override
        public int getFactoryId() {
            return FACTORY_ID;
        }

        @Override
        public int getClassId() {
            return SET_VALUE;
        }
    }
}
