package rmqcompat;

import static rmqcompat.Delivery.instance;
import static rmqcompat.Run.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Clients signing their requests with the client's own {@code AclClientRPCHook} and
 * {@code SessionCredentials} (ak= and sk=; none when ak= is absent). The hook is built by
 * reflection so this file also compiles against the 4.9.8 client, whose ACL classes live in
 * another artifact.
 * <ul>
 * <li>{@code produce topic= count=}: sync sends; one "sent" event each, or one "send-failed" event
 * with the response code and the broker's remark, then exit.</li>
 * <li>{@code pull topic= group=}: a DefaultMQPullConsumer pulls every queue from offset 0; one
 * "pulled" event with the total, or one "pull-failed" event with the code and remark.</li>
 * <li>{@code consume topic= group= expect=}: a push consumer until expect= messages arrived; one
 * "consumed" event with the count.</li>
 * <li>{@code query topic=}: sends one message, then looks it up by its unique key
 * ({@code queryMessageByUniqKey}, whose request carries the {@code _UNIQUE_KEY_QUERY} ext field
 * the hook signs from 4.9.4 on), retrying until the broker's index has it; one "queried" event
 * with whether the body came back, or one "query-failed" event.</li>
 * </ul>
 */
final class AuthScenario {
    private AuthScenario() {
    }

    public static void main(String[] argv) {
        Run.main("AuthScenario", argv, AuthScenario::dispatch);
    }

    static void dispatch(String command, Map<String, String> arguments) throws Exception {
        double timeout = Double.parseDouble(arguments.getOrDefault("timeout", "60"));
        deadline = System.nanoTime() + (long) (timeout * 1e9);
        switch (command) {
            case "produce":
                produce();
                break;
            case "pull":
                pull();
                break;
            case "consume":
                consume();
                break;
            case "query":
                query();
                break;
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    static RPCHook hook() throws Exception {
        String ak = args.get("ak");
        if (ak == null || ak.isEmpty()) {
            return null;
        }
        ClassLoader loader = AuthScenario.class.getClassLoader();
        Class<?> credentials = Class.forName("org.apache.rocketmq.acl.common.SessionCredentials", true, loader);
        Object session = credentials.getConstructor(String.class, String.class)
            .newInstance(ak, args.getOrDefault("sk", ""));
        Class<?> hook = Class.forName("org.apache.rocketmq.acl.common.AclClientRPCHook", true, loader);
        return (RPCHook) hook.getConstructor(credentials).newInstance(session);
    }

    static void failed(String name, Throwable e) {
        Map<String, Object> ev = event(name);
        int code = -1;
        String remark = String.valueOf(e.getMessage());
        Throwable t = e;
        while (t != null) {
            if (t instanceof MQBrokerException) {
                code = ((MQBrokerException) t).getResponseCode();
                remark = ((MQBrokerException) t).getErrorMessage();
                break;
            }
            if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() > 0) {
                code = ((MQClientException) t).getResponseCode();
                remark = ((MQClientException) t).getErrorMessage();
            }
            t = t.getCause();
        }
        ev.put("code", code);
        ev.put("remark", remark);
        emit(ev);
    }

    static void produce() throws Exception {
        String topic = require("topic");
        int count = intArg("count", 1);
        DefaultMQProducer producer = new DefaultMQProducer(args.getOrDefault("group", "auth_producer"), hook());
        producer.setNamesrvAddr(require("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName(instance("producer"));
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(15000); // the first send to a JVM broker on a loaded machine
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, "TagA", ("auth-" + i).getBytes(StandardCharsets.UTF_8));
                try {
                    SendResult result = producer.send(msg);
                    Map<String, Object> ev = event("sent");
                    ev.put("status", String.valueOf(result.getSendStatus()));
                    emit(ev);
                } catch (MQClientException | MQBrokerException e) {
                    failed("send-failed", e);
                    return;
                }
            }
        } finally {
            producer.shutdown();
        }
    }

    static void query() throws Exception {
        String topic = require("topic");
        DefaultMQProducer producer = new DefaultMQProducer(args.getOrDefault("group", "auth_producer"), hook());
        producer.setNamesrvAddr(require("namesrv"));
        producer.setVipChannelEnabled(false);
        producer.setInstanceName(instance("query"));
        producer.setSendMsgTimeout(15000);
        producer.start();
        try {
            byte[] body = "auth-query".getBytes(StandardCharsets.UTF_8);
            String id = producer.send(new Message(topic, "TagQ", body)).getMsgId();
            Exception last = null;
            while (remainingMs() > 0) {
                try {
                    MessageExt found = producer.getDefaultMQProducerImpl().queryMessageByUniqKey(topic, id);
                    if (found != null) {
                        Map<String, Object> ev = event("queried");
                        ev.put("same_body", Arrays.equals(found.getBody(), body));
                        emit(ev);
                        return;
                    }
                } catch (MQClientException e) {
                    last = e; // not indexed yet, or refused: the last failure is reported
                }
                Thread.sleep(200);
            }
            failed("query-failed", last == null ? new IllegalStateException("not found") : last);
        } finally {
            producer.shutdown();
        }
    }

    static void pull() throws Exception {
        String topic = require("topic");
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(require("group"), hook());
        consumer.setNamesrvAddr(require("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName(instance("pull"));
        consumer.start();
        try {
            Set<MessageQueue> mqs = consumer.fetchSubscribeMessageQueues(topic);
            List<MessageQueue> queues = new ArrayList<>(mqs);
            queues.sort(null);
            int total = 0;
            for (MessageQueue mq : queues) {
                try {
                    PullResult r = consumer.pull(mq, "*", 0, 32, 3000);
                    total += r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size();
                } catch (MQClientException | MQBrokerException e) {
                    failed("pull-failed", e);
                    return;
                }
            }
            Map<String, Object> ev = event("pulled");
            ev.put("count", total);
            emit(ev);
        } finally {
            consumer.shutdown();
        }
    }

    static void consume() throws Exception {
        int expect = intArg("expect", 1);
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(require("group"), hook(), new AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(require("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName(instance("consumer"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(require("topic"), "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            received.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            while (received.get() < expect && remainingMs() > 0) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        Map<String, Object> ev = event("consumed");
        ev.put("count", received.get());
        emit(ev);
    }
}
