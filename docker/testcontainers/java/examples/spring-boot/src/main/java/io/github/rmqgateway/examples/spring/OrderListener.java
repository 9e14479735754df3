package io.github.rmqgateway.examples.spring;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQPushConsumerLifecycleListener;
import org.springframework.stereotype.Component;

/** Receives the orders; keeps their keys and bodies for whoever wants to see them. */
@Component
@RocketMQMessageListener(topic = OrdersApplication.TOPIC, consumerGroup = "spring-orders-listener")
public class OrderListener implements RocketMQListener<MessageExt>, RocketMQPushConsumerLifecycleListener {
    private final BlockingQueue<String> received = new LinkedBlockingQueue<>();

    @Override
    public void onMessage(MessageExt message) {
        received.add(message.getKeys() + "=" + new String(message.getBody(), StandardCharsets.UTF_8));
    }

    /** A new group starts from the first message, so nothing sent during its rebalance is missed. */
    @Override
    public void prepareStart(DefaultMQPushConsumer consumer) {
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
    }

    /** What was received, as {@code key=body}, in arrival order. */
    public BlockingQueue<String> received() {
        return received;
    }
}
