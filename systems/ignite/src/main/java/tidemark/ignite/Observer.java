package tidemark.ignite;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.lang.reflect.Field;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.events.DiscoveryEvent;
import org.apache.ignite.events.EventType;
import org.apache.ignite.internal.events.DiscoveryCustomEvent;
import org.apache.ignite.internal.processors.cache.CacheAffinityChangeMessage;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.GridDhtPartitionsExchangeFuture;
import org.apache.ignite.internal.processors.cache.persistence.GridCacheDatabaseSharedManager;
import org.apache.ignite.internal.processors.cache.persistence.checkpoint.CheckpointEntry;
import org.apache.ignite.internal.processors.cache.persistence.checkpoint.CheckpointHistory;
import org.apache.ignite.internal.processors.cache.persistence.partstate.GroupPartitionId;
import org.apache.ignite.internal.processors.cache.transactions.IgniteInternalTx;
import org.apache.ignite.internal.processors.cache.transactions.IgniteTxManager;
import org.apache.ignite.internal.processors.cache.version.GridCacheVersion;
import org.apache.ignite.internal.processors.cluster.ChangeGlobalStateMessage;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.management.cache.CacheIdleVerifyCommandArg;
import org.apache.ignite.internal.management.cache.CacheIdleVerifyDumpCommandArg;
import org.apache.ignite.internal.management.cache.IdleVerifyDumpTask;
import org.apache.ignite.internal.management.cache.IdleVerifyResult;
import org.apache.ignite.internal.management.cache.IdleVerifyTask;
import org.apache.ignite.internal.processors.affinity.AffinityTopologyVersion;
import org.apache.ignite.internal.processors.cache.CacheGroupContext;
import org.apache.ignite.internal.processors.cache.CacheObjectContext;
import org.apache.ignite.internal.processors.cache.PartitionUpdateCounter;
import org.apache.ignite.internal.processors.cache.distributed.dht.topology.GridDhtLocalPartition;
import org.apache.ignite.internal.processors.cache.persistence.CacheDataRow;
import org.apache.ignite.internal.processors.cache.verify.PartitionHashRecord;
import org.apache.ignite.internal.management.cache.PartitionKey;
import org.apache.ignite.internal.util.lang.GridCursor;
import org.apache.ignite.internal.util.typedef.internal.CU;
import org.apache.ignite.internal.visor.VisorTaskArgument;
import org.apache.ignite.internal.visor.VisorTaskResult;

/** What the harness reports of a node: its view of the topology and each local partition (internal API). */
final class Observer {
    private Observer() {
    }

    static String version(AffinityTopologyVersion v) {
        return v.topologyVersion() + "." + v.minorTopologyVersion();
    }

    static CacheGroupContext group(IgniteEx ig) {
        return ig.context().cache().cacheGroup(CU.cacheId(ClusterSetup.CACHE));
    }

    /** One server: topology versions (ready and latest), the events of pending exchanges, coordinator,
     * partitions with counters, states and entries, the harness's transactions, the WAL history. */
    static JsonObject node(IgniteEx ig, boolean entries, MessageControl control) throws Exception {
        JsonObject o = new JsonObject();
        var exchange = ig.context().cache().context().exchange();
        o.addProperty("topVer", version(exchange.readyAffinityVersion()));
        o.addProperty("discoVer", version(ig.context().discovery().topologyVersionEx()));
        // A starting server has no exchange future before its join exchange begins.
        o.addProperty("exchangeDone", exchange.lastTopologyFuture() != null && exchange.lastTopologyFuture().isDone());
        o.add("pending", pending(exchange.exchangeFutures()));
        o.add("txs", txs(ig, control));
        ClusterNode crd = ig.context().discovery().discoCache().oldestAliveServerNode();
        o.addProperty("coordinator", crd == null ? null : String.valueOf(crd.consistentId()));
        o.addProperty("order", ig.localNode().order());
        o.addProperty("active", ig.context().state().clusterState().active());
        CacheGroupContext grp = group(ig);
        if (grp == null)
            return o;
        JsonArray lost = new JsonArray();
        grp.topology().lostPartitions().stream().sorted().forEach(lost::add);
        o.add("lost", lost);
        o.addProperty("rebalanceDone", rebalanceDone(grp));
        JsonObject parts = new JsonObject();
        CacheObjectContext coctx = grp.cacheObjectContext();
        for (GridDhtLocalPartition part : grp.topology().localPartitions()) {
            JsonObject p = new JsonObject();
            p.addProperty("state", part.state().name());
            // A restarted server opens a partition's store lazily: updateCounter() opens it if its file exists
            // (as Ignite's metrics do), so its counter restored from the WAL can be read while it joins.
            part.dataStore().updateCounter();
            PartitionUpdateCounter cntr = part.dataStore().partUpdateCounter();
            if (cntr != null) {
                p.addProperty("lwm", cntr.get());
                p.addProperty("hwm", cntr.reserved());
                p.addProperty("highest", cntr.highestAppliedCounter());
                p.addProperty("initial", cntr.initial());
                JsonArray gaps = new JsonArray();
                for (long[] item : cntr) {
                    JsonArray g = new JsonArray();
                    g.add(item[0]);
                    g.add(item[1]);
                    gaps.add(g);
                }
                p.add("gaps", gaps);
                p.addProperty("comparable", String.valueOf(cntr.comparableState()));
            }
            p.addProperty("size", part.fullSize());
            if (entries)
                p.add("entries", entries(part, coctx));
            parts.add(String.valueOf(part.id()), p);
        }
        o.add("partitions", parts);
        o.add("assignment", assignment(grp, exchange.readyAffinityVersion()));
        o.add("history", history(ig, grp));
        return o;
    }

    /** Whether the group's rebalancing is done. An inactive cluster keeps its cache groups (their partitions
     * restored from the WAL, readable) but starts no preloader: nothing rebalances there. A preloader that is
     * created but not started yet (a reactivation in progress) has no demander and answers with an NPE: it
     * rebalances nothing yet either. */
    static boolean rebalanceDone(CacheGroupContext grp) {
        if (grp.preloader() == null)
            return true;
        try {
            return grp.preloader().rebalanceFuture().isDone();
        }
        catch (NullPointerException notStarted) {
            return true;
        }
    }

    /** The kinds of the discovery events the unfinished exchanges handle (merged ones included). */
    static JsonArray pending(List<GridDhtPartitionsExchangeFuture> futs) {
        java.util.Set<String> kinds = new java.util.TreeSet<>();
        for (GridDhtPartitionsExchangeFuture fut : futs) {
            if (fut.isDone())
                continue;
            List<DiscoveryEvent> evts = new ArrayList<>();
            if (fut.firstEvent() != null)
                evts.add(fut.firstEvent());
            if (fut.context() != null && fut.context().events() != null)
                evts.addAll(fut.context().events().events());
            for (DiscoveryEvent e : evts)
                kinds.add(kind(e));
        }
        JsonArray a = new JsonArray();
        kinds.forEach(a::add);
        return a;
    }

    private static String kind(DiscoveryEvent e) {
        switch (e.type()) {
            case EventType.EVT_NODE_JOINED:
                return "joined";
            case EventType.EVT_NODE_LEFT:
            case EventType.EVT_NODE_FAILED:
                return "left";
            default:
                if (e instanceof DiscoveryCustomEvent) {
                    Object msg = ((DiscoveryCustomEvent)e).customMessage();
                    if (msg instanceof CacheAffinityChangeMessage)
                        return "affinity";
                    if (msg instanceof ChangeGlobalStateMessage) {
                        // setBaselineTopology forces a baseline change; an activation (an operator's, or
                        // Ignite's own once the whole baseline is back after an outage) does not.
                        ChangeGlobalStateMessage change = (ChangeGlobalStateMessage)msg;
                        if (change.forceChangeBaselineTopology())
                            return "baseline";
                        return change.state().active() ? "activate" : "deactivate";
                    }
                    return msg.getClass().getSimpleName();
                }
                return "event " + e.type();
        }
    }

    /** The harness's transactions on this node: active ones by their state, finished ones committed or rolled
     * back (Ignite's completed-versions history, by the transaction's near and DHT xid versions). */
    static JsonObject txs(IgniteEx ig, MessageControl control) {
        IgniteTxManager tm = ig.context().cache().context().tm();
        JsonObject o = new JsonObject();
        for (IgniteInternalTx tx : tm.activeTransactions()) {
            String name = control.txName(tx.nearXidVersion());
            if (name != null && !ig.localNode().isClient())
                o.addProperty(name, tx.state().name());
        }
        for (Map.Entry<String, List<GridCacheVersion>> e : control.versionsByName().entrySet()) {
            if (o.has(e.getKey()))
                continue;
            for (GridCacheVersion v : e.getValue()) {
                Boolean committed = tm.peekCompletedVersionsHistory(v);
                if (committed != null) {
                    o.addProperty(e.getKey(), committed ? "COMMITTED" : "ROLLED_BACK");
                    break;
                }
            }
        }
        return o;
    }

    /** Per partition, the update counter of the earliest checkpoint the WAL history keeps for it (Ignite
     * supplies a historical rebalance only from a counter at or above it); partitions without one left out. */
    static JsonObject history(IgniteEx ig, CacheGroupContext grp) {
        JsonObject o = new JsonObject();
        if (!(ig.context().cache().context().database() instanceof GridCacheDatabaseSharedManager))
            return o;
        GridCacheDatabaseSharedManager db = (GridCacheDatabaseSharedManager)ig.context().cache().context().database();
        try {
            Field f = CheckpointHistory.class.getDeclaredField("earliestCp");
            f.setAccessible(true);
            @SuppressWarnings("unchecked")
            Map<GroupPartitionId, CheckpointEntry> earliest =
                new java.util.HashMap<>((Map<GroupPartitionId, CheckpointEntry>)f.get(db.checkpointHistory()));
            var wal = ig.context().cache().context().wal();
            for (Map.Entry<GroupPartitionId, CheckpointEntry> e : earliest.entrySet()) {
                if (e.getKey().getGroupId() != grp.groupId())
                    continue;
                Long cntr = e.getValue().partitionCounter(wal, grp.groupId(), e.getKey().getPartitionId());
                if (cntr != null)
                    o.addProperty(String.valueOf(e.getKey().getPartitionId()), cntr);
            }
        }
        catch (Exception e) {
            o.addProperty("error", String.valueOf(e));
        }
        return o;
    }

    private static JsonObject entries(GridDhtLocalPartition part, CacheObjectContext coctx) throws Exception {
        Map<String, String> sorted = new TreeMap<>();
        GridCursor<? extends CacheDataRow> cur = part.dataStore().cursor();
        while (cur.next()) {
            CacheDataRow row = cur.get();
            Object key = row.key().value(coctx, false);
            Object val = row.value() == null ? null : row.value().value(coctx, false);
            sorted.put(String.valueOf(key), val == null ? null : String.valueOf(val));
        }
        JsonObject o = new JsonObject();
        sorted.forEach(o::addProperty);
        return o;
    }

    /**
     * Every local copy as a tidemark audit snapshot has it (docs/audit.md): state, primary flag, the counter's
     * comparable text, and each entry's key, value bytes as stored (what idle_verify hashes) and version.
     */
    static JsonArray snapshot(IgniteEx ig) throws Exception {
        JsonArray copies = new JsonArray();
        CacheGroupContext grp = group(ig);
        if (grp == null)
            return copies;
        CacheObjectContext coctx = grp.cacheObjectContext();
        AffinityTopologyVersion ver = grp.topology().readyTopologyVersion();
        for (GridDhtLocalPartition part : grp.topology().currentLocalPartitions()) {
            JsonObject c = new JsonObject();
            c.addProperty("partition", part.id());
            c.addProperty("state", part.state().name());
            c.addProperty("primary", part.primary(ver));
            PartitionUpdateCounter cntr = part.dataStore().partUpdateCounter();
            c.addProperty("comparable", cntr == null ? "0" : String.valueOf(cntr.comparableState()));
            JsonArray entries = new JsonArray();
            GridCursor<? extends CacheDataRow> cur = part.dataStore().cursor();
            while (cur.next()) {
                CacheDataRow row = cur.get();
                Object key = row.key().value(coctx, false);
                JsonArray e = new JsonArray();
                e.add(String.valueOf(key));
                e.add(java.util.Base64.getEncoder().encodeToString(row.value().valueBytes(coctx)));
                e.add(row.version().topologyVersion());
                e.add(row.version().nodeOrder());
                e.add(row.version().order());
                e.add(row.expireTime());
                entries.add(e);
            }
            c.add("entries", entries);
            copies.add(c);
        }
        return copies;
    }

    /** control.sh --cache idle_verify --dump [--skip-zeros]: the dump file's path and text. */
    static JsonObject idleVerifyDump(IgniteEx ig, boolean skipZeros) throws Exception {
        CacheIdleVerifyDumpCommandArg arg = new CacheIdleVerifyDumpCommandArg();
        arg.caches(new String[] {ClusterSetup.CACHE});
        arg.skipZeros(skipZeros);
        VisorTaskResult<String> answer = ig.compute(ig.cluster().forLocal()).execute(IdleVerifyDumpTask.class,
            new VisorTaskArgument<>(ig.localNode().id(), arg, false));
        JsonObject o = new JsonObject();
        o.addProperty("path", answer.result());
        o.addProperty("text", java.nio.file.Files.readString(java.nio.file.Path.of(answer.result())));
        return o;
    }

    /** Per partition, the owners (primary first) this node's ready affinity gives. */
    static JsonObject assignment(CacheGroupContext grp, AffinityTopologyVersion ver) {
        JsonObject o = new JsonObject();
        List<List<ClusterNode>> owners;
        try {
            owners = grp.affinity().readyAssignments(ver);
        }
        catch (RuntimeException | AssertionError e) {
            return o; // a joining server has no assignment for its ready version yet
        }
        for (int p = 0; owners != null && p < owners.size(); p++) {
            JsonArray a = new JsonArray();
            owners.get(p).forEach(n -> a.add(String.valueOf(n.consistentId())));
            o.add(String.valueOf(p), a);
        }
        return o;
    }

    /** control.sh --cache idle_verify, run as its task on `ig` over the whole cluster. */
    static JsonObject idleVerify(IgniteEx ig) throws Exception {
        CacheIdleVerifyCommandArg arg = new CacheIdleVerifyCommandArg();
        arg.caches(new String[] {ClusterSetup.CACHE});
        // The task waits for exchanges in progress: bounded, so a held exchange cannot hang the harness.
        VisorTaskResult<IdleVerifyResult> answer = ig.compute(ig.cluster().forLocal()).withTimeout(20_000)
            .execute(IdleVerifyTask.class, new VisorTaskArgument<>(ig.localNode().id(), arg, false));
        IdleVerifyResult res = answer.result();
        JsonObject o = new JsonObject();
        o.addProperty("hasConflicts", res.hasConflicts());
        o.add("counterConflicts", records(res.counterConflicts()));
        o.add("hashConflicts", records(res.hashConflicts()));
        o.add("moving", records(res.movingPartitions()));
        o.add("lost", records(res.lostPartitions()));
        JsonArray errors = new JsonArray();
        res.exceptions().forEach((n, e) -> errors.add(n.consistentId() + ": " + e));
        o.add("exceptions", errors);
        List<String> text = new ArrayList<>();
        res.print(text::add, true);
        o.addProperty("text", String.join("", text));
        return o;
    }

    private static JsonObject records(Map<PartitionKey, List<PartitionHashRecord>> map) {
        JsonObject o = new JsonObject();
        map.forEach((key, recs) -> o.add(String.valueOf(key.partitionId()), records(recs)));
        return o;
    }

    private static JsonArray records(Collection<PartitionHashRecord> recs) {
        JsonArray a = new JsonArray();
        for (PartitionHashRecord r : recs) {
            JsonObject o = new JsonObject();
            o.addProperty("node", String.valueOf(r.consistentId()));
            o.addProperty("primary", r.isPrimary());
            o.addProperty("updateCounter", String.valueOf(r.updateCounter()));
            o.addProperty("size", r.size());
            o.addProperty("hash", r.partitionHash());
            o.addProperty("verHash", r.partitionVersionsHash());
            o.addProperty("state", String.valueOf(r.partitionState()));
            a.add(o);
        }
        return a;
    }
}
