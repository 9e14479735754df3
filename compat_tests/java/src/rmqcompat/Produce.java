package rmqcompat;

import static rmqcompat.Run.*;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * {@code produce}: a DefaultMQProducer sends {@code count} messages by sync, async or oneway sends,
 * one by one, through a MessageQueueSelector (selector-keys=N) or in batches (batch=N), over the
 * broker's VIP port with vip-channel=true (setVipChannelEnabled); one
 * "sent" or "send_error" event per message, then "done". pace-ms=P waits P ms after each send
 * (SIGTERM ends the wait and the run), poll-namesrv-ms=M sets how often the client refreshes its
 * routes from the NameServer (setPollNameServerInterval, 30000 by default).
 */
final class Produce {
    private Produce() {
    }

    /**
     * The body of message i: a short text, or `size` bytes of kind "pattern" (byte j = (i + j) % 251,
     * compressible: the client zips bodies over compress-over bytes, 4096 by default) or "random"
     * (java.util.Random seeded with i: incompressible, so the zipped body is larger than the original).
     */
    static byte[] body(int i, int size, String kind) {
        if (size < 0) {
            return ("消息 " + i + " body of message " + i).getBytes(StandardCharsets.UTF_8);
        }
        byte[] b = new byte[size];
        if (kind.equals("random")) {
            new Random(i).nextBytes(b);
        } else if (kind.equals("pattern")) {
            for (int j = 0; j < size; j++) {
                b[j] = (byte) ((i + j) % 251);
            }
        } else {
            throw new IllegalArgumentException("body-kind must be pattern or random");
        }
        return b;
    }

    static int run() throws Exception {
        String topic = require("topic");
        int count = Integer.parseInt(require("count"));
        String mode = args.getOrDefault("mode", "sync");
        String[] tags = args.getOrDefault("tags", "").isEmpty() ? new String[0] : args.get("tags").split(",");
        String keysPrefix = args.get("keys-prefix");
        int bodySize = intArg("body-size", -1);
        String bodyKind = args.getOrDefault("body-kind", "pattern");
        int delayLevel = intArg("delay-level", 0);
        int batch = intArg("batch", 0);
        int selectorKeys = intArg("selector-keys", 0);
        Map<String, String> props = new LinkedHashMap<>();
        String propsArg = args.getOrDefault("props", "");
        if (!propsArg.isEmpty()) {
            for (String kv : propsArg.split(",")) {
                int c = kv.indexOf(':');
                if (c <= 0) {
                    throw new IllegalArgumentException("props: expected k:v, got " + kv);
                }
                props.put(kv.substring(0, c), kv.substring(c + 1));
            }
        }
        if (!Arrays.asList("sync", "async", "oneway").contains(mode)) {
            throw new IllegalArgumentException("mode must be sync, async or oneway");
        }
        if (batch > 0 && (selectorKeys > 0 || mode.equals("oneway"))) {
            throw new IllegalArgumentException("batch= works with mode=sync|async and without selector-keys");
        }

        DefaultMQProducer producer = new DefaultMQProducer(args.getOrDefault("group", "scenario_producer"), boolArg("trace"), null);
        producer.setNamesrvAddr(require("namesrv"));
        applyNamespace(producer);
        producer.setVipChannelEnabled(boolArg("vip-channel"));
        producer.setInstanceName(args.getOrDefault("instance", "scenario-producer-" + ProcessHandle.current().pid()));
        producer.setSendMsgTimeout(intArg("send-timeout-ms", 5000));
        producer.setRetryTimesWhenSendFailed(intArg("retries", 2));
        producer.setRetryTimesWhenSendAsyncFailed(intArg("retries", 2));
        if (args.containsKey("compress-over")) {
            producer.setCompressMsgBodyOverHowmuch(intArg("compress-over", 4096));
        }
        if (args.containsKey("max-message-size")) {
            producer.setMaxMessageSize(intArg("max-message-size", 4 * 1024 * 1024));
        }
        if (args.containsKey("poll-namesrv-ms")) {
            producer.setPollNameServerInterval(intArg("poll-namesrv-ms", 30000));
        }
        long paceMs = intArg("pace-ms", 0);
        producer.start();

        List<Message> msgs = new ArrayList<>(count);
        List<Map<String, Object>> described = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String tag = tags.length == 0 ? null : tags[i % tags.length];
            String shard = selectorKeys > 0 ? "k" + (i % selectorKeys) : null;
            String keys = keysPrefix != null ? keysPrefix + i : shard;
            Message m = new Message(topic, body(i, bodySize, bodyKind));
            if (tag != null) {
                m.setTags(tag);
            }
            if (keys != null) {
                m.setKeys(keys);
            }
            for (Map.Entry<String, String> p : props.entrySet()) {
                m.putUserProperty(p.getKey(), p.getValue());
            }
            if (delayLevel > 0) {
                m.setDelayTimeLevel(delayLevel);
            }
            msgs.add(m);
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("tags", tag);
            d.put("keys", keys);
            if (shard != null) {
                d.put("shardKey", shard);
            }
            putBody(d, m.getBody());
            described.add(d);
        }

        AtomicInteger sent = new AtomicInteger();
        AtomicInteger errors = new AtomicInteger();
        CountDownLatch pending = new CountDownLatch(count);
        MessageQueueSelector selector = (mqs, msg, arg) -> mqs.get(Math.floorMod(arg.hashCode(), mqs.size()));
        try {
            if (batch > 0) {
                for (int start = 0; start < count && remainingMs() > 0; start += batch) {
                    int end = Math.min(count, start + batch);
                    List<Message> chunk = msgs.subList(start, end);
                    final int first = start;
                    if (mode.equals("sync")) {
                        try {
                            reportBatch(producer.send(chunk), first, end, described, sent);
                        } catch (Exception e) {
                            failRange(first, end, e, errors, pending);
                            continue;
                        }
                        for (int i = first; i < end; i++) {
                            pending.countDown();
                        }
                    } else {
                        try {
                            producer.send(chunk, new SendCallback() {
                                @Override
                                public void onSuccess(SendResult r) {
                                    reportBatch(r, first, end, described, sent);
                                    for (int i = first; i < end; i++) {
                                        pending.countDown();
                                    }
                                }

                                @Override
                                public void onException(Throwable e) {
                                    failRange(first, end, e, errors, pending);
                                }
                            });
                        } catch (Exception e) {
                            failRange(first, end, e, errors, pending);
                        }
                    }
                }
            } else {
                for (int i = 0; i < count && remainingMs() > 0; i++) {
                    Message m = msgs.get(i);
                    Object shard = described.get(i).get("shardKey");
                    final int idx = i;
                    try {
                        if (mode.equals("sync")) {
                            SendResult r = shard != null ? producer.send(m, selector, shard) : producer.send(m);
                            report(r, idx, described.get(idx), sent);
                            pending.countDown();
                        } else if (mode.equals("oneway")) {
                            if (shard != null) {
                                producer.sendOneway(m, selector, shard);
                            } else {
                                producer.sendOneway(m);
                            }
                            Map<String, Object> ev = event("sent");
                            ev.put("i", idx);
                            ev.putAll(described.get(idx));
                            emit(ev);
                            sent.incrementAndGet();
                            pending.countDown();
                        } else {
                            SendCallback cb = new SendCallback() {
                                @Override
                                public void onSuccess(SendResult r) {
                                    report(r, idx, described.get(idx), sent);
                                    pending.countDown();
                                }

                                @Override
                                public void onException(Throwable e) {
                                    failRange(idx, idx + 1, e, errors, pending);
                                }
                            };
                            if (shard != null) {
                                producer.send(m, selector, shard, cb);
                            } else {
                                producer.send(m, cb);
                            }
                        }
                    } catch (Exception e) {
                        failRange(idx, idx + 1, e, errors, pending);
                    }
                    if (paceMs > 0) {
                        STOP.await(paceMs, TimeUnit.MILLISECONDS);
                    }
                }
            }
            boolean complete = pending.await(remainingMs(), TimeUnit.MILLISECONDS);
            Map<String, Object> done = event("done");
            done.put("sent", sent.get());
            done.put("errors", errors.get());
            done.put("complete", complete);
            emit(done);
            if (!complete) {
                error("timeout: " + pending.getCount() + " of " + count + " sends unfinished");
                return 1;
            }
            return 0;
        } finally {
            stayConnected();
            lingerForTraces();
            producer.shutdown();
        }
    }

    /**
     * With stay=S, keeps the started producer (and so its heartbeats: the broker's producer
     * connection) for S more seconds after the sends or until SIGTERM, for tools that list
     * producer connections (the dashboard's producer page).
     */
    static void stayConnected() throws InterruptedException {
        String stay = args.get("stay");
        if (stay != null && !stay.isEmpty()) {
            long ms = Math.min((long) (Double.parseDouble(stay) * 1000), remainingMs());
            STOP.await(Math.max(ms, 0), TimeUnit.MILLISECONDS);
        }
    }

    static void report(SendResult r, int i, Map<String, Object> d, AtomicInteger sent) {
        Map<String, Object> ev = event("sent");
        ev.put("i", i);
        ev.put("msgId", r.getMsgId());
        ev.put("offsetMsgId", r.getOffsetMsgId());
        ev.put("queueId", r.getMessageQueue().getQueueId());
        ev.put("queueOffset", r.getQueueOffset());
        ev.put("brokerName", r.getMessageQueue().getBrokerName());
        ev.put("status", String.valueOf(r.getSendStatus()));
        ev.putAll(d);
        emit(ev);
        sent.incrementAndGet();
    }

    static void reportBatch(SendResult r, int first, int end, List<Map<String, Object>> described, AtomicInteger sent) {
        String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
        String[] offIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
        for (int i = first; i < end; i++) {
            int k = i - first;
            Map<String, Object> ev = event("sent");
            ev.put("i", i);
            ev.put("msgId", k < ids.length ? ids[k] : null);
            ev.put("offsetMsgId", k < offIds.length ? offIds[k] : null);
            ev.put("queueId", r.getMessageQueue().getQueueId());
            ev.put("queueOffset", r.getQueueOffset() + k);
            ev.put("brokerName", r.getMessageQueue().getBrokerName());
            ev.put("status", String.valueOf(r.getSendStatus()));
            ev.put("batchFirst", first);
            ev.putAll(described.get(i));
            emit(ev);
            sent.incrementAndGet();
        }
    }

    static void failRange(int first, int end, Throwable e, AtomicInteger errors, CountDownLatch pending) {
        for (int i = first; i < end; i++) {
            Map<String, Object> ev = event("send_error");
            ev.put("i", i);
            ev.put("error", describe(e));
            emit(ev);
            errors.incrementAndGet();
            pending.countDown();
        }
    }
}
