package tidemark.ignite;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.ignite.IgniteCache;
import org.apache.ignite.internal.IgniteEx;
import org.apache.ignite.internal.IgniteVersionUtils;
import org.apache.ignite.transactions.Transaction;
import org.apache.ignite.transactions.TransactionConcurrency;
import org.apache.ignite.transactions.TransactionIsolation;

/**
 * tidemark's harness for a real Ignite 2.x cluster: N servers and one client ("c1") in this JVM, driven by
 * JSON lines on stdin, one answer line per command on stdout ({"id", "ok", "result"} or {"id", "ok": false,
 * "kind", "error"}). Ignite's own output goes to stderr and to ignite.log in the work directory.
 * At end of input every node is stopped and the JVM exits; the caller removes the work directory.
 * Command reference: docs/real-ignite.md.
 */
public final class Harness {
    private final Path workDir;
    private final MessageControl control = new MessageControl();
    private final Txs txs = new Txs(control);
    private final LogCapture logs;
    private final Nodes nodes;

    private Harness(Path workDir) throws Exception {
        this.workDir = workDir;
        this.logs = new LogCapture(workDir.resolve("ignite.log"));
        this.nodes = new Nodes(control, logs, txs);
    }

    public static void main(String[] args) throws Exception {
        // The protocol owns stdout; everything else printed (Ignite's banner, stray prints) goes to stderr.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length >= 1 && args[0].equals("--affinity")) {
            Affinity.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), out);
            return;
        }
        if (args.length != 2 || !args[0].equals("--work-dir")) {
            System.err.println("usage: Harness --work-dir DIR | --affinity");
            System.exit(2);
        }
        for (String[] p : new String[][] {{"IGNITE_QUIET", "true"}, {"IGNITE_UPDATE_NOTIFIER", "false"},
            {"IGNITE_NO_ASCII", "true"}, {"IGNITE_PERFORMANCE_SUGGESTIONS_DISABLED", "true"},
            {"java.net.preferIPv4Stack", "true"}})
            System.setProperty(p[0], p[1]);
        Path dir = Paths.get(args[1]);
        Files.createDirectories(dir);
        Harness h = new Harness(dir);
        JsonObject hello = new JsonObject();
        hello.addProperty("ready", true);
        hello.addProperty("ignite", IgniteVersionUtils.VER_STR);
        hello.addProperty("java", System.getProperty("java.version"));
        out.println(hello);
        h.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), out);
    }

    private void serve(BufferedReader in, PrintStream out) {
        Gson gson = new com.google.gson.GsonBuilder().disableHtmlEscaping().serializeNulls().create();
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank())
                    continue;
                JsonObject answer = new JsonObject();
                JsonElement id = null;
                try {
                    JsonObject cmd = JsonParser.parseString(line).getAsJsonObject();
                    id = cmd.get("id");
                    answer.add("id", id);
                    String name = Json.str(cmd, "cmd");
                    if (name.equals("shutdown")) {
                        answer.addProperty("ok", true);
                        out.println(gson.toJson(answer));
                        break;
                    }
                    answer.add("result", run(name, cmd));
                    answer.addProperty("ok", true);
                }
                catch (IllegalArgumentException e) {
                    fail(answer, id, "bad_input", e);
                }
                catch (Throwable e) {
                    fail(answer, id, "ignite", e);
                }
                out.println(gson.toJson(answer));
            }
        }
        catch (Exception e) {
            e.printStackTrace();
        }
        finally {
            // End of input (the caller exited or closed the pipe): no node outlives the harness.
            nodes.stopAll();
            txs.shutdown();
            logs.close();
            Runtime.getRuntime().halt(0);
        }
    }

    private static void fail(JsonObject answer, JsonElement id, String kind, Throwable e) {
        answer.add("id", id);
        answer.addProperty("ok", false);
        answer.addProperty("kind", kind);
        answer.addProperty("error", e.getClass().getSimpleName() + ": " + e.getMessage());
    }

    private JsonElement run(String name, JsonObject c) throws Exception {
        long wait = Json.longOr(c, "wait_ms", 10_000);
        switch (name) {
            case "start":
                return nodes.start(new ClusterSetup(c, workDir));
            case "put":
                return put(writes(c));
            case "tx_begin":
                return txs.begin(nodes.client(), Json.str(c, "tx"), writes(c), wait);
            case "tx_prepare":
                return txs.prepare(Json.str(c, "tx"), wait);
            case "tx_commit":
                return txs.commit(Json.str(c, "tx"), wait);
            case "tx_rollback":
                return txs.rollback(Json.str(c, "tx"), wait);
            case "tx_wait":
                return txs.await(Json.str(c, "tx"), wait);
            case "txs":
                return txs.all();
            case "block": {
                String action = Json.strOr(c, "action", "hold");
                if (!action.equals("hold") && !action.equals("drop"))
                    throw new IllegalArgumentException("action must be hold or drop, got " + action);
                int rule = control.addRule(Json.str(c, "type"), Json.strOr(c, "from", null),
                    Json.strOr(c, "to", null), Json.strOr(c, "tx", null), action.equals("drop"));
                JsonObject o = new JsonObject();
                o.addProperty("rule", rule);
                return o;
            }
            case "unblock": {
                JsonObject o = new JsonObject();
                if (c.has("rule"))
                    o.addProperty("removed", control.removeRule(c.get("rule").getAsInt()));
                else
                    control.clearRules();
                return o;
            }
            case "held":
                return control.heldJson();
            case "await_held": {
                JsonObject o = new JsonObject();
                o.addProperty("found", control.awaitHeld(Json.str(c, "type"), Json.strOr(c, "from", null),
                    Json.strOr(c, "to", null), Json.strOr(c, "tx", null), Json.intOr(c, "count", 1), wait));
                o.add("held", control.heldJson());
                return o;
            }
            case "release": {
                List<Integer> ids = c.has("ids") ? Json.ints(c, "ids") : control.matching(Json.strOr(c, "type", null),
                    Json.strOr(c, "from", null), Json.strOr(c, "to", null), Json.strOr(c, "tx", null));
                JsonArray sent = new JsonArray();
                for (MessageControl.Held h : control.take(ids)) {
                    h.deliver().run();
                    sent.add(h.json());
                }
                return sent;
            }
            case "reset":
                return nodes.reset();
            case "truncate_wal":
                return nodes.truncateWal(Json.str(c, "node"), Json.boolOr(c, "dry", false));
            case "sent":
                return control.sentJson(Json.longOr(c, "since", 0), Json.strOr(c, "type", null),
                    Json.strOr(c, "from", null), Json.strOr(c, "to", null), Json.strOr(c, "tx", null));
            case "await_sent": {
                JsonObject o = new JsonObject();
                o.addProperty("found", control.awaitSent(Json.longOr(c, "since", 0), Json.str(c, "type"),
                    Json.strOr(c, "from", null), Json.strOr(c, "to", null), Json.strOr(c, "tx", null),
                    Json.intOr(c, "count", 1), wait));
                return o;
            }
            case "demands":
                return control.demandsJson();
            case "dropped":
                return control.droppedJson();
            case "fail":
                return nodes.fail(Json.str(c, "node"));
            case "restart":
            case "join":
                return nodes.launch(Json.str(c, "node"), name.equals("join"), wait);
            case "await_start":
                return nodes.awaitStart(Json.str(c, "node"), wait);
            case "baseline":
                return nodes.baseline(c.has("nodes") ? Json.strings(c, "nodes") : null, wait);
            case "checkpoint":
                return nodes.checkpoint(c.has("nodes") ? Json.strings(c, "nodes") : null);
            case "reset_lost":
                nodes.client().resetLostPartitions(List.of(ClusterSetup.CACHE));
                return nodes.awaitExchange(Json.longOr(c, "timeout_ms", 30_000));
            case "outage":
                return nodes.outage();
            case "activate":
                return nodes.activate(wait);
            case "await_exchange":
                return nodes.awaitExchange(Json.longOr(c, "timeout_ms", 30_000));
            case "await_client":
                return nodes.awaitClient(Json.longOr(c, "timeout_ms", 30_000));
            case "await_rebalance":
                return nodes.awaitRebalance(Json.longOr(c, "timeout_ms", 60_000));
            case "observe":
                return nodes.observe(Json.boolOr(c, "entries", true), Json.boolOr(c, "idle_verify", false));
            case "idle_verify":
                return nodes.idleVerify();
            case "idle_verify_dump":
                return nodes.idleVerifyDump(Json.boolOr(c, "skip_zeros", false));
            case "snapshot":
                return nodes.snapshot();
            case "logs": {
                JsonObject o = new JsonObject();
                JsonArray lines = new JsonArray();
                logs.search(Pattern.compile(Json.strOr(c, "pattern", ".")), Json.longOr(c, "since", 0),
                    Json.intOr(c, "limit", 200)).forEach(lines::add);
                o.add("lines", lines);
                o.addProperty("mark", logs.size());
                return o;
            }
            default:
                throw new IllegalArgumentException("unknown command '" + name + "'");
        }
    }

    private static Map<Integer, String> writes(JsonObject c) {
        if (!c.has("writes") || !c.get("writes").isJsonObject())
            throw new IllegalArgumentException("missing object 'writes' (key -> value)");
        Map<Integer, String> w = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> e : c.getAsJsonObject("writes").entrySet()) {
            try {
                w.put(Integer.parseInt(e.getKey()), e.getValue().getAsString());
            }
            catch (NumberFormatException ex) {
                throw new IllegalArgumentException("writes: key '" + e.getKey() + "' is not an int");
            }
        }
        return w;
    }

    /** One committed pessimistic transaction writing these keys (setting data up, no message control). */
    private JsonObject put(Map<Integer, String> writes) {
        IgniteEx client = nodes.client();
        IgniteCache<Integer, String> cache = client.cache(ClusterSetup.CACHE);
        try (Transaction tx = client.transactions().txStart(TransactionConcurrency.PESSIMISTIC,
            TransactionIsolation.REPEATABLE_READ)) {
            cache.putAll(writes);
            tx.commit();
        }
        JsonObject o = new JsonObject();
        o.addProperty("written", writes.size());
        return o;
    }
}
