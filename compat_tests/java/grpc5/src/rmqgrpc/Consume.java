package rmqgrpc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * RocketMQ 5 gRPC consumers (rocketmq-client-java 5.0.8, unmodified). One line per outcome on
 * stdout, read by compat_tests/test_grpc_consume_compat.py:
 *
 * <pre>
 *   RECEIVED &lt;body&gt; &lt;delivery attempt&gt;   a message handed to the application
 *   ACKED &lt;body&gt;                          SimpleConsumer: its ack succeeded
 *   CHANGED &lt;body&gt;                        SimpleConsumer: invisible duration set to 1 s
 *   PROCESSED &lt;body&gt;                      pushslow: the listener returns SUCCESS after holding it
 *   EMPTY                                 SimpleConsumer: a receive found nothing more
 *   FAILED &lt;exception class&gt; &lt;message&gt; [CAUSE &lt;class&gt; &lt;message&gt;]
 *   DONE
 * </pre>
 *
 * Usage: Consume ENDPOINT MODE TOPIC GROUP COUNT SECONDS, MODE one of simple (receive and ack
 * COUNT messages, then one more receive), change (receive one, make it visible again in 1 s, receive
 * it again and ack), push (PushConsumer, SUCCESS for every message) and pushfail (PushConsumer,
 * FAILURE for every message) and pushslow (PushConsumer holding the first delivery of each message
 * COUNT seconds before SUCCESS; runs until one was processed, then 5 s more for a redelivery to
 * show). push runs until COUNT messages were seen; pushfail until a message's delivery attempt COUNT
 * was seen, then prints LAST_ATTEMPT and keeps receiving until its standard input closes: the
 * server, not the client, moves the message to the dead letter queue, on the receive after its last
 * attempt (the Proxy's PopMessageResultFilterImpl answers TO_DLQ), so the test closes the input once
 * it has found it there. All at most SECONDS.
 */
public final class Consume {
    private Consume() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String mode = args[1];
        String topic = args[2];
        String group = args[3];
        int count = Integer.parseInt(args[4]);
        long seconds = Long.parseLong(args[5]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = Credentials.apply(ClientConfiguration.newBuilder())
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        long deadline = System.currentTimeMillis() + seconds * 1000;
        try {
            if (mode.equals("pushslow")) {
                pushSlow(provider, configuration, topic, group, count, deadline);
            } else if (mode.startsWith("push")) {
                push(provider, configuration, topic, group, count, deadline, mode.equals("pushfail"));
            } else {
                simple(provider, configuration, topic, group, count, deadline, mode.equals("change"));
            }
        } catch (Exception e) {
            System.out.println("FAILED " + Failures.describe(e));
        }
        System.out.println("DONE");
        System.out.flush();
        System.exit(0);
    }

    private static void simple(ClientServiceProvider provider, ClientConfiguration configuration, String topic,
        String group, int count, long deadline, boolean change) throws Exception {
        SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(group)
            .setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .build();
        int acked = 0;
        boolean changed = false;
        while (acked < count && System.currentTimeMillis() < deadline) {
            List<MessageView> views = consumer.receive(16, Duration.ofSeconds(15));
            for (MessageView view : views) {
                String body = body(view);
                System.out.println("RECEIVED " + body + " " + view.getDeliveryAttempt());
                if (change && !changed) {
                    consumer.changeInvisibleDuration(view, Duration.ofSeconds(1));
                    changed = true;
                    System.out.println("CHANGED " + body);
                    continue;
                }
                consumer.ack(view);
                acked++;
                System.out.println("ACKED " + body);
            }
        }
        if (consumer.receive(16, Duration.ofSeconds(15)).isEmpty()) {
            System.out.println("EMPTY");
        }
        consumer.close();
    }

    private static void push(ClientServiceProvider provider, ClientConfiguration configuration, String topic,
        String group, int count, long deadline, boolean fail) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger attempts = new AtomicInteger();
        PushConsumer consumer = startPush(provider, configuration, topic, group, view -> {
            seen.add(body(view));
            attempts.accumulateAndGet(view.getDeliveryAttempt(), Math::max);
            return fail ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
        });
        while ((fail ? attempts.get() : seen.size()) < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        if (fail) {
            System.out.println("LAST_ATTEMPT");
            System.out.flush();
            Thread input = new Thread(() -> {
                try {
                    while (System.in.read() != -1) {
                        continue;
                    }
                } catch (IOException e) {
                    return;
                }
            });
            input.setDaemon(true);
            input.start();
            while (input.isAlive() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        }
        consumer.close();
    }

    private static void pushSlow(ClientServiceProvider provider, ClientConfiguration configuration, String topic,
        String group, int holdSeconds, long deadline) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicInteger processed = new AtomicInteger();
        PushConsumer consumer = startPush(provider, configuration, topic, group, view -> {
            String body = body(view);
            if (seen.add(body)) {
                try {
                    Thread.sleep(holdSeconds * 1000L);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                System.out.println("PROCESSED " + body);
                System.out.flush();
                processed.incrementAndGet();
            }
            return ConsumeResult.SUCCESS;
        });
        while (processed.get() == 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(Math.max(0, Math.min(5000, deadline - System.currentTimeMillis())));
        consumer.close();
    }

    /** A PushConsumer of every message of the topic that prints RECEIVED, then asks {@code then}. */
    private static PushConsumer startPush(ClientServiceProvider provider, ClientConfiguration configuration,
        String topic, String group, Function<MessageView, ConsumeResult> then) throws ClientException {
        return provider.newPushConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
            .setMessageListener(view -> {
                System.out.println("RECEIVED " + body(view) + " " + view.getDeliveryAttempt());
                System.out.flush();
                return then.apply(view);
            })
            .build();
    }

    private static String body(MessageView view) {
        return StandardCharsets.UTF_8.decode(view.getBody()).toString().replace(' ', '_');
    }
}
