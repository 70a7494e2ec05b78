package tidemark.ignite;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.List;

/** Reading the fields of a command, with defaults. */
final class Json {
    private Json() {
    }

    static int intOr(JsonObject o, String key, int dflt) {
        return o.has(key) && !o.get(key).isJsonNull() ? o.get(key).getAsInt() : dflt;
    }

    static long longOr(JsonObject o, String key, long dflt) {
        return o.has(key) && !o.get(key).isJsonNull() ? o.get(key).getAsLong() : dflt;
    }

    static boolean boolOr(JsonObject o, String key, boolean dflt) {
        return o.has(key) && !o.get(key).isJsonNull() ? o.get(key).getAsBoolean() : dflt;
    }

    static String strOr(JsonObject o, String key, String dflt) {
        return o.has(key) && !o.get(key).isJsonNull() ? o.get(key).getAsString() : dflt;
    }

    static String str(JsonObject o, String key) {
        if (!o.has(key) || o.get(key).isJsonNull())
            throw new IllegalArgumentException("missing field '" + key + "'");
        return o.get(key).getAsString();
    }

    static List<String> strings(JsonObject o, String key) {
        List<String> out = new ArrayList<>();
        if (o.has(key) && o.get(key).isJsonArray()) {
            for (JsonElement e : o.getAsJsonArray(key))
                out.add(e.getAsString());
        }
        return out;
    }

    static List<Integer> ints(JsonObject o, String key) {
        List<Integer> out = new ArrayList<>();
        if (o.has(key) && o.get(key).isJsonArray()) {
            for (JsonElement e : o.getAsJsonArray(key))
                out.add(e.getAsInt());
        }
        return out;
    }
}
