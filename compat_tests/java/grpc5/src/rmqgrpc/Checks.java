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
 * Usage: Checks ENDPOINT NORMAL_TOPIC FIFO_TOPIC DELAY_TOPIC POLL_TOPIC WAKE_TOPIC GROUP. The
 * checked sends go to the first three topics while three receives wait: two awaiting 10 s and 20 s
 * on the empty POLL_TOPIC with GROUP, one on the empty WAKE_TOPIC (group GROUP + "Wake") which a
 * send to that topic ends 3 s after its start. Each receive is timed in its own thread.
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
        String wake = args[5];
        String group = args[6];
        ClientConfiguration configuration = Credentials.apply(ClientConfiguration.newBuilder())
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        try (Producer producer = PROVIDER.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(normal, fifo, delay, wake)
            .setMaxAttempts(1)
            .build()) {
            receives(configuration, producer, normal, fifo, delay, poll, wake, group);
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

    /** A receive of at most 16 messages in the background; its start and end in {@code times}. */
    private static Future<List<MessageView>> receive(ExecutorService pool, SimpleConsumer consumer, long[] times) {
        return pool.submit(() -> {
            times[0] = System.nanoTime();
            try {
                return consumer.receive(16, Duration.ofSeconds(15));
            } finally {
                times[1] = System.nanoTime();
            }
        });
    }

    private static void receives(ClientConfiguration configuration, Producer producer, String normal, String fifo,
        String delay, String poll, String wakeTopic, String group) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try (SimpleConsumer await10 = consumer(configuration, poll, group, 10);
             SimpleConsumer await20 = consumer(configuration, poll, group, 20);
             SimpleConsumer woken = consumer(configuration, wakeTopic, group + "Wake", 20)) {
            check("invisible_9s", () -> await10.receive(1, Duration.ofSeconds(9)));
            check("invisible_13h", () -> await10.receive(1, Duration.ofHours(13)));
            long[] times10 = new long[2];
            long[] times20 = new long[2];
            long[] timesWake = new long[2];
            long started = System.nanoTime();
            Future<List<MessageView>> poll10 = receive(pool, await10, times10);
            Future<List<MessageView>> poll20 = receive(pool, await20, times20);
            Future<List<MessageView>> wake = receive(pool, woken, timesWake);
            sends(producer, normal, fifo, delay);  // while the receives wait
            long sleep = 3000 - (System.nanoTime() - started) / 1000000;
            if (sleep > 0) {
                Thread.sleep(sleep);
            }
            producer.send(message(wakeTopic).setKeys("wake").build());
            long sent = System.nanoTime();
            List<MessageView> views = wake.get();
            System.out.println("WAKE " + (timesWake[1] - sent) / 1000000 + " " + views.size());
            if (!views.isEmpty()) {
                MessageView view = views.get(0);
                check("change_invisible_20s", () -> woken.changeInvisibleDuration(view, Duration.ofSeconds(20)));
                check("change_invisible_13h", () -> woken.changeInvisibleDuration(view, Duration.ofHours(13)));
            }
            int count10 = poll10.get().size();
            int count20 = poll20.get().size();
            System.out.println("POLL 10 " + (times10[1] - times10[0]) / 1000000 + " " + count10);
            System.out.println("POLL 20 " + (times20[1] - times20[0]) / 1000000 + " " + count20);
        } finally {
            pool.shutdown();
        }
    }
}
