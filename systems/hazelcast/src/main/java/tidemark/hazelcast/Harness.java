package tidemark.hazelcast;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.hazelcast.instance.BuildInfoProvider;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import tidemark.hazelcast.Messages.Kind;

/**
 * tidemark's harness for real Hazelcast 5.x members: up to 7 members (more as they join) in this JVM on
 * loopback, driven by JSON lines on stdin, one answer line per command on stdout ({"id", "ok", "result"} or
 * {"id", "ok": false, "kind": "bad_input" | "hazelcast", "error"}); the first line is {"ready", "hazelcast",
 * "java"}. Hazelcast's log (WARNING and up) goes to stderr. At end of input every member is terminated and the
 * JVM exits. Commands: docs/real-hazelcast.md.
 */
public final class Harness {
    private final Traffic traffic = new Traffic();
    private final Members members = new Members(traffic);
    private final Steps steps = new Steps(members, traffic);
    private final Observer observer = new Observer(members);

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err); // the protocol owns stdout
        System.setProperty("hazelcast.logging.type", "jdk");
        System.setProperty("java.net.preferIPv4Stack", "true");
        Logger root = Logger.getLogger("");
        root.setLevel(Level.WARNING);
        for (Handler h : root.getHandlers())
            h.setLevel(Level.WARNING);
        JsonObject hello = new JsonObject();
        hello.addProperty("ready", true);
        hello.addProperty("hazelcast", BuildInfoProvider.getBuildInfo().getVersion());
        hello.addProperty("java", System.getProperty("java.version"));
        out.println(hello);
        new Harness().serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), out);
    }

    private void serve(BufferedReader in, PrintStream out) {
        Gson gson = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank())
                    continue;
                JsonObject answer = new JsonObject();
                try {
                    JsonObject cmd = JsonParser.parseString(line).getAsJsonObject();
                    answer.add("id", cmd.get("id"));
                    answer.add("result", run(new Args(cmd)));
                    answer.addProperty("ok", true);
                }
                catch (IllegalArgumentException e) {
                    failed(answer, "bad_input", e);
                }
                catch (Throwable e) {
                    failed(answer, "hazelcast", e);
                }
                out.println(gson.toJson(answer));
            }
        }
        catch (Exception e) {
            e.printStackTrace();
        }
        finally {
            members.reset(); // end of input: no member outlives the harness
            traffic.shutdown();
            Runtime.getRuntime().halt(0);
        }
    }

    private static void failed(JsonObject answer, String kind, Throwable e) {
        answer.addProperty("ok", false);
        answer.addProperty("kind", kind);
        answer.addProperty("error", e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    private JsonElement run(Args a) {
        String cmd = a.str("cmd");
        if (!cmd.equals("start") && !cmd.equals("reset") && members.setup == null)
            throw new IllegalArgumentException("start the cluster first");
        switch (cmd) {
            case "reset": {
                members.reset();
                traffic.reset();
                steps.reset();
                Ops.FAILING.clear();
                return new JsonObject();
            }
            case "start":
                traffic.seed(a.integer("seed", 0));
                traffic.logging(a.flag("log", false));
                return members.start(Members.Setup.of(a), a.strings("members"));
            case "join":
                return members.launch(a.str("member"));
            case "kill":
                return members.kill(a.strings("members"));
            case "migrate":
                return members.migrate();
            case "put":
                return steps.put(a.str("ns"), a.integer("key"), a.has("value") ? a.integer("value") : null);
            case "fill":
                return steps.fill(a.bounded("per_partition", 1, 1, 1000),
                    a.has("namespaces") ? a.strings("namespaces") : members.setup.maps());
            case "destroy":
                return steps.destroy(a.str("ns"));
            case "anti_entropy":
                return steps.antiEntropy(a.ints("partitions"));
            case "rule": {
                Set<Kind> kinds = new HashSet<>();
                a.strings("kinds").forEach(k -> kinds.add(Kind.parse(k)));
                JsonObject o = new JsonObject();
                o.addProperty("rule", traffic.addRule(kinds, a.str("from", null), a.str("to", null),
                    a.integer("partition", -1), a.str("action"), a.fraction("fraction", 1.0),
                    a.millis("min_delay_ms", 0), a.millis("max_delay_ms", 0)));
                return o;
            }
            case "unrule": {
                JsonObject o = new JsonObject();
                if (a.has("rule"))
                    o.addProperty("removed", traffic.removeRule(a.integer("rule", 0)));
                else
                    traffic.clearRules();
                return o;
            }
            case "held":
                return traffic.heldJson();
            case "release":
                return steps.release(a.ints("ids"), a.flag("fail", false));
            case "discard":
                return steps.discard(a.ints("ids"));
            case "sync_timeout":
                return steps.syncTimeout(a.str("member"), a.integer("partition", 0), a.str("ns"), a.integer("replica"));
            case "observe":
                return observer.observe(a.ints("partitions"), a.flag("entries", true), traffic);
            case "convergence":
                return observer.convergence();
            case "log":
                return traffic.logJson(a.integer("since", 0));
            case "keys": {
                com.google.gson.JsonArray keys = new com.google.gson.JsonArray();
                members.keys(a.integer("partition"), a.bounded("count", 1, 1, 10_000)).forEach(keys::add);
                return keys;
            }
            default:
                throw new IllegalArgumentException("unknown command '" + cmd + "'");
        }
    }
}
