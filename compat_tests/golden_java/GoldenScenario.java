package rmqgolden;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Golden-vector scenarios for compat_tests/record_golden.py, compiled against one real client line
 * (4.9.8 or 5.3.3; only APIs present in both are used). Every message carries a KEYS value
 * "golden-KIND-LINE" so the recorder finds its stored record. One JSON object per line on stdout.
 *
 * Usage: GoldenScenario COMMAND NAMESRV TOPIC GROUP LINE
 * Commands: send-basic, send-big, send-ipv6, transaction, consume, orderly, litepull, pull.
 */
public final class GoldenScenario {
    private static final int BIG_BODY = 4 * 1024 * 1024; // DefaultMQProducer.maxMessageSize default
    private static final long WAIT_MS = 20000; // every wait below is bounded by this

    public static void main(String[] args) throws Exception {
        String cmd = args[0];
        String ns = args[1];
        String topic = args[2];
        String group = args[3];
        String line = args[4];
        switch (cmd) {
            case "send-basic": sendBasic(ns, topic, group, line); break;
            case "send-big": sendBig(ns, topic, group, line); break;
            case "send-ipv6": sendOne(ns, topic, group, line, "ipv6"); break;
            case "transaction": transaction(ns, topic, group, line); break;
            case "consume": consume(ns, topic, group, line); break;
            case "orderly": orderly(ns, topic, group); break;
            case "litepull": litePull(ns, topic, group); break;
            case "pull": pull(ns, topic, group, line); break;
            default: throw new IllegalArgumentException(cmd);
        }
        System.exit(0);
    }

    static String key(String kind, String line) {
        return "golden-" + kind + "-" + line;
    }

    static void event(String name, String detail) {
        System.out.println("{\"event\":\"" + name + "\",\"detail\":\"" + detail.replace("\\", "\\\\").replace("\"", "'").replace("\n", "\\n").replace("\r", "") + "\"}");
        System.out.flush();
    }

    static DefaultMQProducer producer(String ns, String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setSendMsgTimeout(10000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        return p;
    }

    static void send(DefaultMQProducer p, String kind, Message m) {
        try {
            SendResult r = p.send(m);
            event("sent " + kind, r.getSendStatus() + " " + r.getOffsetMsgId() + " q" + r.getMessageQueue().getQueueId() + " o" + r.getQueueOffset());
        } catch (Exception e) {
            event("send failed " + kind, e.toString());
        }
    }

    static void sendOne(String ns, String topic, String group, String line, String kind) throws Exception {
        DefaultMQProducer p = producer(ns, group);
        send(p, kind, new Message(topic, "TagA", key(kind, line), ("hello " + kind).getBytes(StandardCharsets.UTF_8)));
        p.shutdown();
    }

    static void sendBasic(String ns, String topic, String group, String line) throws Exception {
        DefaultMQProducer p = producer(ns, group);
        send(p, "ascii", new Message(topic, "TagA", key("ascii", line), "Hello RocketMQ golden".getBytes(StandardCharsets.UTF_8)));
        Message cn = new Message(topic, "标签", "键一 " + key("chinese", line), "你好，世界！消息体 🚀".getBytes(StandardCharsets.UTF_8));
        cn.putUserProperty("颜色", "蓝色");
        send(p, "chinese", cn);
        try {
            p.send(new Message(topic, "TagA", key("empty", line), new byte[0]));
            event("sent empty", "unexpectedly accepted");
        } catch (Exception e) {
            event("refused empty", e.toString());
        }
        StringBuilder text = new StringBuilder();
        for (int i = 0; text.length() < 10000; i++) {
            text.append("compressible line ").append(i % 10).append('\n');
        }
        send(p, "compressed", new Message(topic, "TagC", key("compressed", line), text.toString().getBytes(StandardCharsets.UTF_8)));
        send(p, "retry", new Message(topic, "TagR", key("retry", line), "consume me twice".getBytes(StandardCharsets.UTF_8)));
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            batch.add(new Message(topic, "TagB", key("batch" + i, line), ("batch body " + i).getBytes(StandardCharsets.UTF_8)));
        }
        try {
            SendResult r = p.send(batch);
            event("sent batch", r.getSendStatus() + " " + r.getOffsetMsgId());
        } catch (Exception e) {
            event("send failed batch", e.toString());
        }
        p.shutdown();
    }

    static void sendBig(String ns, String topic, String group, String line) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setSendMsgTimeout(15000);
        p.setRetryTimesWhenSendFailed(0);
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE); // keep the 4 MiB body uncompressed
        p.start();
        byte[] body = new byte[BIG_BODY];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i % 251);
        }
        send(p, "big", new Message(topic, "TagBig", key("big", line), body));
        p.shutdown();
    }

    static void transaction(String ns, String topic, String group, String line) throws Exception {
        final AtomicInteger checks = new AtomicInteger();
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setSendMsgTimeout(10000);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                String k = msg.getKeys();
                if (k.startsWith("golden-txcommit")) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                if (k.startsWith("golden-txrollback")) {
                    return LocalTransactionState.ROLLBACK_MESSAGE;
                }
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.incrementAndGet();
                event("checked", msg.getKeys());
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        p.start();
        for (String kind : new String[] {"txcommit", "txrollback", "txcheck"}) {
            try {
                SendResult r = p.sendMessageInTransaction(
                    new Message(topic, "TagT", key(kind, line), ("transaction " + kind).getBytes(StandardCharsets.UTF_8)), null);
                event("sent " + kind, r.getSendStatus() + " " + r.getOffsetMsgId());
            } catch (Exception e) {
                event("send failed " + kind, e.toString());
            }
        }
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (checks.get() == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        Thread.sleep(1000); // the END_TRANSACTION answering the check is oneway
        event("transaction checks", String.valueOf(checks.get()));
        p.shutdown();
    }

    static DefaultMQPushConsumer pushConsumer(String ns, String topic, String group) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        return c;
    }

    static void consume(String ns, String topic, String group, String line) throws Exception {
        final Set<String> seen = ConcurrentHashMap.newKeySet();
        final AtomicInteger retried = new AtomicInteger();
        DefaultMQPushConsumer c = pushConsumer(ns, topic, group);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (m.getKeys() != null && m.getKeys().startsWith("golden-retry") && m.getReconsumeTimes() == 0) {
                    ctx.setDelayLevelWhenNextConsume(1); // back after 1 s instead of 10 s
                    event("reconsume later", m.getKeys());
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                if (m.getReconsumeTimes() > 0) {
                    retried.incrementAndGet();
                }
                seen.add(m.getKeys());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (retried.get() == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        Thread.sleep(6000); // offsets are committed every 5 s
        event("consumed", seen.size() + " keys, " + retried.get() + " redelivered");
        c.shutdown();
    }

    static void orderly(String ns, String topic, String group) throws Exception {
        final AtomicInteger n = new AtomicInteger();
        DefaultMQPushConsumer c = pushConsumer(ns, topic, group);
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            n.addAndGet(msgs.size());
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (n.get() == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
        }
        Thread.sleep(2000);
        event("consumed orderly", String.valueOf(n.get()));
        c.shutdown();
    }

    static void litePull(String ns, String topic, String group) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.start();
        int n = 0;
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (n == 0 && System.currentTimeMillis() < deadline) {
            n += c.poll(1000).size();
        }
        Thread.sleep(6000); // auto commit interval 5 s
        event("lite pulled", String.valueOf(n));
        c.shutdown();
    }

    /** VIEW_MESSAGE_BY_ID: viewMessage(offsetMsgId) in 4.9.8, viewMessage(topic, msgId) in 5.x. */
    static MessageExt view(DefaultMQPullConsumer c, String topic, String id) throws Exception {
        try {
            return (MessageExt) c.getClass().getMethod("viewMessage", String.class, String.class).invoke(c, topic, id);
        } catch (NoSuchMethodException e) {
            return (MessageExt) c.getClass().getMethod("viewMessage", String.class).invoke(c, id);
        }
    }

    @SuppressWarnings("deprecation")
    static void pull(String ns, String topic, String group, String line) throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(group);
        c.setNamesrvAddr(ns);
        c.start();
        Collection<MessageQueue> queues = c.fetchSubscribeMessageQueues(topic);
        String firstId = null;
        for (MessageQueue mq : queues) {
            long min = c.minOffset(mq);
            long max = c.maxOffset(mq);
            c.searchOffset(mq, System.currentTimeMillis() - 3600000L);
            PullResult r = c.pull(mq, "*", min, 32);
            event("pulled", mq.getQueueId() + " " + r.getPullStatus() + " " + min + ".." + max);
            if (firstId == null && r.getMsgFoundList() != null && !r.getMsgFoundList().isEmpty()) {
                MessageExt m = r.getMsgFoundList().get(0);
                firstId = MessageDecoder.createMessageId(m.getStoreHost(), m.getCommitLogOffset());
                c.earliestMsgStoreTime(mq);
            }
        }
        try {
            if (firstId != null) {
                event("viewed", view(c, topic, firstId).getKeys());
            }
            long now = System.currentTimeMillis();
            event("queried", String.valueOf(c.queryMessage(topic, key("ascii", line), 4, 0, now + 60000).getMessageList().size()));
        } catch (Exception e) {
            event("view/query failed", e.toString());
        }
        c.shutdown();
    }
}
