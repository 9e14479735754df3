package io.github.rmqgateway.examples.junit5;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.rmqgateway.testcontainers.RocketMQGatewayContainer;
import io.github.rmqgateway.testcontainers.StoredMessage;
import io.github.rmqgateway.testcontainers.TopicType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * One gateway container for the whole class (a static {@code @Container}), two declared topics,
 * and the unmodified RocketMQ 5.3.3 producer and push consumer; one test starts a master/slave
 * pair of its own ({@link RocketMQGatewayContainer#withSlaveOf}).
 */
@Testcontainers
class OrdersTest {
    static final int COUNT = 20;

    @Container
    static final RocketMQGatewayContainer GATEWAY = new RocketMQGatewayContainer()
            .withTopic("orders", 4, TopicType.NORMAL)
            .withTopic("payments", 2, TopicType.NORMAL);

    static DefaultMQProducer producer;

    @BeforeAll
    static void startProducer() throws Exception {
        producer = new DefaultMQProducer("ordersProducer");
        producer.setNamesrvAddr(GATEWAY.getNamesrvAddr());
        producer.start();
    }

    @AfterAll
    static void stopProducer() {
        producer.shutdown();
    }

    @AfterEach
    void clearFaults() {
        GATEWAY.clearFaults();
    }

    @Test
    void declaredTopicHasItsQueuesBeforeAnySend() throws Exception {
        assertEquals(4, producer.fetchPublishMessageQueues("orders").size());
        assertEquals(2, producer.fetchPublishMessageQueues("payments").size());
    }

    @Test
    void producerRetriesThroughSystemBusyAndTheMessageIsStoredOnce() throws Exception {
        GATEWAY.addFault("SEND_MESSAGE_V2", 2, null, 2); // SYSTEM_BUSY for the first two tries

        Message message = new Message("payments", "TagPaid", "pay-42", "paid 42".getBytes(StandardCharsets.UTF_8));
        message.putUserProperty("currency", "EUR");
        SendResult result = producer.send(message); // retryTimesWhenSendFailed = 2: the third try

        assertEquals(SendStatus.SEND_OK, result.getSendStatus());
        Map<String, Object> rule = GATEWAY.faults().get(0);
        assertEquals(2L, rule.get("fired"));
        assertEquals(Boolean.FALSE, rule.get("active"));
        List<StoredMessage> stored = GATEWAY.awaitMessages("payments", 1, Duration.ofSeconds(10));
        assertEquals(1, stored.size(), "stored once: " + stored);
        StoredMessage paid = stored.get(0);
        assertEquals(result.getMsgId(), paid.msgId());
        assertEquals(result.getMessageQueue().getQueueId(), paid.queueId());
        assertEquals(result.getQueueOffset(), paid.queueOffset());
        assertEquals("pay-42", paid.keys());
        assertEquals("TagPaid", paid.tags());
        assertEquals("EUR", paid.property("currency"));
        assertEquals("paid 42", paid.body());
    }

    @Test
    void slaveStoresWhatItsSyncMasterAcknowledged() throws Exception {
        // inSyncReplicas=2: a SYNC_MASTER answers SEND_OK once the slave holds the message
        try (RocketMQGatewayContainer master = new RocketMQGatewayContainer()
                        .withBrokerName("broker-ha")
                        .withBrokerProperty("brokerRole", "SYNC_MASTER")
                        .withBrokerProperty("inSyncReplicas", "2")
                        .withTopic("replicated", 2, TopicType.NORMAL);
                RocketMQGatewayContainer slave = new RocketMQGatewayContainer().withSlaveOf(master)) {
            slave.start(); // starts the master first (a dependency); ready once brokerId 1 is registered
            DefaultMQProducer haProducer = new DefaultMQProducer("haProducer");
            haProducer.setNamesrvAddr(master.getNamesrvAddr());
            haProducer.start();
            Set<String> sentIds = new HashSet<>();
            try {
                for (int i = 0; i < 5; i++) {
                    Message message = new Message("replicated", ("copy " + i).getBytes(StandardCharsets.UTF_8));
                    SendResult result = haProducer.send(message);
                    assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                    assertEquals("broker-ha", result.getMessageQueue().getBrokerName());
                    sentIds.add(result.getMsgId());
                }
            } finally {
                haProducer.shutdown();
            }
            Set<String> onSlave = new HashSet<>();
            for (StoredMessage message : slave.awaitMessages("replicated", 5, Duration.ofSeconds(10))) {
                onSlave.add(message.msgId());
            }
            assertEquals(sentIds, onSlave);
        }
    }

    @Test
    void pushConsumerReceivesEverythingTheBrokerStored() throws Exception {
        Set<String> sentIds = new HashSet<>();
        for (int i = 0; i < COUNT; i++) {
            Message message = new Message("orders", "TagA", "order-" + i, ("order " + i).getBytes(StandardCharsets.UTF_8));
            SendResult result = producer.send(message);
            assertEquals(SendStatus.SEND_OK, result.getSendStatus());
            sentIds.add(result.getMsgId());
        }
        List<StoredMessage> stored = GATEWAY.awaitMessages("orders", COUNT, Duration.ofSeconds(10));
        Set<String> storedIds = new HashSet<>();
        for (StoredMessage message : stored) {
            storedIds.add(message.msgId());
            assertTrue(message.queueId() < 4, "queue " + message.queueId() + " of a 4-queue topic");
        }
        assertEquals(sentIds, storedIds);

        Set<String> received = ConcurrentHashMap.newKeySet();
        CountDownLatch all = new CountDownLatch(COUNT);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("ordersConsumer");
        consumer.setNamesrvAddr(GATEWAY.getNamesrvAddr());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe("orders", "TagA");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                if (received.add(message.getMsgId())) {
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
        assertEquals(sentIds, received);
    }
}
