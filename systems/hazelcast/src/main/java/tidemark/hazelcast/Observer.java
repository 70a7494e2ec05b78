package tidemark.hazelcast;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.internal.partition.InternalPartition;
import com.hazelcast.internal.partition.PartitionReplica;
import com.hazelcast.internal.partition.impl.PartitionReplicaManager;
import com.hazelcast.internal.partition.impl.TidemarkAccess;
import com.hazelcast.internal.services.ServiceNamespace;
import com.hazelcast.map.impl.MapService;
import com.hazelcast.map.impl.recordstore.RecordStore;
import com.hazelcast.spi.impl.NodeEngineImpl;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the members show, read on each member's partition threads: per partition its replica index, per
 * namespace the replica version vector and dirty flag (PartitionReplicaManager, the partition service's replica
 * version manager) and the entries (the map's record store, the internal service's data); per member its free
 * sync permits and sync requests in flight. Also the convergence check of Hazelcast's AntiEntropyCorrectnessTest.
 */
final class Observer {
    private final Members members;

    Observer(Members members) {
        this.members = members;
    }

    /** One member's copy of one partition. */
    record Copy(int replica, Map<String, long[]> versions, Map<String, Boolean> dirty,
        Map<String, Map<Integer, Integer>> entries) {
    }

    Copy copy(HazelcastInstance hz, int partition) {
        return Members.onPartition(hz, partition, () -> {
            NodeEngineImpl engine = Members.engine(hz);
            PartitionReplicaManager versions = Members.partitions(hz).getReplicaManager();
            InternalPartition p = Members.partitions(hz).getPartition(partition);
            int index = p.getReplicaIndex(PartitionReplica.from(engine.getLocalMember()));
            Map<String, long[]> vectors = new TreeMap<>();
            Map<String, Boolean> dirty = new TreeMap<>();
            // Only the namespaces the version table has: reading another would create its entry.
            for (ServiceNamespace ns : versions.getNamespaces(partition)) {
                long[] v = versions.getPartitionReplicaVersions(partition, ns);
                vectors.put(Messages.name(ns), Arrays.copyOf(v, v.length));
                dirty.put(Messages.name(ns), versions.isPartitionReplicaVersionDirty(partition, ns));
            }
            Map<String, Map<Integer, Integer>> entries = new TreeMap<>();
            MapService maps = engine.getService(MapService.SERVICE_NAME);
            for (String map : members.setup.maps()) {
                RecordStore<?> store = maps.getMapServiceContext().getPartitionContainer(partition)
                    .getExistingRecordStore(map);
                Map<Integer, Integer> data = new TreeMap<>();
                if (store != null)
                    store.forEach((k, r) -> data.put(engine.getSerializationService().toObject(k),
                        engine.getSerializationService().toObject(r.getValue())), false);
                entries.put(map, data);
            }
            InternalService internal = engine.getService(InternalService.NAME);
            entries.put("internal", internal.entries(partition));
            return new Copy(index, vectors, dirty, entries);
        });
    }

    private List<Integer> all() {
        List<Integer> out = new ArrayList<>();
        for (int p = 0; p < members.setup.partitions(); p++)
            out.add(p);
        return out;
    }

    JsonObject observe(List<Integer> partitions, boolean entries, Traffic traffic) {
        List<Integer> which = partitions.isEmpty() ? all() : partitions;
        JsonObject out = members.table();
        JsonObject view = new JsonObject();
        for (Map.Entry<String, HazelcastInstance> m : members.alive.entrySet()) {
            HazelcastInstance hz = m.getValue();
            PartitionReplicaManager manager = Members.partitions(hz).getReplicaManager();
            JsonObject member = new JsonObject();
            member.addProperty("permits", manager.availableReplicaSyncPermits());
            JsonArray syncs = new JsonArray();
            for (TidemarkAccess.SyncInFlight s : TidemarkAccess.syncsInFlight(manager)) {
                JsonObject o = new JsonObject();
                o.addProperty("partition", s.partition());
                o.addProperty("ns", Messages.name(s.namespace()));
                o.addProperty("replica", s.replica());
                o.addProperty("to", members.owner(s.partition()));
                syncs.add(o);
            }
            member.add("syncs", syncs);
            JsonObject parts = new JsonObject();
            for (int p : which) {
                Copy c = copy(hz, p);
                JsonObject o = new JsonObject();
                o.addProperty("replica", c.replica());
                JsonObject ns = new JsonObject();
                c.versions().forEach((name, v) -> {
                    JsonObject f = new JsonObject();
                    f.add("versions", Messages.vector(v));
                    f.addProperty("dirty", c.dirty().get(name));
                    ns.add(name, f);
                });
                o.add("namespaces", ns);
                if (entries) {
                    JsonObject data = new JsonObject();
                    c.entries().forEach((name, e) -> {
                        JsonObject d = new JsonObject();
                        e.forEach((k, v) -> d.addProperty(String.valueOf(k), v));
                        data.add(name, d);
                    });
                    o.add("entries", data);
                }
                parts.add(String.valueOf(p), o);
            }
            member.add("partitions", parts);
            view.add(m.getKey(), member);
        }
        out.add("members", view);
        out.add("held", traffic.heldJson());
        return out;
    }

    /**
     * Hazelcast's AntiEntropyCorrectnessTest's check, counted: for every partition and every backup replica
     * r up to the actual backup count, in every namespace, the replica's versions r..actual equal the owner's,
     * it is not dirty, and its entries equal the owner's; and every member has all its sync permits back.
     */
    JsonObject convergence() {
        Members.Setup s = members.setup;
        int actual = Math.min(s.backups() + s.asyncBackups(), members.alive.size() - 1);
        List<String> namespaces = new ArrayList<>(s.maps());
        namespaces.add("internal");
        int behind = 0;
        int dirty = 0;
        int data = 0;
        int checked = 0;
        HazelcastInstance any = members.alive.values().iterator().next();
        for (InternalPartition p : Members.partitions(any).getInternalPartitions()) {
            int id = p.getPartitionId();
            Copy owner = copy(members.member(members.nameOf(p.getReplica(0))), id);
            for (int r = 1; r <= actual; r++) {
                PartitionReplica replica = p.getReplica(r);
                if (replica == null) {
                    behind += namespaces.size();
                    continue;
                }
                Copy copy = copy(members.member(members.nameOf(replica)), id);
                for (String ns : namespaces) {
                    checked++;
                    long[] mine = copy.versions().getOrDefault(ns, new long[6]);
                    long[] theirs = owner.versions().getOrDefault(ns, new long[6]);
                    if (!Arrays.equals(Arrays.copyOfRange(mine, r - 1, actual), Arrays.copyOfRange(theirs, r - 1, actual)))
                        behind++;
                    if (copy.dirty().getOrDefault(ns, false))
                        dirty++;
                    if (!copy.entries().get(ns).equals(owner.entries().get(ns)))
                        data++;
                }
            }
        }
        int permitsOut = 0;
        int inFlight = 0;
        for (HazelcastInstance hz : members.alive.values()) {
            PartitionReplicaManager m = Members.partitions(hz).getReplicaManager();
            permitsOut += s.maxParallel() - m.availableReplicaSyncPermits();
            inFlight += TidemarkAccess.syncsInFlight(m).size();
        }
        JsonObject o = new JsonObject();
        o.addProperty("converged", behind == 0 && dirty == 0 && data == 0 && permitsOut == 0);
        o.addProperty("data_converged", data == 0);
        o.addProperty("checked", checked);
        o.addProperty("behind", behind);
        o.addProperty("dirty", dirty);
        o.addProperty("data", data);
        o.addProperty("permits_out", permitsOut);
        o.addProperty("in_flight", inFlight);
        return o;
    }
}
