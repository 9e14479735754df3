package rmqgateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.utility.DockerImageName;

/**
 * The gateway image as a Java project would use it: a GenericContainer on the host network
 * (free ports, loopback only), ready when the image's HEALTHCHECK (a protocol probe of the
 * NameServer) passes, and the unmodified RocketMQ 5.3.3 producer and push consumer.
 */
@Testcontainers
class GatewayContainerTest {
    static final int NAMESRV_PORT = freePort();
    static final int BROKER_PORT = freePort();
    static final int COUNT = 50;

    @Container
    static final GenericContainer<?> GATEWAY =
            new GenericContainer<>(DockerImageName.parse(System.getProperty("rmq.gateway.image", "rmq-gateway:local")))
                    .withNetworkMode("host")
                    .withEnv("RMQ_HOST", "127.0.0.1")
                    .withEnv("NAMESRV_PORT", String.valueOf(NAMESRV_PORT))
                    .withEnv("BROKER_PORT", String.valueOf(BROKER_PORT))
                    .waitingFor(Wait.forHealthcheck().withStartupTimeout(Duration.ofSeconds(60)));

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static String namesrv() {
        return "127.0.0.1:" + NAMESRV_PORT;
    }

    @Test
    void producerSendsAndPushConsumerReceivesEverything() throws Exception {
        String topic = "JavaTestcontainers";
        DefaultMQProducer producer = new DefaultMQProducer("javaTcProducer");
        producer.setNamesrvAddr(namesrv());
        producer.start();
        Set<String> sent = new HashSet<>();
        try {
            for (int i = 0; i < COUNT; i++) {
                String body = "hello " + i;
                SendResult result = producer.send(new Message(topic, "TagA", body.getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                sent.add(body);
            }
        } finally {
            producer.shutdown();
        }

        Set<String> received = ConcurrentHashMap.newKeySet();
        CountDownLatch all = new CountDownLatch(COUNT);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("javaTcConsumer");
        consumer.setNamesrvAddr(namesrv());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                if (received.add(new String(message.getBody(), StandardCharsets.UTF_8))) {
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            assertTrue(all.await(60, TimeUnit.SECONDS), "received " + received.size() + " of " + COUNT);
        } finally {
            consumer.shutdown();
        }
        assertEquals(sent, received);
    }
}
