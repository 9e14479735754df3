package io.github.rmqgateway.examples.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.github.rmqgateway.testcontainers.RocketMQGatewayContainer;
import io.github.rmqgateway.testcontainers.StoredMessage;
import io.github.rmqgateway.testcontainers.TopicType;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The application against the gateway container: the container starts before the Spring context
 * (a static {@code @Container}), and {@code @DynamicPropertySource} hands its NameServer address to
 * rocketmq-spring-boot-starter.
 */
@SpringBootTest
@Testcontainers
class OrdersApplicationTest {
    @Container
    static final RocketMQGatewayContainer GATEWAY = new RocketMQGatewayContainer()
            .withTopic(OrdersApplication.TOPIC, 4, TopicType.NORMAL);

    @DynamicPropertySource
    static void rocketmq(DynamicPropertyRegistry registry) {
        registry.add("rocketmq.name-server", GATEWAY::getNamesrvAddr);
        registry.add("rocketmq.producer.group", () -> "spring-orders-producer");
    }

    @Autowired
    OrderSender sender;

    @Autowired
    OrderListener listener;

    @Test
    void anOrderIsStoredAndReceived() throws Exception {
        SendResult result = sender.send("order-7", "7 apples");

        assertEquals(SendStatus.SEND_OK, result.getSendStatus());
        List<StoredMessage> stored = GATEWAY.awaitMessages(OrdersApplication.TOPIC, 1, Duration.ofSeconds(10));
        assertEquals(1, stored.size());
        assertEquals(result.getMsgId(), stored.get(0).msgId());
        assertEquals("order-7", stored.get(0).keys());
        assertEquals("created", stored.get(0).tags());
        assertEquals("7 apples", stored.get(0).body());
        assertEquals("order-7=7 apples", listener.received().poll(60, TimeUnit.SECONDS));
    }
}
