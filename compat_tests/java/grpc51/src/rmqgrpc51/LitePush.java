package rmqgrpc51;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.java.exception.LiteSubscriptionQuotaExceededException;

/**
 * A LitePushConsumer of the RocketMQ 5 gRPC client (rocketmq-client-java 5.1.0, unmodified),
 * with a Producer sending to lite topics of the same LITE parent in the same process. One line per
 * outcome on stdout, read by compat_tests/test_grpc_lite55_compat.py:
 *
 * <pre>
 *   SUBSCRIBED &lt;lite topic&gt;                subscribeLite returned
 *   UNSUBSCRIBED &lt;lite topic&gt;              unsubscribeLite returned
 *   RECEIVED &lt;lite topic&gt; &lt;body&gt;          the listener got a message (in the order it saw them)
 *   QUOTA_EXCEEDED &lt;exception class&gt; &lt;message&gt;   subscribeLite refused by the quota
 *   FAILED &lt;exception class&gt; &lt;message&gt; [CAUSE &lt;class&gt; &lt;message&gt;]
 *   DONE
 * </pre>
 *
 * Usage: LitePush ENDPOINT MODE TOPIC GROUP COUNT SECONDS, MODE one of
 * <ul>
 * <li>push: subscribe {@code l0} and {@code l1}; send COUNT rounds of one message to each of
 * {@code l0} .. {@code l3} (bodies {@code <lite>-<round>}); once the 2 * COUNT messages of the
 * subscribed lite topics are in, unsubscribe {@code l1}, send {@code l1-after} then
 * {@code l0-after}, and end when {@code l0-after} is in;</li>
 * <li>quota: subscribe {@code q0}, {@code q1}, ... up to COUNT lite topics, one at a time, and
 * stop at the first refusal.</li>
 * </ul>
 * Everything within SECONDS.
 */
public final class LitePush {
    private static final List<String> LITE_TOPICS = Arrays.asList("l0", "l1", "l2", "l3");
    private static final long POLL_MS = 100;

    private LitePush() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String mode = args[1];
        String topic = args[2];
        String group = args[3];
        int count = Integer.parseInt(args[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000;
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        Received received = new Received();
        try (LitePushConsumer consumer = provider.newLitePushConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(group)
            .bindTopic(topic)
            .setMessageListener(received::consume)
            .build()) {
            if (mode.equals("quota")) {
                subscribeUntilRefused(consumer, count);
            } else {
                push(provider, configuration, consumer, received, topic, count, deadline);
            }
        } catch (Exception e) {
            line("FAILED " + describe(e));
        }
        line("DONE");
        System.exit(0);
    }

    private static void subscribeUntilRefused(LitePushConsumer consumer, int count) throws Exception {
        for (int index = 0; index < count; index++) {
            String lite = "q" + index;
            try {
                consumer.subscribeLite(lite);
            } catch (LiteSubscriptionQuotaExceededException e) {
                line("QUOTA_EXCEEDED " + describe(e));
                return;
            }
            line("SUBSCRIBED " + lite);
        }
    }

    private static void push(ClientServiceProvider provider, ClientConfiguration configuration,
        LitePushConsumer consumer, Received received, String topic, int rounds, long deadline) throws Exception {
        for (String lite : LITE_TOPICS.subList(0, 2)) {
            consumer.subscribeLite(lite);
            line("SUBSCRIBED " + lite);
        }
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .build()) {
            for (int index = 0; index < rounds; index++) {
                for (String lite : LITE_TOPICS) {
                    send(provider, producer, topic, lite, lite + "-" + index);
                }
            }
            Set<String> wanted = new HashSet<>();
            for (int index = 0; index < rounds; index++) {
                wanted.add("l0-" + index);
                wanted.add("l1-" + index);
            }
            if (!received.waitFor(wanted, deadline)) {
                line("FAILED the subscribed lite topics' messages did not all come");
                return;
            }
            consumer.unsubscribeLite("l1");
            line("UNSUBSCRIBED l1");
            send(provider, producer, topic, "l1", "l1-after");
            send(provider, producer, topic, "l0", "l0-after");
            if (!received.waitFor(Collections.singleton("l0-after"), deadline)) {
                line("FAILED l0-after did not come");
            }
        }
    }

    /** The lite producer: one message of {@code lite} under the LITE parent {@code topic}. */
    private static void send(ClientServiceProvider provider, Producer producer, String topic, String lite,
        String body) throws Exception {
        producer.send(provider.newMessageBuilder()
            .setTopic(topic)
            .setLiteTopic(lite)
            .setBody(body.getBytes(StandardCharsets.UTF_8))
            .build());
    }

    /** The listener: a RECEIVED line per message, the bodies kept for the waits. */
    private static final class Received {
        private final List<String> bodies = new ArrayList<>();

        synchronized ConsumeResult consume(MessageView view) {
            String body = StandardCharsets.UTF_8.decode(view.getBody()).toString();
            bodies.add(body);
            line("RECEIVED " + view.getLiteTopic().orElse("-") + " " + body);
            return ConsumeResult.SUCCESS;
        }

        boolean waitFor(Set<String> wanted, long deadline) throws InterruptedException {
            while (System.currentTimeMillis() < deadline) {
                synchronized (this) {
                    if (bodies.containsAll(wanted)) {
                        return true;
                    }
                }
                Thread.sleep(POLL_MS);
            }
            return false;
        }
    }

    private static synchronized void line(String text) {
        System.out.println(text.replace('\n', ' '));
        System.out.flush();
    }

    /** The exception's class and message, and the innermost cause's when the client wrapped one. */
    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = e.getClass().getName() + " " + e.getMessage();
        if (root != e) {
            text += " CAUSE " + root.getClass().getName() + " " + root.getMessage();
        }
        return text;
    }
}
