package rmqcompat;

import static rmqcompat.Run.emit;
import static rmqcompat.Run.event;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Transaction producer scenario (compat_tests/test_transaction_compat.py), one JSON object per
 * line on stdout. Works with both client lines (TransactionMQProducer and TransactionListener).
 *
 * <pre>
 * tx namesrv=H:P topic=T group=PG cgroup=CG count=N [big=BYTES] [compress-over=4096]
 *    [resume-file=PATH] [heartbeat-ms=1000] [settle-ms=8000] [timeout=120]
 * </pre>
 * Message i (user property "i") follows plan i % 5: 0 COMMIT at once, 1 ROLLBACK at once,
 * 2 UNKNOW then COMMIT at the first check, 3 UNKNOW then ROLLBACK at the first check, 4 UNKNOW
 * at the first check and COMMIT at the second. With big=BYTES one more message (i = count, random
 * body of that size) follows plan 2. With resume-file the scenario waits, after "sent_all", until
 * that file exists (the test restarts the broker meanwhile) before it starts the consumer.
 * Events: sent {i, status, local}, sent_all, check {i, n, answer}, received {i, bodyLen},
 * done {received: [i...], checks: {i: n}} once every committed message arrived and every check
 * happened, plus settle-ms (for unexpected ones), or at the timeout.
 */
public final class TransactionScenario {
    private static final Map<Integer, AtomicInteger> CHECKS = new ConcurrentHashMap<>();
    private static final Map<Integer, AtomicInteger> RECEIVED = new ConcurrentHashMap<>();

    private TransactionScenario() {
    }

    /** Runs one command; events and errors go out through {@link Run}, as {@link Scenario}'s do. */
    public static void main(String[] argv) {
        Run.main("TransactionScenario", argv, TransactionScenario::dispatch);
    }

    private static void dispatch(String command, Map<String, String> args) throws Exception {
        if (!"tx".equals(command)) {
            throw new IllegalArgumentException("unknown command " + command);
        }
        run(args);
    }

    /** How many checks message i gets before its final answer, and that answer. */
    static int checksWanted(int plan) {
        return plan == 4 ? 2 : (plan == 2 || plan == 3) ? 1 : 0;
    }

    static LocalTransactionState finalState(int plan) {
        return plan == 1 || plan == 3 ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.COMMIT_MESSAGE;
    }

    static int planOf(Message msg) {
        return Integer.parseInt(msg.getUserProperty("plan"));
    }

    static void run(Map<String, String> args) throws Exception {
        String namesrv = args.get("namesrv");
        String topic = args.get("topic");
        int count = Integer.parseInt(args.get("count"));
        int big = Integer.parseInt(args.getOrDefault("big", "0"));
        int heartbeatMs = Integer.parseInt(args.getOrDefault("heartbeat-ms", "1000"));
        long settleMs = Long.parseLong(args.getOrDefault("settle-ms", "8000"));
        long deadline = System.currentTimeMillis() + (long) (Double.parseDouble(args.getOrDefault("timeout", "120")) * 1000);

        TransactionMQProducer producer = new TransactionMQProducer(args.get("group"));
        producer.setNamesrvAddr(namesrv);
        producer.setHeartbeatBrokerInterval(heartbeatMs);
        producer.setPollNameServerInterval(1000);
        producer.setSendMsgTimeout(10000);
        // NameServer and broker calls other than sends (3 s by default): right after a broker
        // restart on a loaded machine, a route lookup's connect alone took 1.5 s.
        producer.setMqClientApiTimeout(10000);
        producer.setCompressMsgBodyOverHowmuch(Integer.parseInt(args.getOrDefault("compress-over", "4096")));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                int plan = planOf(msg);
                return checksWanted(plan) > 0 ? LocalTransactionState.UNKNOW : finalState(plan);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                int i = Integer.parseInt(msg.getUserProperty("i"));
                int plan = planOf(msg);
                int n = CHECKS.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
                LocalTransactionState answer = n >= checksWanted(plan) ? finalState(plan) : LocalTransactionState.UNKNOW;
                Map<String, Object> ev = event("check");
                ev.put("i", i);
                ev.put("n", n);
                ev.put("answer", answer.name());
                emit(ev);
                return answer;
            }
        });
        producer.start();

        int total = big > 0 ? count + 1 : count;
        Random random = new Random(7);
        for (int i = 0; i < total; i++) {
            byte[] body;
            int plan;
            if (i == count) {
                body = new byte[big];
                random.nextBytes(body);
                plan = 2;
            } else {
                body = ("tx-" + i).getBytes(StandardCharsets.UTF_8);
                plan = i % 5;
            }
            Message msg = new Message(topic, "TagTx", body);
            msg.putUserProperty("i", String.valueOf(i));
            msg.putUserProperty("plan", String.valueOf(plan));
            TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
            Map<String, Object> ev = event("sent");
            ev.put("i", i);
            ev.put("status", result.getSendStatus().name());
            ev.put("local", result.getLocalTransactionState().name());
            emit(ev);
        }
        emit(event("sent_all"));

        String resume = args.get("resume-file");
        if (resume != null) {
            while (!Files.exists(Paths.get(resume)) && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
        }

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args.get("cgroup"));
        consumer.setNamesrvAddr(namesrv);
        consumer.setPollNameServerInterval(1000);
        consumer.setMqClientApiTimeout(10000);
        consumer.setHeartbeatBrokerInterval(heartbeatMs);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                int i = Integer.parseInt(m.getUserProperty("i"));
                RECEIVED.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
                Map<String, Object> ev = event("received");
                ev.put("i", i);
                ev.put("bodyLen", m.getBody().length);
                ev.put("tranMsg", m.getProperty("TRAN_MSG"));
                emit(ev);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        long metAt = -1;
        while (System.currentTimeMillis() < deadline) {
            boolean met = true;
            for (int i = 0; i < total; i++) {
                int plan = i == count ? 2 : i % 5;
                int checks = CHECKS.containsKey(i) ? CHECKS.get(i).get() : 0;
                boolean committed = finalState(plan) == LocalTransactionState.COMMIT_MESSAGE;
                if (checks < checksWanted(plan) || committed && !RECEIVED.containsKey(i)) {
                    met = false;
                }
            }
            if (met && metAt < 0) {
                metAt = System.currentTimeMillis();
            }
            if (metAt >= 0 && System.currentTimeMillis() - metAt >= settleMs) {
                break;
            }
            Thread.sleep(100);
        }
        Map<String, Object> done = event("done");
        done.put("received", new TreeMap<>(snapshot(RECEIVED)));
        done.put("checks", new TreeMap<>(snapshot(CHECKS)));
        done.put("complete", metAt >= 0);
        emit(done);
        consumer.shutdown();
        producer.shutdown();
    }

    static Map<String, Integer> snapshot(Map<Integer, AtomicInteger> counts) {
        Map<String, Integer> copy = new TreeMap<>();
        for (Map.Entry<Integer, AtomicInteger> e : counts.entrySet()) {
            copy.put(String.valueOf(e.getKey()), e.getValue().get());
        }
        return copy;
    }
}
