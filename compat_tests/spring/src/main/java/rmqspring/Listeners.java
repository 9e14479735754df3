package rmqspring;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.MessageModel;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.annotation.SelectorType;
import org.apache.rocketmq.spring.core.RocketMQListener;
import org.apache.rocketmq.spring.core.RocketMQPushConsumerLifecycleListener;
import org.apache.rocketmq.spring.core.RocketMQReplyListener;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;

/**
 * The {@code @RocketMQMessageListener} beans: a TAG selector, a SQL92 selector, an orderly
 * listener, a broadcasting one, one for the transactional topic and a reply listener. Each prints a
 * "received" event (listener, body, tags, and the property {@code k} where set) and starts from
 * the first offset, so nothing sent while its rebalance is under way is skipped.
 */
final class Listeners {
    /** Route lookups at start-up (3 s by default) take longer while a loaded machine warms the JVM up. */
    static final int API_TIMEOUT_MS = 10_000;

    private Listeners() {
    }

    abstract static class Base implements RocketMQListener<MessageExt>, RocketMQPushConsumerLifecycleListener {
        private final String name;

        Base(String name) {
            this.name = name;
        }

        @Override
        public void onMessage(MessageExt m) {
            Events.emit("received", "listener", name, "body", new String(m.getBody(), StandardCharsets.UTF_8),
                "tags", String.valueOf(m.getTags()), "k", String.valueOf(m.getUserProperty("k")),
                "queueId", m.getQueueId(), "reconsumeTimes", m.getReconsumeTimes());
        }

        @Override
        public void prepareStart(DefaultMQPushConsumer consumer) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setMqClientApiTimeout(API_TIMEOUT_MS);
            consumer.setPullInterval(0);
        }
    }

    @Component
    @RocketMQMessageListener(topic = "SpTag", consumerGroup = "spTagG", selectorExpression = "TagA || TagC")
    static final class Tag extends Base {
        Tag() {
            super("tag");
        }
    }

    @Component
    @RocketMQMessageListener(topic = "SpSql", consumerGroup = "spSqlG", selectorType = SelectorType.SQL92,
        selectorExpression = "k IS NOT NULL AND k > 2")
    static final class Sql extends Base {
        Sql() {
            super("sql");
        }
    }

    @Component
    @RocketMQMessageListener(topic = "SpOrder", consumerGroup = "spOrderG", consumeMode = ConsumeMode.ORDERLY)
    static final class Orderly extends Base {
        Orderly() {
            super("orderly");
        }
    }

    @Component
    @RocketMQMessageListener(topic = "SpBroad", consumerGroup = "spBroadG", messageModel = MessageModel.BROADCASTING)
    static final class Broadcast extends Base {
        Broadcast() {
            super("broadcast");
        }
    }

    @Component
    @RocketMQMessageListener(topic = "SpTx", consumerGroup = "spTxG")
    static final class Tx extends Base {
        Tx() {
            super("tx");
        }
    }

    /** Answers each request with "pong:" and its body (the template's sendAndReceive waits for it). */
    @Component
    @RocketMQMessageListener(topic = "SpReply", consumerGroup = "spReplyG")
    static final class Reply implements RocketMQReplyListener<String, String>, RocketMQPushConsumerLifecycleListener {
        @Override
        public String onMessage(String body) {
            Events.emit("received", "listener", "reply", "body", body);
            return "pong:" + body;
        }

        @Override
        public void prepareStart(DefaultMQPushConsumer consumer) {
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.setMqClientApiTimeout(API_TIMEOUT_MS);
        }
    }
}
