package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * A RocketMQ 5 gRPC producer (rocketmq-client-java 5.0.8, unmodified) as an application uses it:
 * start (route query, telemetry settings), send, close. One line per outcome on stdout, read by
 * compat_tests/test_grpc_compat.py:
 *
 * <pre>
 *   STARTED
 *   SENT &lt;index&gt; &lt;message id&gt;
 *   FAILED &lt;index&gt; &lt;exception class&gt; &lt;message&gt; [CAUSE &lt;class&gt; &lt;message&gt;]
 *   START_FAILED &lt;exception class&gt; &lt;message&gt; [CAUSE &lt;class&gt; &lt;message&gt;]
 *   CLOSED
 * </pre>
 *
 * Usage: Produce ENDPOINT TLS(true|false) TOPIC COUNT [group=G | delayMs=N]
 */
public final class Produce {
    private Produce() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        boolean tls = Boolean.parseBoolean(args[1]);
        String topic = args[2];
        int count = Integer.parseInt(args[3]);
        String option = args.length > 4 ? args[4] : "";
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = Credentials.apply(ClientConfiguration.newBuilder())
            .setEndpoints(endpoint)
            .enableSsl(tls)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        Producer producer;
        try {
            producer = provider.newProducerBuilder()
                .setClientConfiguration(configuration)
                .setTopics(topic)
                .build();
        } catch (ClientException | RuntimeException e) {
            System.out.println("START_FAILED " + Failures.describe(e));
            System.out.flush();
            System.exit(0);
            return;
        }
        System.out.println("STARTED");
        for (int i = 0; i < count; i++) {
            MessageBuilder builder = provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("TagA")
                .setKeys("key-" + i)
                .addProperty("index", Integer.toString(i))
                .setBody(("grpc message " + i + " 中文").getBytes(StandardCharsets.UTF_8));
            if (option.startsWith("group=")) {
                builder.setMessageGroup(option.substring("group=".length()));
            } else if (option.startsWith("delayMs=")) {
                long delay = Long.parseLong(option.substring("delayMs=".length()));
                builder.setDeliveryTimestamp(System.currentTimeMillis() + delay);
            }
            Message message = builder.build();
            try {
                SendReceipt receipt = producer.send(message);
                System.out.println("SENT " + i + " " + receipt.getMessageId());
            } catch (ClientException | RuntimeException e) {
                System.out.println("FAILED " + i + " " + Failures.describe(e));
            }
        }
        producer.close();
        System.out.println("CLOSED");
        System.out.flush();
        System.exit(0);
    }
}
