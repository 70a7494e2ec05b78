package tidemark.ignite;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.ignite.IgniteLogger;
import org.jetbrains.annotations.Nullable;

/**
 * Ignite's log for every node of the harness: INFO and above go to one file (ignite.log in the work
 * directory, each line prefixed with its node) and to a bounded in-memory list that the "logs" command
 * searches, so a finding can quote the lines Ignite printed at each step.
 */
final class LogCapture {
    /** Lines kept in memory; older ones stay only in the file. */
    private static final int KEEP = 200_000;

    private final Writer file;
    private final List<String> lines = new ArrayList<>();
    private long dropped;

    LogCapture(Path file) throws IOException {
        this.file = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
    }

    synchronized void add(String node, String level, String category, String msg, @Nullable Throwable e) {
        StringBuilder line = new StringBuilder().append(node).append(' ').append(level).append(" [")
            .append(category).append("] ").append(msg);
        if (e != null) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            line.append('\n').append(trace);
        }
        String text = line.toString();
        if (lines.size() == KEEP) {
            lines.remove(0);
            dropped++;
        }
        lines.add(text);
        try {
            file.write(text);
            file.write('\n');
            file.flush();
        }
        catch (IOException ignored) {
            // The in-memory copy still has the line; a full disk must not stop the cluster.
        }
    }

    /** Line numbers are global (dropped lines count), so "since" stays valid across calls. */
    synchronized long size() {
        return dropped + lines.size();
    }

    /** Lines after `since` matching `pattern`, at most `limit` of them. */
    synchronized List<String> search(Pattern pattern, long since, int limit) {
        List<String> out = new ArrayList<>();
        for (int i = (int)Math.max(0, since - dropped); i < lines.size() && out.size() < limit; i++) {
            if (pattern.matcher(lines.get(i)).find())
                out.add(lines.get(i));
        }
        return out;
    }

    synchronized void close() {
        try {
            file.close();
        }
        catch (IOException ignored) {
            // Closing at exit: nothing left to do with the error.
        }
    }

    /** The logger of one node (and its categories). */
    IgniteLogger logger(String node) {
        return new NodeLogger(node, "root");
    }

    private final class NodeLogger implements IgniteLogger {
        private final String node;
        private final String category;

        NodeLogger(String node, String category) {
            this.node = node;
            this.category = category;
        }

        @Override public IgniteLogger getLogger(Object ctgr) {
            String name = ctgr instanceof Class ? ((Class<?>)ctgr).getSimpleName() : String.valueOf(ctgr);
            int dot = name.lastIndexOf('.');
            return new NodeLogger(node, dot >= 0 ? name.substring(dot + 1) : name);
        }

        @Override public void trace(String msg) {
            // Not kept: too much, and nothing the findings need.
        }

        @Override public void debug(String msg) {
            // Not kept, as trace.
        }

        @Override public void info(String msg) {
            add(node, "INFO", category, msg, null);
        }

        @Override public void warning(String msg, @Nullable Throwable e) {
            add(node, "WARN", category, msg, e);
        }

        @Override public void error(String msg, @Nullable Throwable e) {
            add(node, "ERROR", category, msg, e);
        }

        @Override public boolean isTraceEnabled() {
            return false;
        }

        @Override public boolean isDebugEnabled() {
            return false;
        }

        @Override public boolean isInfoEnabled() {
            return true;
        }

        @Override public boolean isQuiet() {
            return false;
        }

        @Override public @Nullable String fileName() {
            return null;
        }
    }
}
