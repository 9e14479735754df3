package rmqcompat;

import static rmqcompat.Delivery.received;
import static rmqcompat.Run.emit;
import static rmqcompat.Run.event;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * POP consumption scenarios (compat_tests/test_pop_compat.py), one JSON object per line on stdout.
 * Only the 5.3.3 client line pops; the POP setters are called by reflection so that this file also
 * compiles against 4.9.8, whose client has none of them.
 *
 * <pre>
 * consume namesrv=H:P topic=T group=G expect=N timeout=S [consumers=1] [reconsume-later=K]
 *         [invisible-ms=60000] [settle-ms=3000]
 *   consumers DefaultMQPushConsumers of group G in one JVM, each setClientRebalance(false) (the
 *   group must be in POP mode: mqadmin setConsumeMode), concurrently, from the first offset;
 *   each message (by msgId, which a revived copy keeps) is answered RECONSUME_LATER its first K
 *   deliveries (the client changes its invisible time, the broker revives it through the POP
 *   retry topic), CONSUME_SUCCESS afterwards.
 *   events: received {k, msgId, body, topic, queueId, queueOffset, reconsumeTimes, status, seen,
 *   at (ms since start)}, done {received, distinct, acked}.
 * </pre>
 * Done when N distinct messages were acknowledged and settle-ms more passed (a message delivered
 * again shows up in that time), or at the timeout (exit 1).
 */
public final class PopScenario {
    private PopScenario() {
    }

    public static void main(String[] argv) {
        Run.main("PopScenario", argv, PopScenario::dispatch);
    }

    private static void dispatch(String command, Map<String, String> args) throws Exception {
        if (!"consume".equals(command)) {
            throw new IllegalArgumentException("unknown command " + command);
        }
        consume(args);
    }

    /** Calls a 5.x-only setter (one parameter) by name. */
    static void call(Object target, String name, Object value) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 1) {
                m.invoke(target, value);
                return;
            }
        }
        throw new IllegalStateException("this client has no " + name + " (POP needs the 5.x client)");
    }

    static void consume(Map<String, String> args) throws Exception {
        long started = System.nanoTime();
        long deadline = started + (long) (Double.parseDouble(args.getOrDefault("timeout", "60")) * 1e9);
        long settleNs = Long.parseLong(args.getOrDefault("settle-ms", "3000")) * 1_000_000L;
        int expect = Integer.parseInt(args.get("expect"));
        int later = Integer.parseInt(args.getOrDefault("reconsume-later", "0"));
        int count = Integer.parseInt(args.getOrDefault("consumers", "1"));
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        Set<String> acked = ConcurrentHashMap.newKeySet();
        AtomicInteger deliveries = new AtomicInteger();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (int k = 0; k < count; k++) {
                final int key = k;
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args.get("group"));
                consumer.setNamesrvAddr(args.get("namesrv"));
                consumer.setVipChannelEnabled(false);
                consumer.setInstanceName("pop-" + k + "-" + System.nanoTime());
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.setAwaitTerminationMillisWhenShutdown(5_000);
                consumer.subscribe(args.get("topic"), args.getOrDefault("subscription", "*"));
                call(consumer, "setClientRebalance", false);
                if (args.containsKey("invisible-ms")) {
                    call(consumer, "setPopInvisibleTime", Long.parseLong(args.get("invisible-ms")));
                }
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    boolean retry = false;
                    for (MessageExt m : msgs) {
                        deliveries.incrementAndGet();
                        int n = seen.merge(m.getMsgId(), 1, Integer::sum);
                        retry |= n <= later;
                        try {
                            Map<String, Object> ev = received(m);
                            ev.put("k", key);
                            ev.put("status", n <= later ? "later" : "success");
                            ev.put("seen", n);
                            ev.put("at", (System.nanoTime() - started) / 1_000_000L);
                            emit(ev);
                        } catch (Exception e) {
                            Run.error(e);
                        }
                    }
                    if (retry) {
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                    for (MessageExt m : msgs) {
                        acked.add(m.getMsgId());
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                consumers.add(consumer);
            }
            long reachedAt = 0;
            while (System.nanoTime() < deadline && !Run.stopped()) {
                if (reachedAt == 0 && acked.size() >= expect) {
                    reachedAt = System.nanoTime();
                }
                if (reachedAt != 0 && System.nanoTime() - reachedAt >= settleNs) {
                    break;
                }
                Thread.sleep(50);
            }
            Map<String, Object> done = event("done");
            done.put("received", deliveries.get());
            done.put("distinct", seen.size());
            done.put("acked", acked.size());
            emit(done);
            if (reachedAt == 0) {
                throw new IllegalStateException("timeout: " + acked.size() + " of " + expect + " acknowledged");
            }
        } finally {
            for (DefaultMQPushConsumer consumer : consumers) {
                consumer.shutdown();
            }
        }
    }
}
