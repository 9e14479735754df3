package rmqcompat;

import static rmqcompat.Run.emit;
import static rmqcompat.Run.event;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request/reply and 5.x timer scenarios (compat_tests/test_timer_reply_compat.py), one JSON object
 * per line on stdout.
 *
 * <pre>
 * reply namesrv=H:P topic=T group=PG cgroup=CG count=N [mode=sync|callback] [timeout=60]
 *   a responder (push consumer of T that answers with MessageUtil.createReplyMessage, sent by its
 *   own producer) and a requester (DefaultMQProducer.request) in one JVM;
 *   events: replied {i} (responder), reply {i, body, requestTopic, ms} (requester), done {replies}
 * timer namesrv=H:P topic=T group=PG cgroup=CG delay-ms=D [timeout=60]
 *   5.x clients only: Message.setDeliverTimeMs(now + D), called by reflection so that this class
 *   also compiles against 4.9.8 (there it reports an error: the API does not exist);
 *   events: sent {sentMs, deliverMs, status}, received {arrivedMs, body, props}, done {}
 * </pre>
 */
public final class RequestReplyScenario {
    private static final java.util.concurrent.atomic.AtomicInteger REPLIED = new java.util.concurrent.atomic.AtomicInteger();

    private RequestReplyScenario() {
    }

    /** Runs one command; events and errors go out through {@link Run}, as {@link Scenario}'s do. */
    public static void main(String[] argv) {
        Run.main("RequestReplyScenario", argv, RequestReplyScenario::dispatch);
    }

    private static void dispatch(String command, Map<String, String> args) throws Exception {
        switch (command) {
            case "reply":
                reply(args);
                break;
            case "timer":
                timer(args);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + command);
        }
    }

    static DefaultMQPushConsumer consumer(Map<String, String> args) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args.get("cgroup"));
        consumer.setNamesrvAddr(args.get("namesrv"));
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(args.get("topic"), "*");
        return consumer;
    }

    static DefaultMQProducer producer(String group, String namesrv) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv);
        producer.setPollNameServerInterval(1000);
        producer.setSendMsgTimeout(10000);
        producer.start();
        return producer;
    }

    static void reply(Map<String, String> args) throws Exception {
        String namesrv = args.get("namesrv");
        String topic = args.get("topic");
        int count = Integer.parseInt(args.get("count"));
        String mode = args.getOrDefault("mode", "sync");
        DefaultMQProducer responder = producer(args.get("group") + "-responder", namesrv);
        DefaultMQPushConsumer consumer = consumer(args);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                try {
                    byte[] body = ("reply-to-" + new String(m.getBody(), StandardCharsets.UTF_8))
                        .getBytes(StandardCharsets.UTF_8);
                    Message answer = MessageUtil.createReplyMessage(m, body);
                    SendResult sent = responder.send(answer, 10000);
                    REPLIED.incrementAndGet();
                    Map<String, Object> ev = event("replied");
                    ev.put("i", m.getUserProperty("i"));
                    ev.put("status", sent.getSendStatus().name());
                    ev.put("replyTopic", answer.getTopic());
                    emit(ev);
                } catch (Exception e) {
                    Map<String, Object> ev = event("reply_error");
                    ev.put("error", e.getClass().getName() + ": " + e.getMessage());
                    emit(ev);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        DefaultMQProducer requester = producer(args.get("group"), namesrv);
        int replies = 0;
        for (int i = 0; i < count; i++) {
            Message request = new Message(topic, "TagReq", ("req-" + i).getBytes(StandardCharsets.UTF_8));
            request.putUserProperty("i", String.valueOf(i));
            long began = System.currentTimeMillis();
            Message answer = "callback".equals(mode) ? requestWithCallback(requester, request) : requester.request(request, 30000);
            Map<String, Object> ev = event("reply");
            ev.put("i", i);
            ev.put("body", new String(answer.getBody(), StandardCharsets.UTF_8));
            ev.put("topic", answer.getTopic());
            ev.put("ms", System.currentTimeMillis() - began);
            emit(ev);
            replies++;
        }
        // The requester can hold a reply before the responder's send returned: wait for its report.
        long deadline = System.currentTimeMillis() + 10000;
        while (REPLIED.get() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        Map<String, Object> done = event("done");
        done.put("replies", replies);
        emit(done);
        requester.shutdown();
        consumer.shutdown();
        responder.shutdown();
    }

    /**
     * request(msg, RequestCallback, timeout), waiting for the reply. The 5.3.3 client calls the
     * callback's onSuccess with null once the request is sent (and its synchronous request(msg,
     * timeout) returns at that moment with a RequestTimeoutException, on any broker: fixed after
     * 5.3.3, apache/rocketmq#9608), then again with the reply; the nulls are left out.
     */
    static Message requestWithCallback(DefaultMQProducer requester, Message request) throws Exception {
        java.util.concurrent.CompletableFuture<Message> reply = new java.util.concurrent.CompletableFuture<>();
        requester.request(request, new RequestCallback() {
            @Override
            public void onSuccess(Message message) {
                if (message != null) {
                    reply.complete(message);
                }
            }

            @Override
            public void onException(Throwable e) {
                reply.completeExceptionally(e);
            }
        }, 30000);
        return reply.get(35, java.util.concurrent.TimeUnit.SECONDS);
    }

    static void timer(Map<String, String> args) throws Exception {
        long delayMs = Long.parseLong(args.get("delay-ms"));
        long deadline = System.currentTimeMillis() + (long) (Double.parseDouble(args.getOrDefault("timeout", "60")) * 1000);
        Method setDeliverTimeMs = Message.class.getMethod("setDeliverTimeMs", long.class);
        Map<String, Long> arrived = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = consumer(args);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                long now = System.currentTimeMillis();
                arrived.putIfAbsent(new String(m.getBody(), StandardCharsets.UTF_8), now);
                Map<String, Object> ev = event("received");
                ev.put("arrivedMs", now);
                ev.put("body", new String(m.getBody(), StandardCharsets.UTF_8));
                ev.put("topic", m.getTopic());
                ev.put("props", new java.util.TreeMap<>(m.getProperties()));
                emit(ev);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        DefaultMQProducer producer = producer(args.get("group"), args.get("namesrv"));
        // A plain message first: the topic exists and the consumer is placed before the timer one.
        producer.send(new Message(args.get("topic"), "TagT", "plain".getBytes(StandardCharsets.UTF_8)));
        while (!arrived.containsKey("plain") && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        Message msg = new Message(args.get("topic"), "TagT", "timed".getBytes(StandardCharsets.UTF_8));
        long sentMs = System.currentTimeMillis();
        long deliverMs = sentMs + delayMs;
        setDeliverTimeMs.invoke(msg, deliverMs);
        SendResult result = producer.send(msg);
        Map<String, Object> ev = event("sent");
        ev.put("sentMs", sentMs);
        ev.put("deliverMs", deliverMs);
        ev.put("status", result.getSendStatus().name());
        emit(ev);
        while (!arrived.containsKey("timed") && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        emit(event("done"));
        producer.shutdown();
        consumer.shutdown();
    }
}
