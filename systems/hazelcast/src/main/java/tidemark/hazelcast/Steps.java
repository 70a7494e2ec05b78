package tidemark.hazelcast;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.internal.partition.InternalPartition;
import com.hazelcast.internal.partition.NonFragmentedServiceNamespace;
import com.hazelcast.internal.partition.impl.TidemarkAccess;
import com.hazelcast.internal.services.ServiceNamespace;
import com.hazelcast.map.impl.MapService;
import com.hazelcast.spi.impl.PartitionSpecificRunnable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import tidemark.hazelcast.Messages.Kind;

/**
 * The steps the harness takes on the members: puts (one, or a whole table's worth), destroying a map, an
 * anti-entropy round now, and the delivery, failure or loss of held messages - each returning once its effect
 * is in place on the members (see Members.barrier).
 */
final class Steps {
    private final Members members;
    private final Traffic traffic;
    private int puts; // the values written so far: put n writes n

    Steps(Members members, Traffic traffic) {
        this.members = members;
        this.traffic = traffic;
    }

    static ServiceNamespace namespace(String ns) {
        return ns.equals("internal") ? NonFragmentedServiceNamespace.INSTANCE : MapService.getObjectNamespace(ns);
    }

    private void checkNamespace(String ns) {
        if (!ns.equals("internal") && !members.setup.maps().contains(ns))
            throw new IllegalArgumentException("unknown namespace '" + ns + "' (internal, " + members.setup.maps() + ")");
    }

    void reset() {
        puts = 0;
    }

    /** Starts the put on the owner of the key's partition (as a local invocation there). */
    private CompletionStage<?> submit(String owner, String ns, int key, int value, int partition) {
        HazelcastInstance hz = members.member(owner);
        if (ns.equals("internal"))
            return Members.engine(hz).getOperationService()
                .invokeOnPartition(InternalService.NAME, new InternalService.Put(key, value), partition);
        return hz.<Integer, Integer>getMap(ns).submitToKey(key, new Ops.SetValue(value));
    }

    /** One put; it returns once the owner applied it and handed its backups to the network. */
    JsonObject put(String ns, int key, Integer value) {
        checkNamespace(ns);
        int v = value != null ? value : puts + 1;
        puts = Math.max(puts, v);
        int partition = members.partitionOf(key);
        String owner = members.owner(partition);
        submit(owner, ns, key, v, partition);
        Members.onPartition(members.member(owner), partition, () -> null);
        JsonObject o = new JsonObject();
        o.addProperty("partition", partition);
        o.addProperty("owner", owner);
        o.addProperty("value", v);
        return o;
    }

    /**
     * `perPartition` puts to every namespace of every partition (distinct keys of that partition), each from its
     * owner, all in flight at once; returns once all completed (a dropped sync backup completes at the backup
     * timeout). The puts in order: partition, ns, key, value.
     */
    JsonArray fill(int perPartition, List<String> namespaces) {
        namespaces.forEach(this::checkNamespace);
        int count = members.setup.partitions();
        List<List<Integer>> keys = new ArrayList<>();
        for (int p = 0; p < count; p++)
            keys.add(new ArrayList<>());
        for (int k = 0; keys.stream().anyMatch(l -> l.size() < perPartition); k++) {
            List<Integer> l = keys.get(members.partitionOf(k));
            if (l.size() < perPartition)
                l.add(k);
        }
        JsonArray out = new JsonArray();
        List<CompletableFuture<?>> pending = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            String owner = members.owner(p);
            for (String ns : namespaces)
                for (int key : keys.get(p)) {
                    int v = ++puts;
                    pending.add(submit(owner, ns, key, v, p).toCompletableFuture());
                    JsonObject put = new JsonObject();
                    put.addProperty("partition", p);
                    put.addProperty("ns", ns);
                    put.addProperty("key", key);
                    put.addProperty("value", v);
                    out.add(put);
                }
        }
        try {
            CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);
        }
        catch (Exception e) {
            throw new IllegalStateException("the puts did not complete: " + e, e);
        }
        return out;
    }

    JsonObject destroy(String ns) {
        if (ns.equals("internal") || !members.setup.maps().contains(ns))
            throw new IllegalArgumentException("only a map can be destroyed: " + members.setup.maps());
        members.alive.values().iterator().next().getMap(ns).destroy();
        return members.table();
    }

    /**
     * The owner of each partition runs its anti-entropy task now (PartitionPrimaryReplicaAntiEntropyTask). That
     * task does nothing while the partition is migrating on its owner, and an offloaded sync request sets that
     * flag while it prepares its replication: a round asked for just after a step that made a replica ask for
     * a sync would be skipped or not by a race. So the round runs once the flag is clear, checked and run in one
     * go on the partition thread (no sync can set the flag in between); `waited_ms` says how long that took.
     */
    JsonObject antiEntropy(List<Integer> partitions) {
        List<Integer> which = partitions;
        if (which.isEmpty()) {
            which = new ArrayList<>();
            for (int p = 0; p < members.setup.partitions(); p++)
                which.add(p);
        }
        long started = System.nanoTime();
        int deferred = 0;
        for (int p : which) {
            HazelcastInstance owner = members.member(members.owner(p));
            PartitionSpecificRunnable task = TidemarkAccess.antiEntropy(Members.engine(owner), p);
            InternalPartition partition = Members.partitions(owner).getPartition(p, false);
            int[] tries = {0};
            Members.await(() -> {
                tries[0]++;
                return Members.onPartition(owner, p, () -> {
                    boolean free = !partition.isMigrating();
                    if (free)
                        task.run();
                    return free;
                });
            }, 30_000, "partition " + p + " to stop migrating on its owner");
            deferred += tries[0] > 1 ? 1 : 0;
        }
        JsonObject o = new JsonObject();
        o.addProperty("partitions", which.size());
        o.addProperty("deferred", deferred);
        o.addProperty("waited_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        return o;
    }

    /** Delivers held messages in the order given (or makes their backups fail on the receiver), each settled. */
    JsonArray release(List<Integer> ids, boolean fail) {
        JsonArray out = new JsonArray();
        for (Traffic.Held h : traffic.take(ids, fail ? "failed" : "released")) {
            int before = traffic.held().stream().mapToInt(Traffic.Held::id).max().orElse(0);
            if (fail)
                Ops.FAILING.add(h.to());
            try {
                members.network(h.from()).transmit(h.packet(), h.target());
                if (h.kind() == Kind.SYNC_REQUEST)
                    awaitAnswer(h, before);
                else
                    members.barrier(h.from(), h.to(), h.detail().get("partition").getAsInt());
            }
            finally {
                Ops.FAILING.remove(h.to());
            }
            out.add(h.json());
        }
        return out;
    }

    /**
     * The offloaded sync request runs on the owner's executor, not its partition thread: it is settled when each
     * namespace it asked for has an answer held (response or retry) or is no longer in flight on the requester.
     */
    private void awaitAnswer(Traffic.Held request, int heldBefore) {
        int partition = request.detail().get("partition").getAsInt();
        int replica = request.detail().get("replica").getAsInt();
        Set<String> asked = new HashSet<>();
        for (JsonElement e : request.detail().getAsJsonArray("namespaces"))
            asked.add(e.getAsString());
        Members.await(() -> {
            Set<String> answered = new HashSet<>();
            for (Traffic.Held h : traffic.held()) {
                if (h.id() <= heldBefore || !h.from().equals(request.to()) || !h.to().equals(request.from()))
                    continue;
                if (h.kind() == Kind.SYNC_RESPONSE)
                    answered.add(h.detail().get("ns").getAsString());
                if (h.kind() == Kind.SYNC_RETRY)
                    h.detail().getAsJsonArray("namespaces").forEach(x -> answered.add(x.getAsString()));
            }
            if (!members.isAlive(request.from()))
                return true;
            Set<String> waiting = new HashSet<>();
            TidemarkAccess.syncsInFlight(Members.partitions(members.member(request.from())).getReplicaManager())
                .stream().filter(s -> s.partition() == partition && s.replica() == replica)
                .forEach(s -> waiting.add(Messages.name(s.namespace())));
            return asked.stream().allMatch(ns -> answered.contains(ns) || !waiting.contains(ns));
        }, 15_000, "the answer to " + request.json());
    }

    JsonArray discard(List<Integer> ids) {
        JsonArray out = new JsonArray();
        traffic.take(ids, "dropped").forEach(h -> out.add(h.json()));
        return out;
    }

    /** A sync request times out on its member: what ReplicaSyncTimeoutProcessor does (request cleared, permit back). */
    JsonObject syncTimeout(String member, int partition, String ns, int replica) {
        checkNamespace(ns);
        Members.partitions(members.member(member)).getReplicaManager()
            .clearReplicaSyncRequest(partition, namespace(ns), replica);
        return members.table();
    }
}
