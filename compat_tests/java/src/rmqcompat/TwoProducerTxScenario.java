package rmqcompat;

import static rmqcompat.Run.emit;
import static rmqcompat.Run.event;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Two transaction producers in one producer group (compat_tests/test_topic_fidelity_compat.py),
 * as rocketmq-spring's two templates of one group: the first sends every half message and answers
 * UNKNOW to everything; only the second's check answers COMMIT. Both connect first (one plain
 * message each, under a tag the consumer does not take), the first one first. The broker must rotate its checks
 * over the group's channels (ProducerManager.getAvailableChannel) for the messages to commit.
 *
 * <pre>
 * txpair namesrv=H:P topic=T group=PG cgroup=CG count=N [timeout=120]
 * </pre>
 * Events: sent {i, status, local}, check {producer, i, answer}, received {i, ms} (ms: since the
 * send of message i), done {received: {i: n}, checks: {producer: n}, complete}.
 */
public final class TwoProducerTxScenario {
    private static final Map<Integer, AtomicInteger> RECEIVED = new ConcurrentHashMap<>();
    private static final Map<String, AtomicInteger> CHECKS = new ConcurrentHashMap<>();
    private static final Map<Integer, Long> SENT_AT = new ConcurrentHashMap<>();

    private TwoProducerTxScenario() {
    }

    public static void main(String[] argv) {
        Run.main("TwoProducerTxScenario", argv, TwoProducerTxScenario::dispatch);
    }

    private static void dispatch(String command, Map<String, String> args) throws Exception {
        if (!"txpair".equals(command)) {
            throw new IllegalArgumentException("unknown command " + command);
        }
        run(args);
    }

    static TransactionMQProducer producer(Map<String, String> args, String name, LocalTransactionState answer) {
        TransactionMQProducer producer = new TransactionMQProducer(args.get("group"));
        producer.setNamesrvAddr(args.get("namesrv"));
        producer.setInstanceName(name); // a client instance, and so a connection, of its own
        producer.setHeartbeatBrokerInterval(1000);
        producer.setPollNameServerInterval(1000);
        producer.setSendMsgTimeout(10000);
        producer.setMqClientApiTimeout(10000);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                CHECKS.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
                Map<String, Object> ev = event("check");
                ev.put("producer", name);
                ev.put("i", Integer.parseInt(msg.getUserProperty("i")));
                ev.put("answer", answer.name());
                emit(ev);
                return answer;
            }
        });
        return producer;
    }

    static void run(Map<String, String> args) throws Exception {
        String topic = args.get("topic");
        int count = Integer.parseInt(args.get("count"));
        long deadline = System.currentTimeMillis() + (long) (Double.parseDouble(args.getOrDefault("timeout", "120")) * 1000);
        TransactionMQProducer first = producer(args, "first", LocalTransactionState.UNKNOW);
        TransactionMQProducer second = producer(args, "second", LocalTransactionState.COMMIT_MESSAGE);
        // A client registers at a broker once it has a route through it: each producer sends a
        // plain message (a tag nobody consumes), the first one heartbeats (every second) before
        // the second starts, so the first is the group's first channel on both brokers.
        first.start();
        first.send(new Message(topic, "Warm", "warm".getBytes(StandardCharsets.UTF_8)));
        Thread.sleep(3000);
        second.start();
        second.send(new Message(topic, "Warm", "warm".getBytes(StandardCharsets.UTF_8)));

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args.get("cgroup"));
        consumer.setNamesrvAddr(args.get("namesrv"));
        consumer.setPollNameServerInterval(1000);
        consumer.setMqClientApiTimeout(10000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "TagPair");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                int i = Integer.parseInt(m.getUserProperty("i"));
                RECEIVED.computeIfAbsent(i, k -> new AtomicInteger()).incrementAndGet();
                Map<String, Object> ev = event("received");
                ev.put("i", i);
                ev.put("ms", System.currentTimeMillis() - SENT_AT.getOrDefault(i, 0L));
                emit(ev);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        for (int i = 0; i < count; i++) {
            Message msg = new Message(topic, "TagPair", ("pair-" + i).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty("i", String.valueOf(i));
            SENT_AT.put(i, System.currentTimeMillis());
            TransactionSendResult result = first.sendMessageInTransaction(msg, null);
            Map<String, Object> ev = event("sent");
            ev.put("i", i);
            ev.put("status", result.getSendStatus().name());
            ev.put("local", result.getLocalTransactionState().name());
            emit(ev);
        }
        while (RECEIVED.size() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(2000); // a duplicate delivery would show here
        Map<String, Object> done = event("done");
        Map<String, Integer> received = new TreeMap<>();
        RECEIVED.forEach((k, v) -> received.put(String.valueOf(k), v.get()));
        Map<String, Integer> checks = new TreeMap<>();
        CHECKS.forEach((k, v) -> checks.put(k, v.get()));
        done.put("received", received);
        done.put("checks", checks);
        done.put("complete", RECEIVED.size() == count);
        emit(done);
        consumer.shutdown();
        second.shutdown();
        first.shutdown();
    }
}
