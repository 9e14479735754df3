package rmqbench;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/**
 * Our load driver for RocketMQ brokers and NameServers, built on the real rocketmq-client 5.3.3.
 *
 * <p>It behaves like the official benchmark programs (org.apache.rocketmq.example.benchmark.Producer
 * and Consumer, which are not published to Maven Central): N threads, a message size, sync / async /
 * oneway / batch sends, a fixed quantity or a duration, a line per second with TPS and the window's
 * average and max RT, and at the end p50/p99/p999, which the official programs lack. Modes:
 *
 * <pre>
 *   producer --namesrv A --topic T [--threads 1] [--size 1024] [--send sync|async|oneway|batch]
 *            [--batch 16] [--inflight 1024 (async; 0 = the official producer's flow control)]
 *            [--count N | --duration S] [--warmup S] [--rate MSGS_PER_S]
 *   consumer --namesrv A --topic T --group G --count N [--idle-timeout S]
 *   lookup   --namesrv A --topic T [--connections N] [--threads N] [--duration S] [--warmup S]
 * </pre>
 *
 * <p>Output on stdout, one line each: {@code SECOND ...} every second, {@code MARK start} when the
 * measured phase begins (after the warm-up, or at the first consumed message), {@code MARK end} when it
 * ends, then {@code RESULT {json}}. The Python side snapshots server CPU at the two marks.
 */
public final class Bench {
    // --inflight 0: the official producer's flow control instead of a bound on sends in flight: wait
    // 100 ms while the producer's async executor queues more than 10,000 sends (benchmark.Producer's
    // MAX_LENGTH_ASYNC_QUEUE and SLEEP_FOR_A_WHILE); the remoting layer then allows 65,535 in flight.
    private static final int OFFICIAL_MAX_ASYNC_QUEUE = 10000;
    private static final long OFFICIAL_SLEEP_MS = 100;
    private static final long SEND_TIMEOUT_MS = 3000; // DefaultMQProducer's default sendMsgTimeout
    private static final int MAX_WARNINGS = 5; // failures printed (WARN lines) per run
    private static final long FIRST_LOOKUP_WAIT_S = 60; // the lookup case waits this long for one answer

    private Bench() {
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 1) {
            throw new IllegalArgumentException("usage: Bench producer|consumer|lookup --key value ...");
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --key, got " + argv[i]);
            }
            opts.put(argv[i].substring(2), argv[i + 1]);
        }
        Options o = new Options(opts);
        switch (argv[0]) {
            case "producer":
                new ProducerRun(o).run();
                break;
            case "consumer":
                consume(o);
                break;
            case "lookup":
                lookup(o);
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

    /** Prints a SECOND line every second until stopped. */
    static Thread reporter(Stats stats, AtomicBoolean stop) {
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
        return t;
    }

    static String instanceName(String role) {
        return "bench-" + role + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
    }

    // -- consumer ------------------------------------------------------------------------------

    static void consume(Options o) throws Exception {
        long expected = o.count;
        Stats stats = new Stats();
        AtomicLong received = new AtomicLong();
        AtomicLong lastSeenNs = new AtomicLong(System.nanoTime());
        AtomicLong firstNs = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.group);
        consumer.setNamesrvAddr(o.namesrv);
        consumer.setInstanceName(instanceName("consumer"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(o.topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            if (firstNs.compareAndSet(0, now)) {
                emit("MARK start");
            }
            lastSeenNs.set(now);
            // RT of a consumed message: store to delivery (meaningful only for a live stream).
            long rtUs = Math.max(1, (System.currentTimeMillis() - msgs.get(0).getStoreTimestamp()) * 1000);
            stats.success(msgs.size(), rtUs);
            if (received.addAndGet(msgs.size()) >= expected) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        AtomicBoolean stop = new AtomicBoolean();
        reporter(stats, stop);
        consumer.start();
        while (!done.await(200, TimeUnit.MILLISECONDS)) {
            if (System.nanoTime() - lastSeenNs.get() > o.idleTimeoutS * 1_000_000_000L) {
                emit("ERROR no message for " + o.idleTimeoutS + " s after " + received.get());
                break;
            }
        }
        long end = System.nanoTime();
        emit("MARK end");
        stop.set(true);
        double elapsed = firstNs.get() == 0 ? 0.0 : (end - firstNs.get()) / 1e9;
        emit("RESULT " + stats.resultJson(Math.max(elapsed, 1e-9), ",\"mode\":\"consumer\""));
        consumer.shutdown();
    }

    // -- NameServer lookups ----------------------------------------------------------------------

    static void lookup(Options o) throws Exception {
        List<DefaultMQProducer> clients = new ArrayList<>();
        for (int i = 0; i < o.connections; i++) {
            DefaultMQProducer p = new DefaultMQProducer("bench_lookup_" + i);
            p.setNamesrvAddr(o.namesrv);
            p.setInstanceName(instanceName("lookup" + i));
            p.start();
            clients.add(p);
        }
        int threads = Math.max(o.threads, o.connections);
        Stats stats = new Stats();
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch firstLookup = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            MQClientAPIImpl api =
                clients.get(i % clients.size()).getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    long t0 = System.nanoTime();
                    try {
                        api.getTopicRouteInfoFromNameServer(o.topic, SEND_TIMEOUT_MS);
                        stats.success(1, (System.nanoTime() - t0) / 1000);
                        firstLookup.countDown();
                    } catch (Exception e) {
                        stats.failure(1);
                    }
                }
            }, "lookup-" + i);
            workers.add(t);
        }
        reporter(stats, stop);
        workers.forEach(Thread::start);
        // The warm-up counts from the first answered lookup, not from the threads' start: on a loaded
        // machine the first connection and the JIT can take longer than the whole warm-up.
        firstLookup.await(FIRST_LOOKUP_WAIT_S, TimeUnit.SECONDS);
        Thread.sleep((long) (o.warmupS * 1000));
        stats.reset();
        emit("MARK start");
        long start = System.nanoTime();
        Thread.sleep((long) (o.durationS * 1000));
        stats.stopRecording();
        long end = System.nanoTime();
        emit("MARK end");
        stop.set(true);
        for (Thread t : workers) {
            t.join(5000);
        }
        emit("RESULT " + stats.resultJson((end - start) / 1e9,
            String.format(Locale.ROOT, ",\"mode\":\"lookup\",\"connections\":%d,\"threads\":%d",
                o.connections, threads)));
        clients.forEach(DefaultMQProducer::shutdown);
    }

    /** Command-line options with their defaults. */
    static final class Options {
        final String namesrv;
        final String topic;
        final String group;
        final String send;
        final int threads;
        final int size;
        final int batch;
        final int inflight; // 0: the official producer's flow control (see OFFICIAL_MAX_ASYNC_QUEUE)
        final long count;
        final double durationS;
        final double warmupS;
        final double rate;
        final int connections;
        final int idleTimeoutS;

        Options(Map<String, String> m) {
            namesrv = m.getOrDefault("namesrv", "127.0.0.1:9876");
            topic = m.getOrDefault("topic", "BenchmarkTest");
            group = m.getOrDefault("group", "bench_group");
            send = m.getOrDefault("send", "sync");
            threads = Integer.parseInt(m.getOrDefault("threads", "1"));
            size = Integer.parseInt(m.getOrDefault("size", "1024"));
            batch = Integer.parseInt(m.getOrDefault("batch", "16"));
            int asked = Integer.parseInt(m.getOrDefault("inflight", "1024"));
            inflight = Math.max(0, asked);
            count = Long.parseLong(m.getOrDefault("count", "0"));
            durationS = Double.parseDouble(m.getOrDefault("duration", "10"));
            warmupS = Double.parseDouble(m.getOrDefault("warmup", "2"));
            rate = Double.parseDouble(m.getOrDefault("rate", "0"));
            connections = Integer.parseInt(m.getOrDefault("connections", "1"));
            idleTimeoutS = Integer.parseInt(m.getOrDefault("idle-timeout", "30"));
        }
    }

    /** One producer run; see the class docstring for the options. */
    static final class ProducerRun {
        private final Options o;
        private final Stats stats = new Stats();
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicLong issued = new AtomicLong();
        private final byte[] body;
        private final Semaphore inflight;
        private volatile long paceStartNs;
        private final AtomicLong paceTicket = new AtomicLong();
        private final AtomicLong warnings = new AtomicLong();

        ProducerRun(Options o) {
            this.o = o;
            this.body = new byte[o.size];
            new Random(42).nextBytes(body);
            this.inflight = new Semaphore(o.inflight > 0 ? o.inflight : Integer.MAX_VALUE / 2);
        }

        void run() throws Exception {
            DefaultMQProducer producer = new DefaultMQProducer("bench_producer");
            producer.setNamesrvAddr(o.namesrv);
            producer.setInstanceName(instanceName("producer"));
            producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE); // bodies as given, as the official one
            producer.setSendMsgTimeout((int) SEND_TIMEOUT_MS);
            producer.start();
            prime(producer);
            boolean fixedQuantity = o.count > 0;
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < o.threads; i++) {
                Thread t = new Thread(() -> loop(producer, fixedQuantity), "send-" + i);
                workers.add(t);
            }
            reporter(stats, stop);
            long start;
            if (fixedQuantity) {
                emit("MARK start");
                start = System.nanoTime();
                paceStartNs = start;
                workers.forEach(Thread::start);
                for (Thread t : workers) {
                    t.join();
                }
            } else {
                paceStartNs = System.nanoTime();
                workers.forEach(Thread::start);
                Thread.sleep((long) (o.warmupS * 1000));
                stats.reset();
                emit("MARK start");
                start = System.nanoTime();
                Thread.sleep((long) (o.durationS * 1000));
                stop.set(true);
                for (Thread t : workers) {
                    t.join(SEND_TIMEOUT_MS + 2000);
                }
            }
            // Async sends still in flight: wait for their callbacks (each ends within its timeout).
            int permits = o.inflight > 0 ? o.inflight : Integer.MAX_VALUE / 2;
            if (!inflight.tryAcquire(permits, 3 * SEND_TIMEOUT_MS + 10_000, TimeUnit.MILLISECONDS)) {
                emit("ERROR async callbacks missing: " + (permits - inflight.availablePermits()));
            }
            stats.stopRecording();
            long end = System.nanoTime();
            emit("MARK end");
            stop.set(true);
            emit("RESULT " + stats.resultJson((end - start) / 1e9,
                String.format(Locale.ROOT, ",\"mode\":\"producer\",\"send\":\"%s\",\"threads\":%d,\"size\":%d",
                    o.send, o.threads, o.size)));
            producer.shutdown();
        }

        /** One sync send before the measured phase: the route lookup and the broker connection are
         *  not what a run measures (under a flood they can take longer than the sends' timeout). */
        private void prime(DefaultMQProducer producer) {
            for (int attempt = 0; attempt < 3; attempt++) {
                try {
                    producer.send(new Message(o.topic, "prime".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
                    return;
                } catch (Exception e) {
                    emit("WARN priming send failed: " + e);
                }
            }
        }

        private Message message() {
            return new Message(o.topic, body);
        }

        private void pace(int messages) throws InterruptedException {
            if (o.rate <= 0) {
                return;
            }
            long ticket = paceTicket.getAndAdd(messages);
            long due = paceStartNs + (long) (ticket * 1e9 / o.rate);
            long wait = due - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
        }

        private void loop(DefaultMQProducer producer, boolean fixedQuantity) {
            int per = "batch".equals(o.send) ? o.batch : 1;
            while (!stop.get()) {
                if (fixedQuantity && issued.getAndAdd(per) >= o.count) {
                    return;
                }
                try {
                    pace(per);
                    sendOnce(producer, per);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    stats.failure(per);
                    if (warnings.incrementAndGet() <= MAX_WARNINGS) {
                        emit("WARN " + e);
                    }
                }
            }
        }

        private void sendOnce(DefaultMQProducer producer, int per) throws Exception {
            long t0 = System.nanoTime();
            switch (o.send) {
                case "sync": {
                    SendResult r = producer.send(message());
                    record(r, per, t0);
                    break;
                }
                case "oneway":
                    producer.sendOneway(message());
                    stats.success(1, (System.nanoTime() - t0) / 1000);
                    break;
                case "batch": {
                    List<Message> msgs = new ArrayList<>(per);
                    for (int i = 0; i < per; i++) {
                        msgs.add(message());
                    }
                    record(producer.send(msgs), per, t0);
                    break;
                }
                case "async": {
                    if (o.inflight == 0) {
                        ThreadPoolExecutor e =
                            (ThreadPoolExecutor) producer.getDefaultMQProducerImpl().getAsyncSenderExecutor();
                        while (e.getQueue().size() > OFFICIAL_MAX_ASYNC_QUEUE) {
                            Thread.sleep(OFFICIAL_SLEEP_MS);
                        }
                    }
                    inflight.acquire();
                    long a0 = System.nanoTime();
                    try {
                        producer.send(message(), new SendCallback() {
                            @Override
                            public void onSuccess(SendResult r) {
                                record(r, 1, a0);
                                inflight.release();
                            }

                            @Override
                            public void onException(Throwable e) {
                                stats.failure(1);
                                if (warnings.incrementAndGet() <= MAX_WARNINGS) {
                                    emit("WARN " + e);
                                }
                                inflight.release();
                            }
                        });
                    } catch (Exception e) {
                        inflight.release();
                        throw e;
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown --send " + o.send);
            }
        }

        private void record(SendResult r, int per, long t0) {
            if (r.getSendStatus() == SendStatus.SEND_OK) {
                stats.success(per, Math.max(1, (System.nanoTime() - t0) / 1000));
            } else {
                stats.failure(per);
            }
        }
    }
}
