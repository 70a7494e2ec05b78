package tidemark.hazelcast;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.hazelcast.cluster.Address;
import com.hazelcast.internal.nio.Packet;
import com.hazelcast.internal.serialization.InternalSerializationService;
import com.hazelcast.internal.server.OperationPacketFilter;
import com.hazelcast.internal.server.PacketFilter;
import com.hazelcast.internal.server.ServerConnectionManager;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import tidemark.hazelcast.Messages.Kind;

/**
 * Control of the replica-versioning messages between members, through Hazelcast's own firewalling network
 * (FirewallingServer): each member's outgoing operation packets pass its packet filter, which recognises the
 * controlled kinds (Messages.Kind) and applies the first matching rule - drop or delay a fraction of them, or
 * hold them until released or discarded - and logs every controlled message's fate (sent, dropped, held,
 * released, lost) in order, so a run can be replayed on tidemark's model with the same inputs.
 */
final class Traffic {
    /** A rule on messages of these kinds from `from` to `to` (null: any) in `partition` (-1: any). */
    record Rule(int id, Set<Kind> kinds, String from, String to, int partition, String action, double fraction,
        long minDelayMs, long maxDelayMs) {
        boolean matches(Kind kind, String sender, String target, int part) {
            return kinds.contains(kind) && (from == null || from.equals(sender)) && (to == null || to.equals(target))
                && (partition < 0 || partition == part);
        }
    }

    /** A held message: the packet as the sender's network would have written it. */
    record Held(int id, Kind kind, String from, String to, Packet packet, Address target, JsonObject detail) {
        JsonObject json() {
            JsonObject o = new JsonObject();
            o.addProperty("id", id);
            o.addProperty("kind", kind.json());
            o.addProperty("from", from);
            o.addProperty("to", to);
            detail.entrySet().forEach(e -> o.add(e.getKey(), e.getValue()));
            return o;
        }
    }

    private final List<Rule> rules = new ArrayList<>();
    private final Map<Integer, Held> held = new LinkedHashMap<>();
    private final List<JsonObject> log = new ArrayList<>();
    private final ScheduledExecutorService delays = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "tidemark-delays");
        t.setDaemon(true);
        return t;
    });
    private Random random = new Random(0);
    private int nextId;
    private boolean logging;

    synchronized void seed(long seed) {
        random = new Random(seed);
    }

    /** Whether every controlled message's fate is logged (off by default: a lab run sends many). */
    synchronized void logging(boolean on) {
        logging = on;
    }

    synchronized int addRule(Set<Kind> kinds, String from, String to, int partition, String action, double fraction,
        long minDelayMs, long maxDelayMs) {
        if (!List.of("hold", "drop", "delay").contains(action))
            throw new IllegalArgumentException("action must be hold, drop or delay, got " + action);
        if (action.equals("delay") && (minDelayMs < 1 || maxDelayMs < minDelayMs))
            throw new IllegalArgumentException("a delay needs 1 <= min_delay_ms <= max_delay_ms");
        Rule r = new Rule(++nextId, kinds.isEmpty() ? EnumSet.allOf(Kind.class) : EnumSet.copyOf(kinds), from, to,
            partition, action, fraction, minDelayMs, maxDelayMs);
        rules.add(r);
        return r.id();
    }

    synchronized boolean removeRule(int id) {
        return rules.removeIf(r -> r.id() == id);
    }

    synchronized void clearRules() {
        rules.clear();
    }

    /** The filter of one member's outgoing packets; `names` turns an address into a member name. */
    PacketFilter filterFor(String member, InternalSerializationService serialization,
        Function<Address, String> names, Function<String, ServerConnectionManager> network) {
        ThreadLocal<int[]> ids = new ThreadLocal<>();
        OperationPacketFilter header = new OperationPacketFilter(serialization) {
            @Override
            protected Action filterOperation(Address endpoint, int factory, int type) {
                ids.set(new int[] {factory, type});
                return Action.ALLOW;
            }
        };
        return (packet, target) -> {
            ids.remove();
            header.filter(packet, target);
            int[] found = ids.get();
            Kind kind = found == null || packet.isFlagRaised(Packet.FLAG_OP_RESPONSE | Packet.FLAG_OP_CONTROL) ? null
                : Messages.kind(found[0], found[1]);
            if (kind == null)
                return PacketFilter.Action.ALLOW;
            JsonObject detail = Messages.detail(kind, packet, serialization);
            return decide(kind, member, names.apply(target), packet, target, detail, network);
        };
    }

    private synchronized PacketFilter.Action decide(Kind kind, String from, String to, Packet packet, Address target,
        JsonObject detail, Function<String, ServerConnectionManager> network) {
        int partition = detail.has("partition") ? detail.get("partition").getAsInt() : packet.getPartitionId();
        Rule rule = rules.stream().filter(r -> r.matches(kind, from, to, partition)).findFirst().orElse(null);
        if (rule == null || random.nextDouble() >= rule.fraction()) {
            record("sent", kind, from, to, detail);
            return PacketFilter.Action.ALLOW;
        }
        switch (rule.action()) {
            case "drop":
                record("dropped", kind, from, to, detail);
                return PacketFilter.Action.DROP;
            case "delay": {
                long span = rule.maxDelayMs() - rule.minDelayMs();
                long delay = rule.minDelayMs() + (span == 0 ? 0 : (long) (random.nextDouble() * (span + 1)));
                delays.schedule(() -> {
                    synchronized (this) {
                        record("sent", kind, from, to, detail);
                        network.apply(from).transmit(packet, target);
                    }
                }, delay, TimeUnit.MILLISECONDS);
                return PacketFilter.Action.DROP;
            }
            default: {
                Held h = new Held(++nextId, kind, from, to, packet, target, detail);
                held.put(h.id(), h);
                record("held", kind, from, to, detail).addProperty("id", h.id());
                return PacketFilter.Action.DROP;
            }
        }
    }

    private JsonObject record(String event, Kind kind, String from, String to, JsonObject detail) {
        JsonObject e = new JsonObject();
        if (!logging)
            return e;
        e.addProperty("seq", log.size());
        e.addProperty("event", event);
        e.addProperty("kind", kind.json());
        e.addProperty("from", from);
        e.addProperty("to", to);
        detail.entrySet().forEach(x -> e.add(x.getKey(), x.getValue()));
        log.add(e);
        return e;
    }

    synchronized List<Held> held() {
        return new ArrayList<>(held.values());
    }

    synchronized JsonArray heldJson() {
        JsonArray a = new JsonArray();
        held.values().forEach(h -> a.add(h.json()));
        return a;
    }

    /** Takes held messages out, in the order given; an unknown id is bad input (nothing taken then). */
    synchronized List<Held> take(List<Integer> ids, String event) {
        for (int id : ids)
            if (!held.containsKey(id))
                throw new IllegalArgumentException("no held message " + id);
        List<Held> out = new ArrayList<>();
        for (int id : ids) {
            Held h = held.remove(id);
            record(event, h.kind(), h.from(), h.to(), h.detail()).addProperty("id", id);
            out.add(h);
        }
        return out;
    }

    /** A member is gone: the messages held from or to it are lost with it. */
    synchronized void forget(String member) {
        List<Integer> gone = new ArrayList<>();
        held.values().stream().filter(h -> h.from().equals(member) || h.to().equals(member))
            .forEach(h -> gone.add(h.id()));
        take(gone, "lost");
    }

    /** Log entries from `since` on (sequence numbers), and the next mark. */
    synchronized JsonObject logJson(int since) {
        JsonObject o = new JsonObject();
        JsonArray a = new JsonArray();
        for (int i = Math.max(0, since); i < log.size(); i++)
            a.add(log.get(i));
        o.add("events", a);
        o.addProperty("mark", log.size());
        return o;
    }

    /** No rules, nothing held, an empty log: as new. */
    synchronized void reset() {
        rules.clear();
        held.clear();
        log.clear();
        nextId = 0;
    }

    void shutdown() {
        delays.shutdownNow();
    }
}
