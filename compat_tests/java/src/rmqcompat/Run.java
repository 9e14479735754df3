package rmqcompat;

import org.apache.rocketmq.client.ClientConfig;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * What every command of {@link Scenario} shares: its key=value arguments, its deadline, the SIGTERM
 * flag, and its output, one JSON event per line on stdout (flushed per event; anything the clients
 * print goes to stderr). Commands use these through {@code import static rmqcompat.Run.*}.
 */
final class Run {
    static final int BIG_BODY_INLINE = 1000; // larger bodies are reported as length + SHA-1

    static PrintStream out;
    static Map<String, String> args;
    static long deadline; // System.nanoTime() after which waiting stops
    static final CountDownLatch STOP = new CountDownLatch(1); // SIGTERM: wind down early
    static final CountDownLatch FINISHED = new CountDownLatch(1); // clients shut down

    private Run() {
    }

    /** Events go to the real stdout; System.out (the clients' own printing) goes to stderr. */
    static void openOutput() {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
    }

    /**
     * Parses the arguments after the command, sets the deadline (timeout=, 60 s by default), starts
     * the hard watchdog at the deadline plus {@code graceMs}, and on SIGTERM lets the command wind
     * down and shut its client down (up to 15 s) before the JVM exits.
     */
    static void start(String[] argv, long graceMs) {
        args = parseArgs(argv);
        require("namesrv");
        double timeout = Double.parseDouble(args.getOrDefault("timeout", "60"));
        deadline = System.nanoTime() + (long) (timeout * 1e9);
        startWatchdog((long) (timeout * 1000) + graceMs);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            STOP.countDown();
            try {
                FINISHED.await(15, TimeUnit.SECONDS); // let the command shut its client down
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "scenario-stop"));
    }

    /** One command of a program, given its key=value arguments. */
    interface Command {
        void run(String name, Map<String, String> arguments) throws Exception;
    }

    /**
     * The whole {@code main} of the programs without a deadline of their own (FilterScenario,
     * RequestReplyScenario, TransactionScenario): events to stdout, {@code argv[0]} the command,
     * the rest key=value arguments; an exception becomes an "error" event and exit status 1.
     */
    static void main(String program, String[] argv, Command command) {
        openOutput();
        int code = 0;
        try {
            if (argv.length < 1) {
                throw new IllegalArgumentException("usage: " + program + " COMMAND namesrv=HOST:PORT [key=value ...]");
            }
            args = parseArgs(Arrays.copyOfRange(argv, 1, argv.length));
            command.run(argv[0], args);
        } catch (Throwable e) {
            error(e);
            code = 1;
        }
        finish();
        System.exit(code);
    }

    /** The command has shut its client down: flush the events and release the shutdown hook. */
    static void finish() {
        out.flush();
        FINISHED.countDown();
    }

    /**
     * With trace=true, waits 2 s before the client shuts down: its AsyncTraceDispatcher sends the
     * trace records in the background, and the 4.9.8 dispatcher's shutdown does not wait for them.
     */
    static void lingerForTraces() throws InterruptedException {
        if (boolArg("trace")) {
            Thread.sleep(2000);
        }
    }

    // ---------------------------------------------------------------- arguments and output

    static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + a);
            }
            m.put(a.substring(0, eq), a.substring(eq + 1));
        }
        return m;
    }

    static String require(String key) {
        String v = args.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("missing argument " + key + "=");
        }
        return v;
    }

    static int intArg(String key, int dflt) {
        String v = args.get(key);
        return v == null || v.isEmpty() ? dflt : Integer.parseInt(v);
    }

    static boolean boolArg(String key) {
        return Boolean.parseBoolean(args.getOrDefault(key, "false"));
    }

    /**
     * The client's namespace: namespace= calls ClientConfig.setNamespace (4.x and 5.x: every topic and
     * group name goes out as "ns%name"), namespace-v2= calls setNamespaceV2 (5.x only, by reflection so
     * that these sources compile against 4.9.8 too: the client adds the "nsd" and "ns" fields to every
     * request and wraps no name).
     */
    static void applyNamespace(ClientConfig config) throws Exception {
        if (args.containsKey("namespace")) {
            config.setNamespace(args.get("namespace"));
        }
        if (args.containsKey("namespace-v2")) {
            ClientConfig.class.getMethod("setNamespaceV2", String.class).invoke(config, args.get("namespace-v2"));
        }
    }

    static long remainingMs() {
        if (STOP.getCount() == 0) {
            return 0;
        }
        return Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
    }

    static boolean stopped() {
        return STOP.getCount() == 0;
    }

    static void startWatchdog(long ms) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                return;
            }
            Map<String, Object> ev = event("error");
            ev.put("error", "watchdog: still running " + ms + " ms after start (timeout + shutdown grace)");
            emit(ev);
            out.flush();
            Runtime.getRuntime().halt(3);
        }, "scenario-watchdog");
        t.setDaemon(true);
        t.start();
    }

    static Map<String, Object> event(String name) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", name);
        return m;
    }

    static synchronized void emit(Map<String, Object> ev) {
        StringBuilder sb = new StringBuilder(256);
        Json.append(sb, ev);
        out.println(sb);
        out.flush();
    }

    static void log(String s) {
        System.err.println("[scenario] " + s);
    }

    static void error(Throwable e) {
        Map<String, Object> ev = event("error");
        ev.put("error", describe(e));
        StringWriter sw = new StringWriter();
        e.printStackTrace(new PrintWriter(sw));
        ev.put("trace", sw.toString());
        emit(ev);
        e.printStackTrace();
    }

    static void error(String message) {
        Map<String, Object> ev = event("error");
        ev.put("error", message);
        emit(ev);
    }

    static String describe(Throwable e) {
        String s = e.getClass().getName() + ": " + e.getMessage();
        return s.length() > 2000 ? s.substring(0, 2000) : s;
    }

    static String sha1(byte[] data) throws Exception {
        byte[] d = MessageDigest.getInstance("SHA-1").digest(data);
        StringBuilder sb = new StringBuilder();
        for (byte b : d) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    static void putBody(Map<String, Object> ev, byte[] body) throws Exception {
        if (body == null) {
            ev.put("body", null);
        } else if (body.length > BIG_BODY_INLINE) {
            ev.put("bodyLen", body.length);
            ev.put("bodySha1", sha1(body));
        } else {
            ev.put("body", new String(body, StandardCharsets.UTF_8));
        }
    }
}
