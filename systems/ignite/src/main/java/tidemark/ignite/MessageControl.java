package tidemark.ignite;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.ignite.internal.processors.cache.GridCacheGroupIdMessage;
import org.apache.ignite.internal.processors.cache.distributed.GridCacheTxRecoveryRequest;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedBaseMessage;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedLockRequest;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedTxFinishRequest;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedTxFinishResponse;
import org.apache.ignite.internal.processors.cache.distributed.GridDistributedTxPrepareRequest;
import org.apache.ignite.internal.processors.cache.distributed.dht.GridDhtTxPrepareRequest;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.GridDhtPartitionsAbstractMessage;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.CachePartitionPartialCountersMap;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.GridDhtPartitionDemandMessage;
import org.apache.ignite.internal.processors.cache.distributed.dht.preloader.IgniteDhtDemandedPartitionsMap;
import org.apache.ignite.internal.processors.cache.distributed.near.GridNearTxPrepareResponse;
import org.apache.ignite.internal.processors.cache.version.GridCacheVersion;
import org.apache.ignite.internal.util.typedef.internal.CU;
import org.apache.ignite.plugin.extensions.communication.Message;

/**
 * The message rules of the harness, shared by every node's {@link ControlledSpi} (which applies them to the
 * messages a node receives).
 *
 * A rule matches a message by its class's simple name (e.g. GridDhtTxFinishRequest), sender and receiver
 * (consistent ids; null matches any) and optionally the harness's transaction name; its action is "hold"
 * (kept until released, in the order the caller chooses) or "drop" (never delivered). Every demand message
 * with partitions is also recorded: that is how the harness observes each rebalancing's mode and range.
 *
 * Only the messages of the protocols tidemark models are subject to rules and logged ({@link #relevant}):
 * transaction messages, the single and full messages of an exchange (not the partition-map refreshes sent
 * outside exchanges), and demand/supply messages of the tidemark cache (not of Ignite's system caches).
 * Every relevant message sent is logged with a sequence number ("sent"), so a caller can wait for the
 * message that shows a step has been taken (a backup's answer, a primary's request to its backups).
 */
final class MessageControl {
    /** A rule: which messages, and what to do with them. */
    record Rule(int id, String type, String from, String to, String tx, boolean drop) {
        boolean matches(String type0, String from0, String to0, String tx0) {
            return type.equals(type0) && (from == null || from.equals(from0)) && (to == null || to.equals(to0))
                && (tx == null || tx.equals(tx0));
        }
    }

    /** A held message: delivering it later hands it to the receiving node's Ignite. */
    record Held(int id, String type, String from, String to, String tx, JsonObject detail, Runnable deliver) {
        JsonObject json() {
            JsonObject o = new JsonObject();
            o.addProperty("id", id);
            o.addProperty("type", type);
            o.addProperty("from", from);
            o.addProperty("to", to);
            if (tx != null)
                o.addProperty("tx", tx);
            o.add("detail", detail);
            return o;
        }
    }

    private final List<Rule> rules = new ArrayList<>();
    private final List<Held> held = new ArrayList<>();
    private final List<JsonObject> demands = new ArrayList<>();
    private final List<JsonObject> dropped = new ArrayList<>();
    /** Relevant messages as sent (or held), oldest first; the first `sentBase` are forgotten. */
    private final List<JsonObject> sent = new ArrayList<>();
    private long sentBase;
    private static final int SENT_KEEP = 20_000;
    /** The harness's transaction names by near xid version, and DHT xid -> near xid from prepare requests. */
    private final Map<GridCacheVersion, String> txNames = new ConcurrentHashMap<>();
    private final Map<GridCacheVersion, GridCacheVersion> dhtToNear = new ConcurrentHashMap<>();
    private final Map<UUID, String> nodeNames = new ConcurrentHashMap<>();
    private int nextRule = 1;
    private int nextHeld = 1;

    void nameTx(GridCacheVersion nearXid, String name) {
        txNames.put(nearXid, name);
    }

    synchronized int addRule(String type, String from, String to, String tx, boolean drop) {
        Rule rule = new Rule(nextRule++, type, from, to, tx, drop);
        rules.add(rule);
        return rule.id();
    }

    synchronized boolean removeRule(int id) {
        return rules.removeIf(r -> r.id() == id);
    }

    synchronized void clearRules() {
        rules.clear();
    }

    /** The messages rules apply to and the log records (see the class comment). */
    static boolean relevant(Message msg) {
        if (msg instanceof GridDhtPartitionsAbstractMessage)
            return ((GridDhtPartitionsAbstractMessage)msg).exchangeId() != null;
        if (msg instanceof GridCacheGroupIdMessage)
            return ((GridCacheGroupIdMessage)msg).groupId() == CU.cacheId(ClusterSetup.CACHE);
        return msg instanceof GridDistributedBaseMessage || msg instanceof GridDistributedTxFinishResponse;
    }

    /** The consistent id of a node id, remembered from the first time it is resolved (a node that left can
     * no longer be looked up, and its messages may still be held). */
    String nodeName(UUID id, java.util.function.Supplier<String> resolve) {
        String name = nodeNames.get(id);
        if (name == null) {
            name = resolve.get();
            if (name == null)
                return id.toString();
            nodeNames.put(id, name);
        }
        return name;
    }

    /** True: deliver now. False: the message was held or dropped. */
    boolean intercept(String from, String to, Message msg, Runnable deliver) {
        if (!relevant(msg))
            return true;
        String type = msg.getClass().getSimpleName();
        String tx = txOf(msg);
        if (tx == null && !(msg instanceof GridDhtPartitionsAbstractMessage || msg instanceof GridCacheGroupIdMessage))
            return true; // a transaction of Ignite's own, or of a put that sets data up
        synchronized (this) {
            if (msg instanceof GridDhtPartitionDemandMessage) {
                GridDhtPartitionDemandMessage demand = (GridDhtPartitionDemandMessage)msg;
                if (!demand.partitions().isEmpty())
                    demands.add(demandJson(from, to, demand));
            }
            JsonObject entry = new JsonObject();
            entry.addProperty("seq", sentBase + sent.size() + 1);
            entry.addProperty("type", type);
            entry.addProperty("from", from);
            entry.addProperty("to", to);
            if (tx != null)
                entry.addProperty("tx", tx);
            entry.add("detail", detail(msg));
            sent.add(entry);
            if (sent.size() > SENT_KEEP) {
                sent.subList(0, SENT_KEEP / 2).clear();
                sentBase += SENT_KEEP / 2;
            }
            notifyAll();
            for (Rule rule : rules) {
                if (!rule.matches(type, from, to, tx))
                    continue;
                JsonObject detail = detail(msg);
                if (rule.drop()) {
                    dropped.add(new Held(0, type, from, to, tx, detail, deliver).json());
                    return false;
                }
                held.add(new Held(nextHeld++, type, from, to, tx, detail, deliver));
                notifyAll();
                return false;
            }
        }
        return true;
    }

    /** The harness's name of the transaction a message belongs to: messages carry the near xid version or
     * the primary's DHT xid version, which the DHT prepare request and the near prepare response map back. */
    private String txOf(Message msg) {
        GridCacheVersion ver = null;
        if (msg instanceof GridDhtTxPrepareRequest) {
            GridDhtTxPrepareRequest req = (GridDhtTxPrepareRequest)msg;
            dhtToNear.put(req.version(), req.nearXidVersion());
            ver = req.nearXidVersion();
        }
        else if (msg instanceof GridNearTxPrepareResponse) {
            GridNearTxPrepareResponse res = (GridNearTxPrepareResponse)msg;
            if (res.dhtVersion() != null)
                dhtToNear.put(res.dhtVersion(), res.version());
            ver = res.version();
        }
        else if (msg instanceof GridDistributedLockRequest)
            ver = ((GridDistributedLockRequest)msg).nearXidVersion();
        else if (msg instanceof GridCacheTxRecoveryRequest)
            ver = ((GridCacheTxRecoveryRequest)msg).nearXidVersion();
        else if (msg instanceof GridDistributedTxFinishResponse)
            ver = ((GridDistributedTxFinishResponse)msg).xid();
        else if (msg instanceof GridDistributedBaseMessage)
            ver = ((GridDistributedBaseMessage)msg).version();
        return ver == null ? null : txNames.get(dhtToNear.getOrDefault(ver, ver));
    }

    /** The harness's transaction name for a near or DHT xid version, or null. */
    String txName(GridCacheVersion ver) {
        return ver == null ? null : txNames.get(dhtToNear.getOrDefault(ver, ver));
    }

    /** Every named transaction's xid versions: its near one and the DHT ones seen in messages. */
    Map<String, List<GridCacheVersion>> versionsByName() {
        Map<String, List<GridCacheVersion>> out = new java.util.TreeMap<>();
        txNames.forEach((near, name) -> out.computeIfAbsent(name, n -> new ArrayList<>()).add(near));
        dhtToNear.forEach((dht, near) -> {
            String name = txNames.get(near);
            if (name != null)
                out.get(name).add(dht);
        });
        return out;
    }

    private static JsonObject detail(Message msg) {
        JsonObject o = new JsonObject();
        if (msg instanceof GridDistributedTxFinishRequest)
            o.addProperty("commit", ((GridDistributedTxFinishRequest)msg).commit());
        if (msg instanceof GridDistributedTxPrepareRequest)
            o.addProperty("onePhase", ((GridDistributedTxPrepareRequest)msg).onePhaseCommit());
        if (msg instanceof GridDhtPartitionsAbstractMessage)
            o.addProperty("exchange", Observer.version(((GridDhtPartitionsAbstractMessage)msg).exchangeId().topologyVersion()));
        return o;
    }

    /** The relevant messages sent after sequence number `since` matching (type, from, to, tx); and the mark. */
    synchronized JsonObject sentJson(long since, String type, String from, String to, String tx) {
        JsonArray a = new JsonArray();
        for (JsonObject e : sent) {
            if (e.get("seq").getAsLong() > since && matchesEntry(e, type, from, to, tx))
                a.add(e);
        }
        JsonObject o = new JsonObject();
        o.add("messages", a);
        o.addProperty("mark", sentBase + sent.size());
        return o;
    }

    private static boolean matchesEntry(JsonObject e, String type, String from, String to, String tx) {
        return (type == null || type.equals(e.get("type").getAsString()))
            && (from == null || from.equals(e.get("from").getAsString()))
            && (to == null || to.equals(e.get("to").getAsString()))
            && (tx == null || (e.has("tx") && tx.equals(e.get("tx").getAsString())));
    }

    /** Waits until `count` messages matching (type, from, to, tx) were sent after `since`; false on timeout. */
    synchronized boolean awaitSent(long since, String type, String from, String to, String tx, int count,
        long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (sentJson(since, type, from, to, tx).getAsJsonArray("messages").size() < count) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0)
                return false;
            wait(left);
        }
        return true;
    }

    /** Forgets every rule, held message, record and transaction name (a new cluster starts). */
    synchronized void reset() {
        rules.clear();
        held.clear();
        demands.clear();
        dropped.clear();
        sentBase += sent.size();
        sent.clear();
        txNames.clear();
        dhtToNear.clear();
        nodeNames.clear();
    }

    private static JsonObject demandJson(String from, String to, GridDhtPartitionDemandMessage msg) {
        JsonObject o = new JsonObject();
        o.addProperty("demander", from);
        o.addProperty("supplier", to);
        o.addProperty("topVer", Observer.version(msg.topologyVersion()));
        IgniteDhtDemandedPartitionsMap parts = msg.partitions();
        JsonArray hist = new JsonArray();
        CachePartitionPartialCountersMap map = parts.historicalMap();
        for (int i = 0; i < map.size(); i++) {
            JsonObject h = new JsonObject();
            h.addProperty("part", map.partitionAt(i));
            h.addProperty("from", map.initialUpdateCounterAt(i));
            h.addProperty("to", map.updateCounterAt(i));
            hist.add(h);
        }
        JsonArray full = new JsonArray();
        parts.fullSet().stream().sorted().forEach(full::add);
        o.add("historical", hist);
        o.add("full", full);
        return o;
    }

    synchronized JsonArray heldJson() {
        JsonArray a = new JsonArray();
        held.forEach(h -> a.add(h.json()));
        return a;
    }

    synchronized JsonArray demandsJson() {
        JsonArray a = new JsonArray();
        demands.forEach(a::add);
        return a;
    }

    synchronized JsonArray droppedJson() {
        JsonArray a = new JsonArray();
        dropped.forEach(a::add);
        return a;
    }

    /** Waits until `count` held messages match (type, from, to, tx); false on timeout. */
    synchronized boolean awaitHeld(String type, String from, String to, String tx, int count, long timeoutMs)
        throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Rule probe = new Rule(0, type, from, to, tx, false);
        while (held.stream().filter(h -> probe.matches(h.type(), h.from(), h.to(), h.tx())).count() < count) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0)
                return false;
            wait(left);
        }
        return true;
    }

    /** Removes the held messages with these ids, in this order, and returns them (to send outside the lock). */
    synchronized List<Held> take(List<Integer> ids) {
        List<Held> out = new ArrayList<>();
        for (int id : ids) {
            Iterator<Held> it = held.iterator();
            boolean found = false;
            while (it.hasNext()) {
                Held h = it.next();
                if (h.id() == id) {
                    out.add(h);
                    it.remove();
                    found = true;
                    break;
                }
            }
            if (!found)
                throw new IllegalArgumentException("no held message with id " + id);
        }
        return out;
    }

    /** The ids of held messages matching (type, from, to, tx), oldest first (null fields match any). */
    synchronized List<Integer> matching(String type, String from, String to, String tx) {
        List<Integer> ids = new ArrayList<>();
        for (Held h : held) {
            if ((type == null || type.equals(h.type())) && (from == null || from.equals(h.from()))
                && (to == null || to.equals(h.to())) && (tx == null || tx.equals(h.tx())))
                ids.add(h.id());
        }
        return ids;
    }

    /** Forgets held messages to a stopped node: they are lost with it (those it sent still arrive). */
    synchronized int forget(String node) {
        int before = held.size();
        held.removeIf(h -> h.to().equals(node));
        return before - held.size();
    }
}
