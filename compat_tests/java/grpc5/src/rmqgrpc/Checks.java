package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The endpoint's request checks as the official client meets them (rocketmq-client-java 5.0.8,
 * unmodified), many in one run. One line per check on stdout, read by
 * compat_tests/grpc_checks.py:
 *
 * <pre>
 *   CHECK &lt;name&gt; OK                                   the call succeeded
 *   CHECK &lt;name&gt; FAILED &lt;exception class&gt; &lt;message&gt;   refused (request id blanked)
 *   POLL &lt;await s&gt; &lt;ms from the receive's start to its end&gt; &lt;messages&gt;
 *   WAKE &lt;ms from the send's acknowledgement to the receive's end&gt; &lt;messages&gt;
 *   DONE
 * </pre>
 *
 * Usage: Checks ENDPOINT NORMAL_TOPIC FIFO_TOPIC DELAY_TOPIC POLL_TOPIC GROUP. The sends go to the
 * first three topics; the receives (long polling of 10 s and 20 s on the empty POLL_TOPIC, then one
 * woken by a send) to the fourth with GROUP.
 */
public final class Checks {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final int PROPERTY_LIMIT = 16 * 1024;
    private static final long HOUR_MS = 3600 * 1000L;

    private Checks() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String normal = args[1];
        String fifo = args[2];
        String delay = args[3];
        String poll = args[4];
        String group = args[5];
        ClientConfiguration configuration = Credentials.apply(ClientConfiguration.newBuilder())
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        try (Producer producer = PROVIDER.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(normal, fifo, delay, poll)
            .setMaxAttempts(1)
            .build()) {
            sends(producer, normal, fifo, delay);
            receives(configuration, producer, poll, group);
        } catch (Exception e) {
            System.out.println("FAILED " + Failures.describe(e));
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }

    private static MessageBuilder message(String topic) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setBody("check".getBytes(StandardCharsets.UTF_8));
    }

    private static String repeat(char c, int count) {
        StringBuilder text = new StringBuilder(count);
        for (int i = 0; i < count; i++) {
            text.append(c);
        }
        return text.toString();
    }

    private static MessageBuilder properties(String topic, int count) {
        MessageBuilder builder = message(topic);
        for (int i = 0; i < count; i++) {
            builder.addProperty("k" + i, "v");
        }
        return builder;
    }

    private interface Call {
        void run() throws Exception;
    }

    private static void check(String name, Call call) {
        try {
            call.run();
            System.out.println("CHECK " + name + " OK");
        } catch (Throwable e) {
            String text = e.getClass().getSimpleName() + " " + e.getMessage();
            System.out.println("CHECK " + name + " FAILED "
                + text.replaceAll("request-id=[^,\\]]*", "request-id=_").replace('\n', ' '));
        }
        System.out.flush();
    }

    private static void sends(Producer producer, String normal, String fifo, String delay) {
        check("key_control", () -> producer.send(message(normal).setKeys("a\u0001b").build()));
        check("tag_control", () -> producer.send(message(normal).setTag("a\u0001b").build()));
        check("property_key_control", () -> producer.send(message(normal).addProperty("k\u0001", "v").build()));
        check("property_value_control", () -> producer.send(message(normal).addProperty("k", "v\u0001").build()));
        check("properties_128", () -> producer.send(properties(normal, 128).build()));
        check("properties_129", () -> producer.send(properties(normal, 129).build()));
        // The size counts property keys and values, the tag and the keys, in UTF-8 bytes.
        check("property_size_at_limit", () -> producer.send(message(normal)
            .addProperty("p", repeat('v', PROPERTY_LIMIT - 1)).build()));
        check("property_size_over", () -> producer.send(message(normal)
            .addProperty("p", repeat('v', PROPERTY_LIMIT)).build()));
        check("key_size_over", () -> producer.send(message(normal).setKeys(repeat('k', PROPERTY_LIMIT + 1)).build()));
        check("tag_size_over", () -> producer.send(message(normal).setTag(repeat('t', PROPERTY_LIMIT + 1)).build()));
        check("tag_and_keys_at_limit", () -> producer.send(message(normal).setTag(repeat('t', PROPERTY_LIMIT / 2))
            .setKeys(repeat('k', PROPERTY_LIMIT / 2)).build()));
        check("message_group_63", () -> producer.send(message(fifo).setMessageGroup(repeat('g', 63)).build()));
        check("message_group_64", () -> producer.send(message(fifo).setMessageGroup(repeat('g', 64)).build()));
        check("message_group_control", () -> producer.send(message(fifo).setMessageGroup("g\u0001").build()));
        long now = System.currentTimeMillis();
        check("delivery_23h", () -> producer.send(message(delay).setDeliveryTimestamp(now + 23 * HOUR_MS).build()));
        check("delivery_25h", () -> producer.send(message(delay).setDeliveryTimestamp(now + 25 * HOUR_MS).build()));
    }

    private static SimpleConsumer consumer(ClientConfiguration configuration, String topic, String group,
        int awaitSeconds) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(awaitSeconds))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .build();
    }

    private static void receives(ClientConfiguration configuration, Producer producer, String topic, String group)
        throws Exception {
        try (SimpleConsumer consumer = consumer(configuration, topic, group, 10)) {
            check("invisible_9s", () -> consumer.receive(1, Duration.ofSeconds(9)));
            check("invisible_13h", () -> consumer.receive(1, Duration.ofHours(13)));
            long start = System.nanoTime();
            List<MessageView> none = consumer.receive(16, Duration.ofSeconds(15));
            System.out.println("POLL 10 " + (System.nanoTime() - start) / 1000000 + " " + none.size());
        }
        try (SimpleConsumer consumer = consumer(configuration, topic, group, 20)) {
            long start = System.nanoTime();
            List<MessageView> none = consumer.receive(16, Duration.ofSeconds(15));
            System.out.println("POLL 20 " + (System.nanoTime() - start) / 1000000 + " " + none.size());
            ExecutorService waiter = Executors.newSingleThreadExecutor();
            Future<List<MessageView>> woken = waiter.submit(() -> consumer.receive(16, Duration.ofSeconds(15)));
            Thread.sleep(3000);
            producer.send(message(topic).setKeys("wake").build());
            long sent = System.nanoTime();
            List<MessageView> views = woken.get();
            System.out.println("WAKE " + (System.nanoTime() - sent) / 1000000 + " " + views.size());
            waiter.shutdown();
            if (!views.isEmpty()) {
                MessageView view = views.get(0);
                check("change_invisible_20s", () -> consumer.changeInvisibleDuration(view, Duration.ofSeconds(20)));
                check("change_invisible_13h", () -> consumer.changeInvisibleDuration(view, Duration.ofHours(13)));
            }
        }
    }
}
