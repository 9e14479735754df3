package rmqcompat;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Scenario runner for the broker compatibility tests: drives one real RocketMQ Java client line
 * (compiled and run against 4.9.8 or 5.3.3; only APIs present in both are used) through one command
 * and reports what happened as one JSON object per line on stdout (flushed per event). Client logs
 * go to stderr or to files; stdout carries only events.
 *
 * <pre>
 * Usage: Scenario COMMAND namesrv=HOST:PORT [key=value ...]
 *   produce  topic= count= [mode=sync|async|oneway] [tags=TagA,TagB] [keys-prefix=] [body-size=]
 *            [props=k1:v1,k2:v2] [delay-level=] [batch=N] [selector-keys=N] [group=] [instance=]
 *            [body-kind=pattern|random] [compress-over=4096] [max-message-size=4194304]
 *            [send-timeout-ms=5000] [retries=2] [timeout=60]
 *   consume  group= topic= [subscription=*] [expect=N] [duration=S] [model=clustering|broadcasting]
 *            [orderly=false] [from=first|last|timestamp] [timestamp=yyyyMMddHHmmss]
 *            [reconsume-later=K] [max-reconsume=M] [suspend-ms=] [pull-delay-on-error-ms=200]
 *            [instance=] [timeout=60]
 *   litepull group= topic= expect=N [mode=subscribe|assign] [subscription=*] [seek=OFFSET]
 *            [from=first|last|timestamp] [timestamp=] [instance=] [duration=S] [timeout=60]
 *   pull     group= topic= expect=N [subscription=*] [offset=0] [block=false] [commit=false]
 *            [instance=] [duration=S] [timeout=60]
 * </pre>
 *
 * Events: sent, send_error, received, done, error (see compat_tests/scenario.py). Exit status 0 on
 * success; 1 (after an "error" event) on failure, including a consumer that did not get `expect`
 * messages within `timeout`; 3 when the hard watchdog (timeout + 20 s) fires.
 */
public final class Scenario {
    private static final int BIG_BODY_INLINE = 1000; // larger bodies are reported as length + SHA-1
    private static final long SHUTDOWN_GRACE_MS = 20000;
    /** MessageConst.STRING_HASH_SET of 5.3.3 (a superset of 4.9.8's) plus broker-added names. */
    private static final Set<String> SYSTEM_PROPS = new HashSet<>(Arrays.asList(
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

    private static PrintStream out;
    private static Map<String, String> args;
    private static long deadline; // System.nanoTime() after which waiting stops
    private static final CountDownLatch STOP = new CountDownLatch(1); // SIGTERM: wind down early
    private static final CountDownLatch FINISHED = new CountDownLatch(1); // clients shut down

    private Scenario() {
    }

    public static void main(String[] argv) {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err); // anything the clients print goes to stderr
        int code;
        try {
            if (argv.length < 1) {
                throw new IllegalArgumentException("usage: Scenario COMMAND namesrv=HOST:PORT [key=value ...]");
            }
            args = parseArgs(Arrays.copyOfRange(argv, 1, argv.length));
            require("namesrv");
            double timeout = Double.parseDouble(args.getOrDefault("timeout", "60"));
            deadline = System.nanoTime() + (long) (timeout * 1e9);
            startWatchdog((long) (timeout * 1000) + SHUTDOWN_GRACE_MS);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                STOP.countDown();
                try {
                    FINISHED.await(15, TimeUnit.SECONDS); // let the command shut its client down
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "scenario-stop"));
            String cmd = argv[0];
            switch (cmd) {
                case "produce":
                    code = produce();
                    break;
                case "consume":
                    code = consume();
                    break;
                case "litepull":
                    code = litePull();
                    break;
                case "pull":
                    code = pull();
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + cmd);
            }
        } catch (Throwable e) {
            error(e);
            code = 1;
        }
        out.flush();
        FINISHED.countDown();
        System.exit(code);
    }

    // ---------------------------------------------------------------- arguments and output

    static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got " + a);
            }
            m.put(a.substring(0, eq), a.substring(eq + 1));
        }
        return m;
    }

    static String require(String key) {
        String v = args.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("missing argument " + key + "=");
        }
        return v;
    }

    static int intArg(String key, int dflt) {
        String v = args.get(key);
        return v == null || v.isEmpty() ? dflt : Integer.parseInt(v);
    }

    static boolean boolArg(String key) {
        return Boolean.parseBoolean(args.getOrDefault(key, "false"));
    }

    static long remainingMs() {
        if (STOP.getCount() == 0) {
            return 0;
        }
        return Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
    }

    static boolean stopped() {
        return STOP.getCount() == 0;
    }

    static void startWatchdog(long ms) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                return;
            }
            Map<String, Object> ev = event("error");
            ev.put("error", "watchdog: still running " + ms + " ms after start (timeout + shutdown grace)");
            emit(ev);
            out.flush();
            Runtime.getRuntime().halt(3);
        }, "scenario-watchdog");
        t.setDaemon(true);
        t.start();
    }

    static Map<String, Object> event(String name) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", name);
        return m;
    }

    static synchronized void emit(Map<String, Object> ev) {
        StringBuilder sb = new StringBuilder(256);
        json(sb, ev);
        out.println(sb);
        out.flush();
    }

    static void log(String s) {
        System.err.println("[scenario] " + s);
    }

    static void error(Throwable e) {
        Map<String, Object> ev = event("error");
        ev.put("error", describe(e));
        StringWriter sw = new StringWriter();
        e.printStackTrace(new PrintWriter(sw));
        ev.put("trace", sw.toString());
        emit(ev);
        e.printStackTrace();
    }

    static void error(String message) {
        Map<String, Object> ev = event("error");
        ev.put("error", message);
        emit(ev);
    }

    static String describe(Throwable e) {
        String s = e.getClass().getName() + ": " + e.getMessage();
        return s.length() > 2000 ? s.substring(0, 2000) : s;
    }

    @SuppressWarnings("unchecked")
    static void json(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            quote(sb, (String) v);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) v).entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(sb, e.getKey());
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object o : (Collection<Object>) v) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                json(sb, o);
            }
            sb.append(']');
        } else {
            quote(sb, v.toString());
        }
    }

    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                case '\n':
                    sb.append("\\n");
                    break;
                case '\r':
                    sb.append("\\r");
                    break;
                case '\t':
                    sb.append("\\t");
                    break;
                default:
                    if (c < 0x20 || c == 0x2028 || c == 0x2029 || Character.isSurrogate(c)) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    static String sha1(byte[] data) throws Exception {
        byte[] d = MessageDigest.getInstance("SHA-1").digest(data);
        StringBuilder sb = new StringBuilder();
        for (byte b : d) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    static void putBody(Map<String, Object> ev, byte[] body) throws Exception {
        if (body == null) {
            ev.put("body", null);
        } else if (body.length > BIG_BODY_INLINE) {
            ev.put("bodyLen", body.length);
            ev.put("bodySha1", sha1(body));
        } else {
            ev.put("body", new String(body, StandardCharsets.UTF_8));
        }
    }

    // ---------------------------------------------------------------- produce

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

    static int produce() throws Exception {
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

        DefaultMQProducer producer = new DefaultMQProducer(args.getOrDefault("group", "scenario_producer"));
        producer.setNamesrvAddr(require("namesrv"));
        producer.setVipChannelEnabled(false);
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
            producer.shutdown();
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

    // ---------------------------------------------------------------- consumers

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

    static int consume() throws Exception {
        String topic = require("topic");
        String group = require("group");
        int expect = intArg("expect", 0);
        int later = intArg("reconsume-later", 0);
        boolean orderly = boolArg("orderly");
        Tally tally = new Tally(expect);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(require("namesrv"));
        consumer.setVipChannelEnabled(false);
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
            consumer.shutdown();
        }
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

    static int litePull() throws Exception {
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
                for (MessageQueue mq : mqs) {
                    consumer.seek(mq, offset);
                }
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

    static int pull() throws Exception {
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
