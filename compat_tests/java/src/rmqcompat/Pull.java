package rmqcompat;

import static rmqcompat.Delivery.*;
import static rmqcompat.Run.*;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * {@code pull}: a DefaultMQPullConsumer reads every queue of the topic from offset= (0), 32
 * messages per pull, plain or pullBlockIfNotFound (block=true), committing the next offsets when
 * commit=true; one "pulled" event per non-idle pull.
 */
final class Pull {
    private Pull() {
    }

    static int run() throws Exception {
        String topic = require("topic");
        String group = require("group");
        String subscription = args.getOrDefault("subscription", "*");
        boolean block = boolArg("block");
        boolean commit = boolArg("commit");
        long startOffset = Long.parseLong(args.getOrDefault("offset", "0"));
        Tally tally = new Tally(intArg("expect", 0));

        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(group);
        consumer.setNamesrvAddr(require("namesrv"));
        consumer.setVipChannelEnabled(false);
        consumer.setInstanceName(instance("pull"));
        consumer.start();
        try {
            Set<MessageQueue> mqs = null;
            while (mqs == null) {
                try {
                    mqs = consumer.fetchSubscribeMessageQueues(topic);
                } catch (Exception e) {
                    if (remainingMs() < 500) {
                        throw e;
                    }
                    log("no route for " + topic + " yet: " + e);
                    Thread.sleep(300);
                }
            }
            List<MessageQueue> queues = new ArrayList<>(mqs);
            queues.sort(null);
            Map<MessageQueue, Long> offsets = new HashMap<>();
            for (MessageQueue mq : queues) {
                offsets.put(mq, startOffset);
            }
            boolean ok = pollLoop(tally, timeoutMs -> {
                List<MessageExt> got = new ArrayList<>();
                for (MessageQueue mq : queues) {
                    long offset = offsets.get(mq);
                    PullResult r = block
                        ? consumer.pullBlockIfNotFound(mq, subscription, offset, 32)
                        : consumer.pull(mq, subscription, offset, 32, Math.max(1000, timeoutMs));
                    Map<String, Object> ev = event("pulled");
                    ev.put("queueId", mq.getQueueId());
                    ev.put("offset", offset);
                    ev.put("status", String.valueOf(r.getPullStatus()));
                    ev.put("nextBeginOffset", r.getNextBeginOffset());
                    ev.put("minOffset", r.getMinOffset());
                    ev.put("maxOffset", r.getMaxOffset());
                    ev.put("count", r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size());
                    if (r.getPullStatus() != PullStatus.NO_NEW_MSG) {
                        emit(ev); // idle rounds are not reported
                    }
                    if (r.getMsgFoundList() != null) {
                        got.addAll(r.getMsgFoundList());
                    }
                    offsets.put(mq, r.getNextBeginOffset());
                    if (commit) {
                        consumer.updateConsumeOffset(mq, r.getNextBeginOffset());
                    }
                }
                if (got.isEmpty()) {
                    Thread.sleep(Math.min(200, timeoutMs));
                }
                return got;
            });
            return tally.finish(ok);
        } finally {
            consumer.shutdown();
        }
    }
}
