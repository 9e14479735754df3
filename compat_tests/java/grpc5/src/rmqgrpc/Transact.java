package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * A RocketMQ 5 gRPC transactional producer (rocketmq-client-java 5.0.8, unmodified): three
 * half messages, "commit" committed, "rollback" rolled back, "check" left open so the broker
 * checks it back; the checker commits it. One line per outcome on stdout:
 *
 * <pre>
 *   SENT &lt;name&gt; &lt;message id&gt;
 *   ENDED &lt;name&gt;
 *   CHECKED &lt;message id&gt; &lt;keys&gt;
 *   NO_CHECK        (none within the wait)
 *   CLOSED
 * </pre>
 *
 * Usage: Transact ENDPOINT TLS(true|false) TOPIC CHECK_WAIT_SECONDS
 */
public final class Transact {
    private Transact() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        boolean tls = Boolean.parseBoolean(args[1]);
        String topic = args[2];
        long waitSeconds = Long.parseLong(args[3]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(tls)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        CountDownLatch checked = new CountDownLatch(1);
        Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .setTransactionChecker(view -> {
                System.out.println("CHECKED " + view.getMessageId() + " " + String.join(",", view.getKeys()));
                System.out.flush();
                checked.countDown();
                return TransactionResolution.COMMIT;
            })
            .build();
        for (String name : new String[] {"commit", "rollback", "check"}) {
            Transaction transaction = producer.beginTransaction();
            Message message = provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("TagT")
                .setKeys(name)
                .setBody(("transactional " + name).getBytes(StandardCharsets.UTF_8))
                .build();
            SendReceipt receipt = producer.send(message, transaction);
            System.out.println("SENT " + name + " " + receipt.getMessageId());
            if (name.equals("commit")) {
                transaction.commit();
                System.out.println("ENDED " + name);
            } else if (name.equals("rollback")) {
                transaction.rollback();
                System.out.println("ENDED " + name);
            }
            System.out.flush();
        }
        if (!checked.await(waitSeconds, TimeUnit.SECONDS)) {
            System.out.println("NO_CHECK");
        }
        producer.close();
        System.out.println("CLOSED");
        System.out.flush();
        System.exit(0);
    }
}
