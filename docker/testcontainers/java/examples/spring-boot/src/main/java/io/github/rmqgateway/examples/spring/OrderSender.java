package io.github.rmqgateway.examples.spring;

import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.spring.core.RocketMQTemplate;
import org.apache.rocketmq.spring.support.RocketMQHeaders;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.stereotype.Service;

/** Publishes an order with its id as the message key and tag {@code created}. */
@Service
public class OrderSender {
    private final RocketMQTemplate template;

    public OrderSender(RocketMQTemplate template) {
        this.template = template;
    }

    /** Sends one order synchronously and returns the broker's answer. */
    public SendResult send(String orderId, String payload) {
        return template.syncSend(OrdersApplication.TOPIC + ":created",
                MessageBuilder.withPayload(payload).setHeader(RocketMQHeaders.KEYS, orderId).build());
    }
}
