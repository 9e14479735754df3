package rmqspring;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The application's output: one JSON object per line on the real stdout (Spring's and the client's
 * logging goes to stderr), and a count of the events each listener printed, so the scenario knows
 * when everything it expects has arrived.
 */
final class Events {
    private static final PrintStream OUT =
        new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
    private static final Map<String, AtomicInteger> COUNTS = new ConcurrentHashMap<>();

    private Events() {
    }

    /** Prints {"event": name, k1: v1, ...}; values are strings, numbers or booleans. */
    static synchronized void emit(String name, Object... pairs) {
        StringBuilder sb = new StringBuilder("{\"event\":").append(quote(name));
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            sb.append(',').append(quote(String.valueOf(pairs[i]))).append(':');
            Object v = pairs[i + 1];
            sb.append(v instanceof Number || v instanceof Boolean ? String.valueOf(v) : quote(String.valueOf(v)));
        }
        OUT.println(sb.append('}'));
        COUNTS.computeIfAbsent(name + "/" + (pairs.length > 1 ? pairs[1] : ""), k -> new AtomicInteger()).incrementAndGet();
    }

    /** How many events named {@code name} had {@code first} as the value of their first pair. */
    static int count(String name, String first) {
        AtomicInteger n = COUNTS.get(name + "/" + first);
        return n == null ? 0 : n.get();
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
