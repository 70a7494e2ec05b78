package tidemark.hazelcast;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.hazelcast.internal.partition.NonFragmentedServiceNamespace;
import com.hazelcast.internal.partition.impl.PartitionDataSerializerHook;
import com.hazelcast.internal.serialization.InternalSerializationService;
import com.hazelcast.internal.services.ObjectNamespace;
import com.hazelcast.internal.services.ServiceNamespace;
import com.hazelcast.internal.nio.Packet;
import com.hazelcast.spi.impl.SpiDataSerializerHook;
import com.hazelcast.spi.impl.operationservice.NamedOperation;
import com.hazelcast.spi.impl.operationservice.Operation;
import java.lang.reflect.Field;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;

/**
 * The messages of Hazelcast's replica versioning that the harness controls, recognised by their serializer
 * ids, and what each carries (read from a deserialized copy of the packet; the packet itself is untouched).
 */
final class Messages {
    private Messages() {
    }

    enum Kind {
        BACKUP, ANTI_ENTROPY, SYNC_REQUEST, SYNC_RESPONSE, SYNC_RETRY;

        String json() {
            return name().toLowerCase();
        }

        static Kind parse(String s) {
            try {
                return valueOf(s.toUpperCase());
            }
            catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown message kind '" + s
                    + "' (backup, anti_entropy, sync_request, sync_response, sync_retry)");
            }
        }
    }

    /** The kind of an operation by its serializer ids, or null for every other operation. */
    static Kind kind(int factory, int classId) {
        if (factory == SpiDataSerializerHook.F_ID && classId == SpiDataSerializerHook.BACKUP)
            return Kind.BACKUP;
        if (factory != PartitionDataSerializerHook.F_ID)
            return null;
        switch (classId) {
            case PartitionDataSerializerHook.PARTITION_BACKUP_REPLICA_ANTI_ENTROPY:
                return Kind.ANTI_ENTROPY;
            case PartitionDataSerializerHook.REPLICA_SYNC_REQUEST:
            case PartitionDataSerializerHook.REPLICA_SYNC_REQUEST_OFFLOADABLE:
                return Kind.SYNC_REQUEST;
            case PartitionDataSerializerHook.REPLICA_SYNC_RESPONSE:
                return Kind.SYNC_RESPONSE;
            case PartitionDataSerializerHook.REPLICA_SYNC_RETRY_RESPONSE:
                return Kind.SYNC_RETRY;
            default:
                return null;
        }
    }

    /** A namespace as tidemark names it: the map's name, or "internal" for the non-fragmented one. */
    static String name(ServiceNamespace ns) {
        if (ns instanceof NonFragmentedServiceNamespace)
            return "internal";
        return ns instanceof ObjectNamespace ? ((ObjectNamespace) ns).getObjectName() : ns.toString();
    }

    static Object field(Object target, String name) {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            }
            catch (NoSuchFieldException e) {
                // look in the superclass
            }
            catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no field " + name + " in " + target.getClass().getName());
    }

    static JsonArray vector(long[] versions) {
        JsonArray a = new JsonArray();
        if (versions != null)
            for (long v : versions)
                a.add(v);
        return a;
    }

    /** What the message carries: partition, replica index, and per kind its namespace(s), versions, key, value. */
    static JsonObject detail(Kind kind, Packet packet, InternalSerializationService serialization) {
        JsonObject d = new JsonObject();
        Operation op;
        try {
            op = serialization.toObject(packet);
        }
        catch (RuntimeException e) {
            d.addProperty("undecoded", e.toString());
            return d;
        }
        d.addProperty("partition", op.getPartitionId());
        d.addProperty("replica", op.getReplicaIndex());
        switch (kind) {
            case BACKUP:
                backup(op, d, serialization);
                break;
            case ANTI_ENTROPY: {
                @SuppressWarnings("unchecked")
                Map<ServiceNamespace, Long> versions = (Map<ServiceNamespace, Long>) field(op, "versions");
                JsonObject v = new JsonObject();
                new TreeMap<String, Long>(collectNames(versions)).forEach(v::addProperty);
                d.add("versions", v);
                break;
            }
            case SYNC_REQUEST:
                d.add("namespaces", names(field(op, "namespaces")));
                if (op.getPartitionId() < 0) // the offloaded request carries its partition in a field of its own
                    d.addProperty("partition", (Integer) field(op, "partitionId"));
                break;
            case SYNC_RESPONSE:
                d.addProperty("ns", name((ServiceNamespace) field(op, "namespace")));
                d.add("versions", vector((long[]) field(op, "versions")));
                break;
            default:
                d.add("namespaces", names(field(op, "namespaces")));
        }
        return d;
    }

    private static Map<String, Long> collectNames(Map<ServiceNamespace, Long> versions) {
        Map<String, Long> out = new TreeMap<>();
        versions.forEach((ns, v) -> out.put(name(ns), v));
        return out;
    }

    private static JsonArray names(Object namespaces) {
        JsonArray a = new JsonArray();
        ((Collection<?>) namespaces).stream().map(ns -> name((ServiceNamespace) ns)).sorted().forEach(a::add);
        return a;
    }

    /** A backup: its namespace, the whole vector, and the key and value of the put it backs up. */
    private static void backup(Operation backup, JsonObject d, InternalSerializationService serialization) {
        d.add("versions", vector((long[]) field(backup, "replicaVersions")));
        Object inner = field(backup, "backupOp");
        if (inner instanceof InternalService.PutBackup) {
            InternalService.PutBackup put = (InternalService.PutBackup) inner;
            d.addProperty("ns", "internal");
            d.addProperty("key", put.key);
            d.addProperty("value", put.value);
        }
        else if (inner instanceof NamedOperation) {
            d.addProperty("ns", ((NamedOperation) inner).getName());
            Object key = serialization.toObject(field(inner, "dataKey"));
            if (key instanceof Integer)
                d.addProperty("key", (Integer) key);
            Object processor = field(inner, "entryBackupProcessor");
            if (processor instanceof Ops.SetValue)
                d.addProperty("value", ((Ops.SetValue) processor).value());
        }
    }
}
