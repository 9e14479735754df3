package rmqbench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Our load driver for RocketMQ 5 gRPC endpoints, on the unmodified rocketmq-client-java 5.0.8 (the
 * client compat_tests/java/grpc5 resolves), plaintext. It prints what {@code Bench} prints (SECOND
 * lines, {@code MARK start}, {@code MARK end}, {@code RESULT {json}}, WARN and ERROR lines), so
 * bench/side_by_side measures it the same way. Modes:
 *
 * <pre>
 *   send    --endpoint HOST:PORT --topic T [--threads 16] [--size 1024] [--duration S] [--warmup S]
 *           [--warmup-msgs N] [--inflight N] [--fifo true]
 *   receive --endpoint HOST:PORT --topic T --group G --count N [--threads 4] [--batch 32]
 *           [--duration S] [--warmup S] [--warmup-msgs N] [--idle-timeout S]
 *   push    --endpoint HOST:PORT --topic T --group G --count N [--warmup-msgs N] [--idle-timeout S]
 * </pre>
 *
 * <p>send: N threads share one Producer and send 1 KiB NORMAL messages synchronously, after one
 * unmeasured priming send (route query, telemetry settings, connection); with {@code --inflight N}
 * one thread keeps N sendAsync calls in flight instead (a semaphore of N permits). receive: one
 * SimpleConsumer, N threads each calling receive(batch, 30 s invisible) and acknowledging every
 * message (ackAsync, joined before the next receive); the warm-up starts at the first message, and
 * the measured phase ends after the duration or when N messages were acknowledged, whichever comes
 * first. push: one PushConsumer (the client's defaults: 20 consumption threads) answers SUCCESS for
 * every message; the first {@code --warmup-msgs} consumed are the warm-up, the measured phase ends
 * when N were consumed (the RT recorded is born-to-consumed, the age of the backlog).
 *
 * <p>The warm-up of send and receive lasts {@code --warmup} seconds and at least {@code --warmup-msgs}
 * messages (a JVM server compiles its hot paths over the first few thousand), but no longer than
 * {@link #WARMUP_MAX_S}; a warm-up cut short prints a WARN line. With {@code --fifo true} each send
 * thread sends FIFO messages of its own message group (the topic must be a FIFO topic).
 */
public final class GrpcBench {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration INVISIBLE = Duration.ofSeconds(30);
    private static final Duration AWAIT = Duration.ofSeconds(2); // SimpleConsumer long polling
    private static final int MAX_WARNINGS = 5; // failures printed (WARN lines) per run
    private static final Duration PUSH_CLOSE_WAIT = Duration.ofSeconds(3);
    static final double WARMUP_MAX_S = 120; // a warm-up stops here even short of its messages

    private GrpcBench() {
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 1) {
            throw new IllegalArgumentException("usage: GrpcBench send|receive|push --key value ...");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --key, got " + argv[i]);
            }
            opts.put(argv[i].substring(2), argv[i + 1]);
        }
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(opts.getOrDefault("endpoint", "127.0.0.1:8081"))
            .enableSsl(false)
            .setRequestTimeout(REQUEST_TIMEOUT)
            .build();
        switch (argv[0]) {
            case "send":
                send(configuration, opts);
                break;
            case "receive":
                receive(configuration, opts);
                break;
            case "push":
                push(configuration, opts);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + argv[0]);
        }
        System.exit(0); // client threads are not all daemons
    }

    static void emit(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /** Prints a SECOND line every second until stopped (as Bench does). */
    static void reporter(Stats stats, AtomicBoolean stop) {
        Thread t = new Thread(() -> {
            long last = System.nanoTime();
            while (!stop.get()) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long now = System.nanoTime();
                emit(stats.windowLine((now - last) / 1e9));
                last = now;
            }
        }, "reporter");
        t.setDaemon(true);
        t.start();
    }

    private static int intOption(Map<String, String> opts, String key, int fallback) {
        return Integer.parseInt(opts.getOrDefault(key, Integer.toString(fallback)));
    }

    private static double seconds(Map<String, String> opts, String key, double fallback) {
        return Double.parseDouble(opts.getOrDefault(key, Double.toString(fallback)));
    }

    /**
     * Waits until {@code warmupS} seconds passed since {@code startNs} and {@code done} reached
     * {@code warmupMsgs} (or {@code finished} says to stop), at most {@link #WARMUP_MAX_S}.
     */
    static void warmUp(long startNs, double warmupS, long warmupMsgs, AtomicLong done,
        java.util.function.BooleanSupplier finished) throws InterruptedException {
        long minEnd = startNs + (long) (warmupS * 1e9);
        long maxEnd = startNs + (long) (Math.max(warmupS, WARMUP_MAX_S) * 1e9);
        while (!finished.getAsBoolean()) {
            long now = System.nanoTime();
            if (now >= minEnd && done.get() >= warmupMsgs) {
                return;
            }
            if (now >= maxEnd) {
                emit("WARN warm-up cut short at " + done.get() + " of " + warmupMsgs + " messages");
                return;
            }
            Thread.sleep(5);
        }
    }

    private static void warn(AtomicLong warnings, Throwable e) {
        if (warnings.incrementAndGet() <= MAX_WARNINGS) {
            emit("WARN " + e.toString().replace('\n', ' '));
        }
    }

    // -- send ------------------------------------------------------------------------------------

    static void send(ClientConfiguration configuration, Map<String, String> opts) throws Exception {
        String topic = opts.get("topic");
        int threads = intOption(opts, "threads", 16);
        int size = intOption(opts, "size", 1024);
        double durationS = seconds(opts, "duration", 10);
        double warmupS = seconds(opts, "warmup", 2);
        long warmupMsgs = Long.parseLong(opts.getOrDefault("warmup-msgs", "0"));
        boolean fifo = Boolean.parseBoolean(opts.getOrDefault("fifo", "false"));
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .build();
        byte[] body = new byte[size];
        new Random(42).nextBytes(body);
        Message message = provider.newMessageBuilder().setTopic(topic).setTag("bench").setBody(body).build();
        Stats stats = new Stats();
        AtomicLong sent = new AtomicLong(); // successes over the whole run, warm-up included
        AtomicLong warnings = new AtomicLong();
        try {
            MessageBuilder prime = provider.newMessageBuilder().setTopic(topic)
                .setBody("prime".getBytes(StandardCharsets.UTF_8));
            producer.send((fifo ? prime.setMessageGroup("prime") : prime).build());
        } catch (Exception e) {
            emit("WARN priming send failed: " + e);
        }
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        int inflight = intOption(opts, "inflight", 0);
        if (inflight > 0) {
            threads = 1;
            Semaphore permits = new Semaphore(inflight);
            workers.add(new Thread(() -> {
                while (!stop.get()) {
                    try {
                        permits.acquire();
                    } catch (InterruptedException e) {
                        return;
                    }
                    long t0 = System.nanoTime();
                    producer.sendAsync(message).whenComplete((receipt, e) -> {
                        if (e == null) {
                            stats.success(1, Math.max(1, (System.nanoTime() - t0) / 1000));
                            sent.incrementAndGet();
                        } else {
                            stats.failure(1);
                            warn(warnings, e);
                        }
                        permits.release();
                    });
                }
            }, "send-async"));
        }
        for (int i = 0; i < threads && inflight == 0; i++) {
            Message own = fifo ? provider.newMessageBuilder().setTopic(topic).setTag("bench").setBody(body)
                .setMessageGroup("bench-" + i).build() : message;
            workers.add(new Thread(() -> {
                while (!stop.get()) {
                    long t0 = System.nanoTime();
                    try {
                        producer.send(own);
                        stats.success(1, Math.max(1, (System.nanoTime() - t0) / 1000));
                        sent.incrementAndGet();
                    } catch (Exception e) {
                        stats.failure(1);
                        warn(warnings, e);
                    }
                }
            }, "send-" + i));
        }
        reporter(stats, stop);
        long warmupStart = System.nanoTime();
        workers.forEach(Thread::start);
        warmUp(warmupStart, warmupS, warmupMsgs, sent, () -> false);
        stats.reset();
        long warmedUp = sent.get();
        emit("MARK start");
        long start = System.nanoTime();
        Thread.sleep((long) (durationS * 1000));
        stats.stopRecording();
        long end = System.nanoTime();
        emit("MARK end");
        stop.set(true);
        for (Thread t : workers) {
            t.join(REQUEST_TIMEOUT.toMillis() + 2000);
        }
        emit("RESULT " + stats.resultJson((end - start) / 1e9, String.format(Locale.ROOT,
            ",\"mode\":\"grpc-send\",\"threads\":%d,\"inflight\":%d,\"size\":%d,\"fifo\":%b,\"warmup_msgs\":%d",
            threads, inflight, size, fifo, warmedUp)));
        producer.close();
    }

    // -- receive ---------------------------------------------------------------------------------

    static void receive(ClientConfiguration configuration, Map<String, String> opts) throws Exception {
        String topic = opts.get("topic");
        long count = Long.parseLong(opts.get("count"));
        int threads = intOption(opts, "threads", 4);
        int batch = intOption(opts, "batch", 32);
        double durationS = seconds(opts, "duration", 10);
        double warmupS = seconds(opts, "warmup", 2);
        long idleTimeoutNs = (long) (seconds(opts, "idle-timeout", 30) * 1e9);
        long warmupMsgs = Long.parseLong(opts.getOrDefault("warmup-msgs", "0"));
        SimpleConsumer consumer = ClientServiceProvider.loadService().newSimpleConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(opts.get("group"))
            .setAwaitDuration(AWAIT)
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .build();
        Stats stats = new Stats();
        AtomicLong acked = new AtomicLong(); // over the whole run, warm-up included
        AtomicLong firstNs = new AtomicLong();
        AtomicLong lastSeenNs = new AtomicLong(System.nanoTime());
        AtomicLong warnings = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            workers.add(new Thread(() -> {
                while (!stop.get() && acked.get() < count) {
                    long t0 = System.nanoTime();
                    List<MessageView> views;
                    try {
                        views = consumer.receive(batch, INVISIBLE);
                    } catch (Exception e) {
                        warn(warnings, e);
                        continue;
                    }
                    if (views.isEmpty()) {
                        continue;
                    }
                    firstNs.compareAndSet(0, System.nanoTime());
                    List<CompletableFuture<Void>> acks = new ArrayList<>(views.size());
                    for (MessageView view : views) {
                        acks.add(consumer.ackAsync(view));
                    }
                    int ok = 0;
                    for (CompletableFuture<Void> ack : acks) {
                        try {
                            ack.join();
                            ok++;
                        } catch (Exception e) {
                            stats.failure(1);
                            warn(warnings, e);
                        }
                    }
                    long now = System.nanoTime();
                    lastSeenNs.set(now);
                    if (ok > 0) { // RT of one receive and its acks, recorded once per batch
                        stats.success(ok, Math.max(1, (now - t0) / 1000));
                    }
                    acked.addAndGet(ok);
                }
            }, "receive-" + i));
        }
        reporter(stats, stop);
        workers.forEach(Thread::start);
        while (firstNs.get() == 0 && !idle(lastSeenNs, idleTimeoutNs)) {
            Thread.sleep(20);
        }
        warmUp(firstNs.get(), warmupS, warmupMsgs, acked,
            () -> acked.get() >= count || idle(lastSeenNs, idleTimeoutNs));
        stats.reset();
        long startAcked = acked.get();
        emit("MARK start");
        long start = System.nanoTime();
        long deadline = start + (long) (durationS * 1e9);
        while (System.nanoTime() < deadline && acked.get() < count) {
            if (idle(lastSeenNs, idleTimeoutNs)) {
                emit("ERROR no message for " + idleTimeoutNs / 1_000_000_000L + " s after " + acked.get());
                break;
            }
            Thread.sleep(5);
        }
        stats.stopRecording();
        long end = System.nanoTime();
        emit("MARK end");
        stop.set(true);
        if (startAcked >= count) {
            emit("ERROR the backlog of " + count + " was drained during the warm-up");
        }
        emit("RESULT " + stats.resultJson(Math.max((end - start) / 1e9, 1e-9), String.format(Locale.ROOT,
            ",\"mode\":\"grpc-receive\",\"threads\":%d,\"batch\":%d,\"acked_total\":%d,\"warmup_msgs\":%d",
            threads, batch, acked.get(), startAcked)));
        for (Thread t : workers) {
            t.join(AWAIT.toMillis() + REQUEST_TIMEOUT.toMillis());
        }
        consumer.close();
    }

    // -- push ------------------------------------------------------------------------------------

    static void push(ClientConfiguration configuration, Map<String, String> opts) throws Exception {
        String topic = opts.get("topic");
        long count = Long.parseLong(opts.get("count"));
        long warmupMsgs = Long.parseLong(opts.getOrDefault("warmup-msgs", "0"));
        long idleTimeoutNs = (long) (seconds(opts, "idle-timeout", 30) * 1e9);
        if (warmupMsgs >= count) {
            throw new IllegalArgumentException("--warmup-msgs must be below --count");
        }
        Stats stats = new Stats();
        AtomicLong consumed = new AtomicLong(); // over the whole run, warm-up included
        AtomicLong lastSeenNs = new AtomicLong(System.nanoTime());
        AtomicLong startNs = new AtomicLong();
        AtomicLong endNs = new AtomicLong();
        PushConsumer consumer = ClientServiceProvider.loadService().newPushConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(opts.get("group"))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .setMessageListener(view -> {
                long age = Math.max(1, (System.currentTimeMillis() - view.getBornTimestamp()) * 1000);
                long n = consumed.incrementAndGet();
                if (n > warmupMsgs) {
                    stats.success(1, age);
                }
                if (n == warmupMsgs) { // the warm-up's last message: the measured phase starts
                    stats.reset();
                    startNs.set(System.nanoTime());
                    emit("MARK start");
                } else if (n == count) {
                    stats.stopRecording();
                    endNs.set(System.nanoTime());
                    emit("MARK end");
                }
                lastSeenNs.set(System.nanoTime());
                return ConsumeResult.SUCCESS;
            })
            .build();
        AtomicBoolean stop = new AtomicBoolean();
        reporter(stats, stop);
        if (warmupMsgs == 0) {
            startNs.set(System.nanoTime());
            emit("MARK start");
        }
        while (endNs.get() == 0) {
            if (idle(lastSeenNs, idleTimeoutNs)) {
                emit("ERROR no message for " + idleTimeoutNs / 1_000_000_000L + " s after " + consumed.get());
                break;
            }
            Thread.sleep(5);
        }
        stop.set(true);
        long end = endNs.get() == 0 ? System.nanoTime() : endNs.get();
        emit("RESULT " + stats.resultJson(Math.max((end - startNs.get()) / 1e9, 1e-9), String.format(Locale.ROOT,
            ",\"mode\":\"grpc-push\",\"consumed_total\":%d,\"warmup_msgs\":%d", consumed.get(), warmupMsgs)));
        // close() waits out the consumer's pending long-polling receives (~20 s): bounded here, as
        // the process exits next anyway.
        Thread closer = new Thread(() -> {
            try {
                consumer.close();
            } catch (Exception e) {
                emit("WARN closing the push consumer: " + e);
            }
        }, "close");
        closer.setDaemon(true);
        closer.start();
        closer.join(PUSH_CLOSE_WAIT.toMillis());
    }

    private static boolean idle(AtomicLong lastSeenNs, long idleTimeoutNs) {
        return System.nanoTime() - lastSeenNs.get() > idleTimeoutNs;
    }
}
