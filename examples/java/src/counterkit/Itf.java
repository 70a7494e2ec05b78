package counterkit;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** ITF values (the Informal Trace Format) as Json gives them: sets, tuples, functions, integers. */
final class Itf {
    private Itf() {
    }

    static Map<String, Object> set(List<?> elements) {
        return Map.of("#set", elements);
    }

    @SuppressWarnings("unchecked")
    static List<Object> set(Object value) {
        if (value instanceof Map<?, ?> map && map.get("#set") instanceof List<?> elements) {
            return (List<Object>) elements;
        }
        throw new IllegalArgumentException("expected an ITF set, got " + Json.write(value));
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object value) {
        if (value instanceof List<?> list) {
            return (List<Object>) list;
        }
        if (value instanceof Map<?, ?> map && map.get("#tup") instanceof List<?> list) {
            return (List<Object>) list;
        }
        throw new IllegalArgumentException("expected an ITF sequence, got " + Json.write(value));
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> record(Object value) {
        if (value instanceof Map<?, ?> map && !map.containsKey("#map") && !map.containsKey("#set")) {
            return (Map<String, Object>) map;
        }
        throw new IllegalArgumentException("expected an ITF record, got " + Json.write(value));
    }

    /** A function with string keys: an ITF #map, or a plain object (tidemark writes both). */
    static Map<String, Object> function(Object value) {
        if (value instanceof Map<?, ?> map && map.get("#map") instanceof List<?> pairs) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Object pair : pairs) {
                List<Object> kv = list(pair);
                out.put(string(kv.get(0)), kv.get(1));
            }
            return out;
        }
        return record(value);
    }

    static long number(Object value) {
        if (value instanceof Long n) {
            return n;
        }
        if (value instanceof Map<?, ?> map && map.get("#bigint") instanceof String digits) {
            return Long.parseLong(digits);
        }
        throw new IllegalArgumentException("expected an integer, got " + Json.write(value));
    }

    static String string(Object value) {
        if (value instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException("expected a string, got " + Json.write(value));
    }
}
