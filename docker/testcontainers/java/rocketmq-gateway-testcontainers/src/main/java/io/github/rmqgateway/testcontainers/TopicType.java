package io.github.rmqgateway.testcontainers;

/**
 * The message type of a declared topic: the value of its {@code +message.type} attribute, which a
 * RocketMQ 5 gRPC producer's send is checked against (a FIFO message to a NORMAL topic is refused).
 * Mirrors org.apache.rocketmq.common.attribute.TopicMessageType.
 */
public enum TopicType {
    /** Plain messages (the default of an auto-created topic). */
    NORMAL,
    /** Messages with a message group, delivered in order per group. */
    FIFO,
    /** Messages with a delivery time. */
    DELAY,
    /** Half messages of transactions. */
    TRANSACTION
}
