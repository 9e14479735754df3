package rmqcompat;

import static rmqcompat.Delivery.*;
import static rmqcompat.Run.*;

import java.lang.reflect.Method;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * {@code consume}: a DefaultMQPushConsumer (clustering or broadcasting, concurrently or orderly)
 * that answers RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT to the first reconsume-later=K
 * deliveries of each message and success afterwards; ends at expect= acknowledged messages or
 * after duration= seconds. vip-channel=true: setVipChannelEnabled(true).
 */
final class Consume {
    private Consume() {
    }

    /** setMessageModel by reflection: its enum moved package between the 4.x and 5.x clients. */
    static void setModel(Object consumer, String model) throws Exception {
        for (Method m : consumer.getClass().getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1 && m.getParameterTypes()[0].isEnum()) {
                @SuppressWarnings({"unchecked", "rawtypes"})
                Object value = Enum.valueOf((Class) m.getParameterTypes()[0], model.toUpperCase());
                m.invoke(consumer, value);
                return;
            }
        }
        throw new IllegalStateException("no setMessageModel on " + consumer.getClass());
    }

    static int run() throws Exception {
        String topic = require("topic");
        String group = require("group");
        int expect = intArg("expect", 0);
        int later = intArg("reconsume-later", 0);
        boolean orderly = boolArg("orderly");
        Tally tally = new Tally(expect);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, boolArg("trace"), null);
        consumer.setNamesrvAddr(require("namesrv"));
        applyNamespace(consumer);
        consumer.setVipChannelEnabled(boolArg("vip-channel"));
        consumer.setInstanceName(instance("consumer"));
        // after a failed pull (e.g. a broker restart) retry after 200 ms instead of the default 3 s
        consumer.getDefaultMQPushConsumerImpl().setPullTimeDelayMillsWhenException(intArg("pull-delay-on-error-ms", 200));
        // The listener counts a message before it returns; its offset is updated after it returns, on the
        // consume thread. Without a grace period shutdown() persists offsets while the last batch's result
        // may still be in flight (seen as "Consume Diff Total: 1" in consumerProgress right after a run).
        consumer.setAwaitTerminationMillisWhenShutdown(10_000);
        consumer.subscribe(topic, args.getOrDefault("subscription", "*"));
        consumer.setConsumeFromWhere(fromWhere());
        if (args.containsKey("timestamp")) {
            consumer.setConsumeTimestamp(args.get("timestamp"));
        }
        setModel(consumer, args.getOrDefault("model", "clustering"));
        if (args.containsKey("max-reconsume")) {
            consumer.setMaxReconsumeTimes(intArg("max-reconsume", 16));
        }
        if (args.containsKey("suspend-ms")) {
            consumer.setSuspendCurrentQueueTimeMillis(intArg("suspend-ms", 1000));
        }
        if (orderly) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    int n = tally.see(uid(m));
                    boolean retry = n <= later;
                    emitReceived(m, retry ? "suspend" : "success", n);
                    if (retry) {
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                }
                for (MessageExt m : msgs) {
                    tally.ack(uid(m));
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                boolean retry = false;
                for (MessageExt m : msgs) {
                    int n = tally.see(uid(m));
                    retry |= n <= later;
                    emitReceived(m, n <= later ? "later" : "success", n);
                }
                if (retry) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                for (MessageExt m : msgs) {
                    tally.ack(uid(m));
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        consumer.start();
        try {
            return tally.finish(tally.await());
        } finally {
            lingerForTraces();
            consumer.shutdown();
        }
    }
}
