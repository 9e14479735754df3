package rmqcompat;

import static rmqcompat.Run.emit;
import static rmqcompat.Run.event;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * SQL92 filter scenarios (compat_tests/test_filter_compat.py), one JSON object per line on stdout.
 *
 * <pre>
 * produce namesrv=H:P topic=T messages=TAG|k=v|k=v;TAG|k=v ...   bodies are "m0", "m1", ...
 *   events: sent {i, body, status}, done {sent}
 * consume namesrv=H:P topic=T timeout=S settle-ms=N sql0=... group0=... expect0=N [later0=N] [sql1=...]
 *   one push consumer per sqlK (MessageSelector.bySql), all from the first offset, in one JVM;
 *   laterK: answer RECONSUME_LATER that many times per message before CONSUME_SUCCESS (the
 *   redeliveries come from the group's retry topic);
 *   events: start_error {k, code, remark, error} when start() fails (the broker refused the
 *   subscription), received {k, body, tags, props, reconsumeTimes, status}, done {k, received,
 *   distinct, acked} per consumer.
 * litepull namesrv=H:P topic=T timeout=S settle-ms=N sql0=... group0=... expect0=N
 *   one DefaultLitePullConsumer subscribed with MessageSelector.bySql (its pulls carry the
 *   expression); events: received {k, body, tags, props}, done {k, received, distinct, acked}.
 * </pre>
 * A consumer is done when it has acknowledged expectK distinct bodies and then settle-ms more
 * passed (messages that should not match have that long to show up), or at the timeout.
 */
public final class FilterScenario {
    private FilterScenario() {
    }

    /** Runs one command; events and errors go out through {@link Run}, as {@link Scenario}'s do. */
    public static void main(String[] argv) {
        Run.main("FilterScenario", argv, FilterScenario::dispatch);
    }

    private static void dispatch(String command, Map<String, String> args) throws Exception {
        switch (command) {
            case "produce":
                produce(args);
                break;
            case "consume":
                consume(args);
                break;
            case "litepull":
                litePull(args);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    static void produce(Map<String, String> args) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(args.getOrDefault("group", "filterProducer"));
        producer.setNamesrvAddr(args.get("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName("filter-producer-" + System.nanoTime());
        // 10 s instead of 3 s per send: the CI machine is shared and one slow route lookup must not
        // fail a filter scenario (seen once: "sendDefaultImpl call timeout" under load).
        producer.setSendMsgTimeout(10_000);
        producer.start();
        try {
            String[] specs = args.get("messages").split(";", -1);
            for (int i = 0; i < specs.length; i++) {
                String[] fields = specs[i].split("\\|", -1);
                Message m = new Message(args.get("topic"), ("m" + i).getBytes(StandardCharsets.UTF_8));
                if (!fields[0].isEmpty()) {
                    m.setTags(fields[0]);
                }
                for (int f = 1; f < fields.length; f++) {
                    int eq = fields[f].indexOf('=');
                    m.putUserProperty(fields[f].substring(0, eq), fields[f].substring(eq + 1));
                }
                SendResult r = producer.send(m);
                Map<String, Object> ev = event("sent");
                ev.put("i", i);
                ev.put("body", "m" + i);
                ev.put("status", r.getSendStatus().name());
                emit(ev);
            }
            Map<String, Object> done = event("done");
            done.put("sent", specs.length);
            emit(done);
        } finally {
            producer.shutdown();
        }
    }

    static void consume(Map<String, String> args) throws Exception {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args.getOrDefault("timeout", "60")) * 1e9);
        long settleNs = Long.parseLong(args.getOrDefault("settle-ms", "3000")) * 1_000_000L;
        List<DefaultMQPushConsumer> started = new ArrayList<>();
        List<Integer> keys = new ArrayList<>();
        Map<Integer, Set<String>> seen = new TreeMap<>(); // acknowledged bodies
        Map<Integer, Set<String>> received = new TreeMap<>(); // delivered bodies
        Map<Integer, Integer> deliveries = new ConcurrentHashMap<>();
        try {
            for (int k = 0; args.containsKey("sql" + k); k++) {
                final int key = k;
                Set<String> bodies = ConcurrentHashMap.newKeySet();
                Set<String> acked = ConcurrentHashMap.newKeySet();
                Map<String, Integer> answers = new ConcurrentHashMap<>();
                int later = Integer.parseInt(args.getOrDefault("later" + k, "0"));
                DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args.get("group" + k));
                consumer.setNamesrvAddr(args.get("namesrv"));
                consumer.setVipChannelEnabled(false);
                consumer.setInstanceName("filter-consumer-" + k + "-" + System.nanoTime());
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.subscribe(args.get("topic"), MessageSelector.bySql(args.get("sql" + k)));
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    boolean retry = false;
                    List<String> batch = new ArrayList<>();
                    for (MessageExt m : msgs) {
                        String body = new String(m.getBody(), StandardCharsets.UTF_8);
                        bodies.add(body);
                        batch.add(body);
                        deliveries.merge(key, 1, Integer::sum);
                        boolean again = answers.merge(body, 1, Integer::sum) <= later;
                        retry |= again;
                        Map<String, Object> ev = event("received");
                        ev.put("k", key);
                        ev.put("body", body);
                        ev.put("tags", m.getTags());
                        ev.put("props", new TreeMap<String, Object>(m.getProperties()));
                        ev.put("reconsumeTimes", m.getReconsumeTimes());
                        ev.put("status", again ? "later" : "success");
                        emit(ev);
                    }
                    if (retry) {
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                    acked.addAll(batch);
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                try {
                    consumer.start();
                } catch (MQClientException e) {
                    Map<String, Object> ev = event("start_error");
                    ev.put("k", key);
                    ev.put("code", e.getResponseCode());
                    ev.put("remark", e.getErrorMessage());
                    ev.put("error", e.getMessage());
                    emit(ev);
                    consumer.shutdown();
                    continue;
                }
                started.add(consumer);
                keys.add(key);
                seen.put(key, acked);
                received.put(key, bodies);
            }
            long[] doneAt = new long[keys.size()];
            while (System.nanoTime() < deadline) {
                boolean all = true;
                for (int i = 0; i < keys.size(); i++) {
                    int expect = Integer.parseInt(args.getOrDefault("expect" + keys.get(i), "0"));
                    if (doneAt[i] == 0 && seen.get(keys.get(i)).size() >= expect) {
                        doneAt[i] = System.nanoTime();
                    }
                    all &= doneAt[i] != 0 && System.nanoTime() - doneAt[i] >= settleNs;
                }
                if (all) {
                    break;
                }
                Thread.sleep(50);
            }
        } finally {
            for (DefaultMQPushConsumer c : started) {
                c.shutdown();
            }
        }
        for (int key : keys) {
            Map<String, Object> done = event("done");
            done.put("k", key);
            done.put("received", deliveries.getOrDefault(key, 0));
            done.put("distinct", received.get(key).size());
            done.put("acked", seen.get(key).size());
            emit(done);
        }
    }

    static void litePull(Map<String, String> args) throws Exception {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args.getOrDefault("timeout", "60")) * 1e9);
        long settleNs = Long.parseLong(args.getOrDefault("settle-ms", "3000")) * 1_000_000L;
        int expect = Integer.parseInt(args.getOrDefault("expect0", "0"));
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(args.get("group0"));
        consumer.setNamesrvAddr(args.get("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName("filter-litepull-" + System.nanoTime());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollTimeoutMillis(1000);
        consumer.subscribe(args.get("topic"), MessageSelector.bySql(args.get("sql0")));
        consumer.start();
        Set<String> bodies = new HashSet<>();
        int deliveries = 0;
        long doneAt = 0;
        try {
            while (System.nanoTime() < deadline && (doneAt == 0 || System.nanoTime() - doneAt < settleNs)) {
                for (MessageExt m : consumer.poll(500)) {
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    bodies.add(body);
                    deliveries++;
                    Map<String, Object> ev = event("received");
                    ev.put("k", 0);
                    ev.put("body", body);
                    ev.put("tags", m.getTags());
                    ev.put("props", new TreeMap<String, Object>(m.getProperties()));
                    emit(ev);
                }
                if (doneAt == 0 && bodies.size() >= expect) {
                    doneAt = System.nanoTime();
                }
            }
        } finally {
            consumer.shutdown();
        }
        Map<String, Object> done = event("done");
        done.put("k", 0);
        done.put("received", deliveries);
        done.put("distinct", bodies.size());
        done.put("acked", bodies.size());
        emit(done);
    }
}
