package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Recalling delayed messages with a RocketMQ 5 gRPC producer (rocketmq-client-java 5.0.8,
 * unmodified): "recalled" is sent due in DELAY_MS and recalled with the handle its receipt carries
 * (twice), "kept" is sent due 2 s later and left alone, and a made-up handle is recalled. One line
 * per outcome on stdout, read by compat_tests/test_grpc_compat.py:
 *
 * <pre>
 *   SENT &lt;name&gt; &lt;message id&gt; &lt;handle: yes|no&gt;
 *   RECALLED &lt;name&gt; &lt;message id&gt;
 *   RECALL_FAILED &lt;name&gt; &lt;exception class&gt; &lt;message&gt;
 *   CLOSED
 * </pre>
 *
 * Usage: Recall ENDPOINT TOPIC DELAY_MS
 */
public final class Recall {
    private Recall() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String topic = args[1];
        long delay = Long.parseLong(args[2]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .build();
        long now = System.currentTimeMillis();
        String handle = send(provider, producer, topic, "recalled", now + delay);
        send(provider, producer, topic, "kept", now + delay + 2000);
        recall(producer, topic, "recalled", handle);
        recall(producer, topic, "again", handle);
        recall(producer, topic, "garbage", "bm90IGEgaGFuZGxl");
        producer.close();
        System.out.println("CLOSED");
        System.out.flush();
        System.exit(0);
    }

    private static String send(ClientServiceProvider provider, Producer producer, String topic, String name,
        long due) throws ClientException {
        SendReceipt receipt = producer.send(provider.newMessageBuilder()
            .setTopic(topic)
            .setTag("TagR")
            .setKeys(name)
            .setDeliveryTimestamp(due)
            .setBody(name.getBytes(StandardCharsets.UTF_8))
            .build());
        String handle = receipt.getRecallHandle();
        boolean present = handle != null && !handle.isEmpty();
        System.out.println("SENT " + name + " " + receipt.getMessageId() + " " + (present ? "yes" : "no"));
        System.out.flush();
        return handle;
    }

    private static void recall(Producer producer, String topic, String name, String handle) {
        try {
            RecallReceipt receipt = producer.recallMessage(topic, handle);
            System.out.println("RECALLED " + name + " " + receipt.getMessageId());
        } catch (ClientException | RuntimeException e) {
            String text = e.getMessage() == null ? "" : e.getMessage().replace('\n', ' ');
            System.out.println("RECALL_FAILED " + name + " " + e.getClass().getSimpleName() + " " + text);
        }
        System.out.flush();
    }
}
