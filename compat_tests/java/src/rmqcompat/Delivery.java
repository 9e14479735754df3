package rmqcompat;

import static rmqcompat.Run.*;

import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * What the consumer commands share: the "received" event of a delivered message, the count of
 * distinct acknowledged messages that ends a run ({@link Tally}), and the poll loop of the two
 * pull-style consumers.
 */
final class Delivery {
    /** MessageConst.STRING_HASH_SET of 5.3.3 (a superset of 4.9.8's) plus broker-added names. */
    static final Set<String> SYSTEM_PROPS = new HashSet<>(Arrays.asList(
        "1ST_POP_TIME", "ARRIVE_TIME", "BORN_TIMESTAMP", "BUYER_ID", "CLUSTER", "CONSUME_START_TIME",
        "CORRECTION_FLAG", "CORRELATION_ID", "DELAY", "DLQ_ORIGIN_MESSAGE_ID", "DLQ_ORIGIN_TOPIC",
        "DUP_INFO", "EXTEND_UNIQ_INFO", "INNER_MULTI_QUEUE_OFFSET", "INSTANCE_ID", "KEYS", "MAX_OFFSET",
        "MAX_RECONSUME_TIMES", "MIN_OFFSET", "MQ2_FLAG", "MSG_REGION", "MSG_TYPE", "ORIGIN_MESSAGE_ID",
        "PGROUP", "POP_CK", "POP_CK_OFFSET", "PUSH_REPLY_TIME", "REAL_QID", "REAL_TOPIC",
        "RECONSUME_TIME", "REPLY_TO_CLIENT", "RETRY_TOPIC", "TAGS", "TIMER_DELAY_LEVEL",
        "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_DEL_UNIQKEY",
        "TIMER_DEQUEUE_MS", "TIMER_ENQUEUE_MS", "TIMER_OUT_MS", "TIMER_ROLL_TIMES", "TRACE_ON",
        "TRANSFER_FLAG", "TRAN_MSG", "TRAN_PREPARED_QUEUE_OFFSET", "TTL", "UNIQ_KEY", "WAIT",
        "__BORNHOST", "__CRC32#", "bname", "INNER_NUM", "INNER_BASE"));

    private Delivery() {
    }

    static ConsumeFromWhere fromWhere() {
        String from = args.getOrDefault("from", "first");
        switch (from) {
            case "first":
                return ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET;
            case "last":
                return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET;
            case "timestamp":
                return ConsumeFromWhere.CONSUME_FROM_TIMESTAMP;
            default:
                throw new IllegalArgumentException("from must be first, last or timestamp");
        }
    }

    static String instance(String kind) {
        return args.getOrDefault("instance", kind + "-" + ProcessHandle.current().pid());
    }

    /**
     * The identity of a delivered message for counting: the offset message id of its first stored
     * copy (ORIGIN_MESSAGE_ID on retries), else its offset message id. Not msgId (UNIQ_KEY): the
     * 5.x clients put a batch-level UNIQ_KEY on batches, which the broker copies into every message.
     */
    static String uid(MessageExt m) {
        String origin = m.getProperty("ORIGIN_MESSAGE_ID");
        if (origin != null && !origin.isEmpty()) {
            return origin;
        }
        if (m instanceof MessageClientExt) {
            return ((MessageClientExt) m).getOffsetMsgId();
        }
        return m.getMsgId();
    }

    static Map<String, Object> received(MessageExt m) throws Exception {
        Map<String, Object> ev = event("received");
        ev.put("msgId", m.getMsgId());
        ev.put("offsetMsgId", m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null);
        ev.put("uid", uid(m));
        ev.put("topic", m.getTopic());
        ev.put("queueId", m.getQueueId());
        ev.put("queueOffset", m.getQueueOffset());
        ev.put("tags", m.getTags());
        ev.put("keys", m.getKeys());
        putBody(ev, m.getBody());
        Map<String, Object> user = new TreeMap<>();
        Map<String, Object> sys = new TreeMap<>();
        if (m.getProperties() != null) {
            for (Map.Entry<String, String> p : m.getProperties().entrySet()) {
                (SYSTEM_PROPS.contains(p.getKey()) ? sys : user).put(p.getKey(), p.getValue());
            }
        }
        ev.put("props", user);
        ev.put("sysProps", sys);
        ev.put("reconsumeTimes", m.getReconsumeTimes());
        ev.put("bornTimestamp", m.getBornTimestamp());
        ev.put("storeTimestamp", m.getStoreTimestamp());
        ev.put("delay", m.getProperty("DELAY"));
        ev.put("flag", m.getFlag());
        ev.put("sysFlag", m.getSysFlag());
        ev.put("bornHost", String.valueOf(m.getBornHost()));
        ev.put("storeHost", String.valueOf(m.getStoreHost()));
        ev.put("commitLogOffset", m.getCommitLogOffset());
        ev.put("storeSize", m.getStoreSize());
        return ev;
    }

    static void emitReceived(MessageExt m, String status, int seen) {
        try {
            Map<String, Object> ev = received(m);
            ev.put("status", status);
            ev.put("seen", seen);
            emit(ev);
        } catch (Exception e) {
            error(e);
        }
    }

    /** Counts deliveries per uid; `expect` is reached by distinct acknowledged messages. */
    static final class Tally {
        final Map<String, Integer> seen = new ConcurrentHashMap<>();
        final Set<String> acked = ConcurrentHashMap.newKeySet();
        final AtomicInteger deliveries = new AtomicInteger();
        final CountDownLatch reached;
        final int expect;

        Tally(int expect) {
            this.expect = expect;
            this.reached = new CountDownLatch(1);
        }

        int see(String id) {
            deliveries.incrementAndGet();
            return seen.merge(id, 1, Integer::sum);
        }

        void ack(String id) {
            acked.add(id);
            if (expect > 0 && acked.size() >= expect) {
                reached.countDown();
            }
        }

        /** Waits for `expect` (or for `duration` when given); true when the wait succeeded. */
        boolean await() throws InterruptedException {
            String duration = args.get("duration");
            boolean byDuration = duration != null && !duration.isEmpty();
            if (!byDuration && expect <= 0) {
                throw new IllegalArgumentException("give expect=N or duration=S");
            }
            long stopAt = byDuration
                ? Math.min(deadline, System.nanoTime() + (long) (Double.parseDouble(duration) * 1e9))
                : deadline;
            while (System.nanoTime() < stopAt && !stopped()) {
                if (!byDuration && reached.await(100, TimeUnit.MILLISECONDS)) {
                    return true;
                }
                if (byDuration) {
                    Thread.sleep(Math.max(1, Math.min(100, (stopAt - System.nanoTime()) / 1_000_000)));
                }
            }
            return byDuration || reached.getCount() == 0;
        }

        int finish(boolean ok) {
            Map<String, Object> done = event("done");
            done.put("received", deliveries.get());
            done.put("distinct", seen.size());
            done.put("acked", acked.size());
            done.put("stopped", stopped());
            emit(done);
            if (!ok) {
                error("timeout: " + acked.size() + " of " + expect + " expected messages consumed");
                return 1;
            }
            return 0;
        }
    }

    interface Poller {
        List<MessageExt> poll(long timeoutMs) throws Exception;
    }

    static boolean pollLoop(Tally tally, Poller poller) throws Exception {
        String duration = args.get("duration");
        long stopAt = deadline;
        boolean byDuration = duration != null && !duration.isEmpty();
        if (byDuration) {
            stopAt = Math.min(deadline, System.nanoTime() + (long) (Double.parseDouble(duration) * 1e9));
        } else if (tally.expect <= 0) {
            throw new IllegalArgumentException("give expect=N or duration=S");
        }
        while (System.nanoTime() < stopAt && !stopped()) {
            if (!byDuration && tally.acked.size() >= tally.expect) {
                return true;
            }
            long left = Math.max(1, (stopAt - System.nanoTime()) / 1_000_000);
            for (MessageExt m : poller.poll(Math.min(1000, left))) {
                String id = uid(m);
                emitReceived(m, "success", tally.see(id));
                tally.ack(id);
            }
        }
        return byDuration || tally.acked.size() >= tally.expect;
    }
}
