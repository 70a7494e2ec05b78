package counterkit;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A random run of the partition that logs what a real grid logs: one JSON event a line, naming the
 * operation, its arguments and result, and only the counter value the node printed (its LWM after an
 * update, its HWM after a reserve). Pending ranges, the outcomes and the durable counters stay unlogged,
 * and so does WAL replay (a node does not log each record it replays): `tidemark validate --mapping`
 * lets TLC fill them in. Usage: run --events STEPS --seed SEED --constants JSON [--bug NAME].
 */
final class EventLog {
    private EventLog() {
    }

    static void write(Partition partition, long steps, long seed) throws IOException {
        Random random = new Random(seed);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (long i = 0; i < steps; i++) {
            List<Object> enabled = partition.enabled();
            if (enabled.isEmpty()) {
                break;
            }
            // An operation first, then its arguments: else restarts (enabled on every copy) crowd out the rest.
            List<Object> names = enabled.stream().map(s -> Itf.record(s).get("name")).distinct().toList();
            Object name = names.get(random.nextInt(names.size()));
            List<Object> those = enabled.stream().filter(s -> Itf.record(s).get("name").equals(name)).toList();
            try {
                partition.step(Itf.record(those.get(random.nextInt(those.size()))));
            } catch (Partition.NotEnabled impossible) {
                throw new IllegalStateException("an enabled step was refused: " + impossible.getMessage());
            }
            Map<String, Object> event = event(partition);
            if (event != null) {
                out.write(Json.write(event));
                out.write('\n');
            }
        }
        out.flush();
    }

    /** The line the last step logs, or null for a step that logs nothing. */
    private static Map<String, Object> event(Partition partition) {
        Map<String, Object> action = Itf.record(partition.action);
        String name = Itf.string(action.get("name"));
        Map<String, Object> event = new LinkedHashMap<>();
        switch (name) {
            case "Reserve", "Commit", "Rollback", "Drop", "Restart" -> {
                String node = Itf.string(action.get("copy"));
                event.put("event", name.toLowerCase());
                event.put("node", node);
                if (!name.equals("Restart")) {
                    event.put("start", action.get("start"));
                    event.put("delta", action.get("delta"));
                }
                if (action.containsKey("result")) {
                    event.put("result", action.get("result"));
                }
                Counter counter = partition.counters.get(node);
                if (name.equals("Reserve")) {
                    event.put("hwm", counter.hwm);
                } else if (!name.equals("Drop")) {
                    event.put("lwm", counter.lwm);
                }
            }
            case "Exchange", "JoinExchange" -> {
                event.put("event", name.equals("Exchange") ? "exchange" : "join-exchange");
                event.put("primary", action.get("primary"));
                event.put("lwm", action.get("lwm"));
            }
            default -> {
                return null; // Replay: not logged
            }
        }
        return event;
    }
}
