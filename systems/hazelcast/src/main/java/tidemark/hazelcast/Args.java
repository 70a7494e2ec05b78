package tidemark.hazelcast;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;

/** One command's fields: required ones throw IllegalArgumentException (the answer's kind "bad_input"). */
final class Args {
    private final JsonObject o;

    Args(JsonObject o) {
        this.o = o;
    }

    private JsonElement get(String key) {
        JsonElement e = o.get(key);
        return e == null || e.isJsonNull() ? null : e;
    }

    boolean has(String key) {
        return get(key) != null;
    }

    String str(String key) {
        JsonElement e = get(key);
        if (e == null)
            throw new IllegalArgumentException("missing field '" + key + "'");
        return e.getAsString();
    }

    String str(String key, String dflt) {
        return has(key) ? str(key) : dflt;
    }

    int integer(String key, int dflt) {
        return has(key) ? get(key).getAsInt() : dflt;
    }

    int integer(String key) {
        return Integer.parseInt(str(key));
    }

    /** An int field within [min, max]. */
    int bounded(String key, int dflt, int min, int max) {
        int v = integer(key, dflt);
        if (v < min || v > max)
            throw new IllegalArgumentException(key + " must be in " + min + ".." + max + ", got " + v);
        return v;
    }

    double fraction(String key, double dflt) {
        double v = has(key) ? get(key).getAsDouble() : dflt;
        if (!(v >= 0.0 && v <= 1.0))
            throw new IllegalArgumentException(key + " must be a fraction in 0..1, got " + v);
        return v;
    }

    long millis(String key, long dflt) {
        return has(key) ? get(key).getAsLong() : dflt;
    }

    boolean flag(String key, boolean dflt) {
        return has(key) ? get(key).getAsBoolean() : dflt;
    }

    List<String> strings(String key) {
        List<String> out = new ArrayList<>();
        JsonElement e = get(key);
        if (e != null && e.isJsonArray())
            e.getAsJsonArray().forEach(x -> out.add(x.getAsString()));
        return out;
    }

    List<Integer> ints(String key) {
        List<Integer> out = new ArrayList<>();
        JsonElement e = get(key);
        if (e != null && e.isJsonArray())
            e.getAsJsonArray().forEach(x -> out.add(x.getAsInt()));
        return out;
    }
}
