package counterkit;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The driver: tidemark's driver protocol (docs/driver-protocol.md) over stdin and stdout, one JSON
 * object a line, for spec UpdateCounter. Usage: Driver [--bug NAME]; with --events, an event log instead
 * (EventLog).
 */
public final class Driver {
    private final Bug bug;
    private Partition partition;

    private Driver(Bug bug) {
        this.bug = bug;
    }

    public static void main(String[] args) throws Exception {
        Bug bug = Bug.NONE;
        Long events = null;
        long seed = 0;
        String constants = null;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 == args.length) {
                usage();
            }
            switch (args[i]) {
                case "--bug" -> bug = Bug.named(args[i + 1]);
                case "--events" -> events = Long.parseLong(args[i + 1]);
                case "--seed" -> seed = Long.parseLong(args[i + 1]);
                case "--constants" -> constants = args[i + 1];
                default -> usage();
            }
        }
        if (events != null) {
            if (constants == null) {
                usage();
            }
            EventLog.write(partition(Itf.record(Json.parse(constants)), bug), events, seed);
            return;
        }
        Driver driver = new Driver(bug);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Object answer;
            try {
                answer = driver.answer(Itf.record(Json.parse(line)));
            } catch (RuntimeException error) {
                answer = error(error);
            }
            out.write(Json.write(answer));
            out.write('\n');
            out.flush();
        }
    }

    private static void usage() {
        System.err.println("usage: run [--bug NAME] [--events STEPS --seed SEED --constants JSON]");
        System.exit(2);
    }

    /** The partition under the model's constants (ITF values, as in the init request). */
    private static Partition partition(Map<String, Object> constants, Bug bug) {
        List<String> copies = new ArrayList<>();
        for (Object c : Itf.set(constants.get("Copies"))) {
            copies.add(Itf.string(c));
        }
        copies.sort(null);
        List<Long> deltas = new ArrayList<>();
        for (Object d : Itf.set(constants.get("Deltas"))) {
            deltas.add(Itf.number(d));
        }
        deltas.sort(null);
        return new Partition(copies, Itf.string(constants.get("Primary")), Itf.number(constants.get("MaxCounter")),
                deltas, Itf.number(constants.get("MaxMissedUpdates")), bug);
    }

    private static Map<String, Object> answer(String type, String key, Object value) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", type);
        if (key != null) {
            answer.put(key, value);
        }
        return answer;
    }

    private static Map<String, Object> error(RuntimeException error) {
        return answer("error", "message", error.getClass().getSimpleName() + ": " + error.getMessage());
    }

    private Object answer(Map<String, Object> request) {
        String type = Itf.string(request.get("type"));
        if (type.equals("hello")) {
            Map<String, Object> hello = answer("hello", "protocol", 1L);
            hello.put("spec", "UpdateCounter");
            hello.put("implementation", "examples/java counterkit" + (bug == Bug.NONE ? "" : ", bug " + bug.label));
            hello.put("capabilities", List.of("load", "enabled", "batch"));
            return hello;
        }
        if (type.equals("batch")) {
            List<Object> answers = new ArrayList<>();
            for (Object each : Itf.list(request.get("requests"))) {
                try {
                    answers.add(answer(Itf.record(each)));
                } catch (RuntimeException error) {
                    answers.add(error(error));
                }
            }
            return answer("batch", "answers", answers);
        }
        if (type.equals("init")) {
            partition = partition(Itf.record(request.get("constants")), bug);
            return answer("state", "state", partition.itf());
        }
        if (partition == null) {
            throw new IllegalStateException("init comes first");
        }
        switch (type) {
            case "load":
                partition.load(Itf.record(request.get("state")));
                return answer("ok", null, null);
            case "step":
                try {
                    partition.step(Itf.record(request.get("action")));
                } catch (Partition.NotEnabled why) {
                    return answer("not_enabled", "reason", why.getMessage());
                }
                return answer("state", "state", partition.itf());
            case "enabled":
                return answer("enabled", "actions", partition.enabled());
            default:
                throw new IllegalArgumentException("no request " + type);
        }
    }
}
