package tidemark.ignite;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.ignite.cache.affinity.rendezvous.ClusterNodeAttributeAffinityBackupFilter;
import org.apache.ignite.cache.affinity.rendezvous.RendezvousAffinityFunction;
import org.apache.ignite.cluster.ClusterNode;
import org.apache.ignite.internal.IgniteNodeAttributes;
import org.apache.ignite.internal.processors.affinity.AffinityTopologyVersion;
import org.apache.ignite.internal.processors.affinity.GridAffinityFunctionContextImpl;
import org.apache.ignite.lang.IgniteProductVersion;
import org.apache.ignite.spi.discovery.DiscoveryMetricsProvider;
import org.apache.ignite.spi.discovery.tcp.internal.TcpDiscoveryNode;

/**
 * Ignite's own RendezvousAffinityFunction, no cluster: one JSON line per case set in, one answer out.
 *
 * In: {"partitions", "backups", "exclNeighbors", "filter": attribute names or null,
 *      "nodes": [{"id": consistent id, "uuidId": whether it is a UUID, "uuid": node id, "host": neighbour group or null, "attrs": {...}}],
 *      "keys": [{"t": "int"|"long"|"string"|"uuid", "v": value}]}.
 * Out: {"assignment": per partition the node indices, primary first; "parts": each key's partition}.
 */
final class Affinity {
    private static final DiscoveryMetricsProvider NO_METRICS = new DiscoveryMetricsProvider() {
        @Override public org.apache.ignite.cluster.ClusterMetrics metrics() {
            return null;
        }

        @Override public Map<Integer, org.apache.ignite.cache.CacheMetrics> cacheMetrics() {
            return Collections.emptyMap();
        }
    };

    private Affinity() {
    }

    static void serve(BufferedReader in, PrintStream out) throws IOException {
        IgniteProductVersion ver = IgniteProductVersion.fromString("2.18.0");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank())
                continue;
            JsonObject req = JsonParser.parseString(line).getAsJsonObject();
            JsonObject answer = new JsonObject();
            try {
                answer.add("result", answer(req, ver));
                answer.addProperty("ok", true);
            }
            catch (RuntimeException e) {
                answer.addProperty("ok", false);
                answer.addProperty("error", e.toString());
            }
            out.println(answer);
        }
    }

    private static JsonObject answer(JsonObject req, IgniteProductVersion ver) {
        int parts = req.get("partitions").getAsInt();
        int backups = req.get("backups").getAsInt();
        RendezvousAffinityFunction aff = new RendezvousAffinityFunction(Json.boolOr(req, "exclNeighbors", false), parts);
        List<String> filter = Json.strings(req, "filter");
        if (!filter.isEmpty())
            aff.setAffinityBackupFilter(new ClusterNodeAttributeAffinityBackupFilter(filter.toArray(new String[0])));
        List<ClusterNode> nodes = new ArrayList<>();
        Map<ClusterNode, Integer> index = new HashMap<>();
        for (JsonElement e : req.getAsJsonArray("nodes")) {
            JsonObject n = e.getAsJsonObject();
            UUID id = UUID.fromString(n.get("uuid").getAsString());
            String cid = n.get("id").getAsString();
            // A consistent id is a String or a UUID; their hash codes differ, and so does the placement.
            TcpDiscoveryNode node = new TcpDiscoveryNode(id, List.of("127.0.0.1"), List.of(), 0, NO_METRICS, ver,
                Json.boolOr(n, "uuidId", false) ? UUID.fromString(cid) : cid);
            Map<String, Object> attrs = new HashMap<>();
            if (n.has("attrs"))
                n.getAsJsonObject("attrs").entrySet().forEach(a -> attrs.put(a.getKey(), a.getValue().getAsString()));
            String host = Json.strOr(n, "host", null);
            attrs.put(IgniteNodeAttributes.ATTR_MACS, host != null ? "host:" + host : "node:" + id);
            node.setAttributes(attrs);
            index.put(node, nodes.size());
            nodes.add(node);
        }
        JsonObject res = new JsonObject();
        JsonArray assignment = new JsonArray();
        if (!nodes.isEmpty()) {
            List<List<ClusterNode>> owners = aff.assignPartitions(new GridAffinityFunctionContextImpl(nodes, null,
                null, new AffinityTopologyVersion(1, 0), backups));
            for (List<ClusterNode> p : owners) {
                JsonArray a = new JsonArray();
                p.forEach(n -> a.add(index.get(n)));
                assignment.add(a);
            }
        }
        res.add("assignment", assignment);
        JsonArray keyParts = new JsonArray();
        if (req.has("keys")) {
            for (JsonElement e : req.getAsJsonArray("keys")) {
                JsonObject k = e.getAsJsonObject();
                JsonElement v = k.get("v");
                Object key;
                switch (k.get("t").getAsString()) {
                    case "int": key = v.getAsInt(); break;
                    case "long": key = v.getAsLong(); break;
                    case "string": key = v.getAsString(); break;
                    case "uuid": key = UUID.fromString(v.getAsString()); break;
                    default: throw new IllegalArgumentException("key type " + k.get("t"));
                }
                keyParts.add(aff.partition(key));
            }
        }
        res.add("parts", keyParts);
        return res;
    }
}
