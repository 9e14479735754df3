import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Store compatibility scenario for compat_tests/test_store_compat.py, compiled at test time
 * against the reference jars. One line of tab-separated output per message.
 *
 *   produce NAMESRV TOPIC COUNT   SENT i queueId queueOffset uniqKey offsetMsgId keys tags
 *                                 (then a batch of 3 to queue 0: BATCH lines, same columns)
 *   consume NAMESRV TOPIC COUNT   RECV queueId queueOffset uniqKey keys tags bodyLength body
 *   query NAMESRV TOPIC KEY...    QUERY key count queueOffsets...
 */
public final class StoreScenario {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String namesrv = args[1];
        String topic = args[2];
        try {
            if (mode.equals("produce")) {
                produce(namesrv, topic, Integer.parseInt(args[3]));
            } else if (mode.equals("consume")) {
                consume(namesrv, topic, Integer.parseInt(args[3]));
            } else {
                query(namesrv, topic, args);
            }
            System.out.println("DONE");
        } catch (Throwable e) {
            e.printStackTrace();
        }
        System.exit(0);
    }

    /** The first send of a fresh broker may come before its registration reaches the NameServer. */
    static SendResult sendWithRetry(DefaultMQProducer producer, Message msg, int i) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                return producer.send(msg, (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), i);
            } catch (Exception e) {
                if (attempt >= 60) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    static String body(int i) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < 600 + (i % 7) * 100) {
            sb.append("message-").append(i).append(' ');
        }
        return sb.toString();
    }

    static void produce(String namesrv, String topic, int count) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("store_compat_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(10000);
        producer.setCompressMsgBodyOverHowmuch(1 << 20);
        producer.start();
        for (int i = 0; i < count; i++) {
            String keys = "k-" + i + " common-" + (i % 5);
            String tags = "Tag" + (i % 3);
            Message msg = new Message(topic, tags, keys, body(i).getBytes(StandardCharsets.UTF_8));
            SendResult r = sendWithRetry(producer, msg, i);
            System.out.println("SENT\t" + i + "\t" + r.getMessageQueue().getQueueId() + "\t" + r.getQueueOffset()
                + "\t" + r.getMsgId() + "\t" + r.getOffsetMsgId() + "\t" + keys + "\t" + tags);
        }
        List<Message> batch = new ArrayList<>();
        for (int j = 0; j < 3; j++) {
            batch.add(new Message(topic, "TagB", "batch-" + j, body(1000 + j).getBytes(StandardCharsets.UTF_8)));
        }
        MessageQueue q0 = null;
        for (MessageQueue mq : producer.fetchPublishMessageQueues(topic)) {
            if (mq.getQueueId() == 0) {
                q0 = mq;
            }
        }
        SendResult r = producer.send(batch, q0);
        String[] offsetIds = r.getOffsetMsgId().split(",");
        for (int j = 0; j < 3; j++) {
            System.out.println("BATCH\t" + (1000 + j) + "\t" + r.getMessageQueue().getQueueId() + "\t" + (r.getQueueOffset() + j)
                + "\t" + batch.get(j).getProperty("UNIQ_KEY") + "\t" + offsetIds[j] + "\tbatch-" + j + "\tTagB");
        }
        producer.shutdown();
    }

    static void consume(String namesrv, String topic, int count) throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("store_compat_consumer");
        consumer.setNamesrvAddr(namesrv);
        consumer.setAutoCommit(false);
        consumer.start();
        Collection<MessageQueue> mqs = consumer.fetchMessageQueues(topic);
        consumer.assign(mqs);
        for (MessageQueue mq : mqs) {
            consumer.seek(mq, 0);
        }
        int seen = 0;
        long deadline = System.currentTimeMillis() + 60000;
        while (seen < count && System.currentTimeMillis() < deadline) {
            for (MessageExt m : consumer.poll(1000)) {
                seen++;
                System.out.println("RECV\t" + m.getQueueId() + "\t" + m.getQueueOffset() + "\t" + m.getMsgId()
                    + "\t" + m.getKeys() + "\t" + m.getTags() + "\t" + m.getBody().length + "\t"
                    + new String(m.getBody(), StandardCharsets.UTF_8));
            }
        }
        consumer.shutdown();
    }

    static void query(String namesrv, String topic, String[] args) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt("store_compat_admin");
        admin.setNamesrvAddr(namesrv);
        admin.start();
        for (int i = 3; i < args.length; i++) {
            StringBuilder offsets = new StringBuilder();
            int n = 0;
            try {
                QueryResult r = admin.queryMessage(topic, args[i], 32, 0, Long.MAX_VALUE);
                for (MessageExt m : r.getMessageList()) {
                    offsets.append('\t').append(m.getQueueId()).append(':').append(m.getQueueOffset());
                    n++;
                }
            } catch (Exception e) {
                offsets.append("\terror ").append(e.getClass().getSimpleName());
            }
            System.out.println("QUERY\t" + args[i] + "\t" + n + offsets);
        }
        admin.shutdown();
    }
}
