package rmqcompat;

import static rmqcompat.Delivery.*;
import static rmqcompat.Run.*;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * {@code litepull}: a DefaultLitePullConsumer that subscribes (the client rebalances and commits
 * offsets) or assigns every queue of the topic, optionally seeking each to seek=OFFSET (event
 * "seeked": offset, droppedBeforeSeek — messages pulled before the seek, not reported as received).
 */
final class LitePull {
    private LitePull() {
    }

    static int run() throws Exception {
        String topic = require("topic");
        String group = require("group");
        String mode = args.getOrDefault("mode", "subscribe");
        String subscription = args.getOrDefault("subscription", "*");
        Tally tally = new Tally(intArg("expect", 0));

        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(group);
        consumer.setNamesrvAddr(require("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName(instance("litepull"));
        consumer.setConsumeFromWhere(fromWhere());
        if (args.containsKey("timestamp")) {
            consumer.setConsumeTimestamp(args.get("timestamp"));
        }
        if (mode.equals("subscribe")) {
            consumer.subscribe(topic, subscription);
            consumer.start();
        } else if (mode.equals("assign")) {
            consumer.start();
            Collection<MessageQueue> mqs = consumer.fetchMessageQueues(topic);
            consumer.assign(mqs);
            if (!subscription.equals("*")) {
                consumer.setSubExpressionForAssign(topic, subscription);
            }
            if (args.containsKey("seek")) {
                long offset = Long.parseLong(args.get("seek"));
                // assign() starts pulling at once; a pull still in flight when seek() runs can put
                // its (pre-seek) messages in the cache after seek() cleared it (the 5.3.3 client's
                // PullTaskImpl checks the seek only before it pulls). So pause, let the pulls in
                // flight land (the cache stays empty for 1 s), drop them, then seek and resume.
                consumer.pause(mqs);
                int dropped = 0;
                long quietSince = System.nanoTime();
                while (System.nanoTime() - quietSince < 1_000_000_000L && remainingMs() > 0) {
                    List<MessageExt> early = consumer.poll(200);
                    if (early != null && !early.isEmpty()) {
                        dropped += early.size();
                        quietSince = System.nanoTime();
                    }
                }
                for (MessageQueue mq : mqs) {
                    consumer.seek(mq, offset);
                }
                consumer.resume(mqs);
                Map<String, Object> ev = event("seeked");
                ev.put("offset", offset);
                ev.put("droppedBeforeSeek", dropped);
                emit(ev);
            }
        } else {
            throw new IllegalArgumentException("mode must be subscribe or assign");
        }
        try {
            return tally.finish(pollLoop(tally, timeoutMs -> {
                List<MessageExt> got = consumer.poll(timeoutMs);
                return got == null ? new ArrayList<>() : got;
            }));
        } finally {
            consumer.shutdown();
        }
    }
}
