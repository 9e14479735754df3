package rmqspring;

import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.spring.annotation.RocketMQTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQLocalRequestCallback;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionListener;
import org.apache.rocketmq.spring.core.RocketMQLocalTransactionState;
import org.apache.rocketmq.spring.core.RocketMQTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.CommandLineRunner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One run of every {@link RocketMQTemplate} send against the name server in
 * {@code rocketmq.name-server}: syncSend (tags TagA, TagB, TagC), asyncSend, sendOneWay, a batch
 * syncSend of a List, syncSendOrderly over two hash keys, sends with a property {@code k} for the
 * SQL92 listener, a broadcast, sendAndReceive answered by {@link Listeners.Reply}, and a
 * transactional send left UNKNOWN by its local transaction and committed by the broker's
 * check-back. Then it waits (up to {@code scenario.timeout} seconds) for every listener to have
 * received what it should, prints "done" and exits.
 */
@SpringBootApplication
public class SpringScenario implements CommandLineRunner {
    /** What each listener must receive before the scenario ends (see {@link Listeners}). */
    static final String[][] EXPECTED = {
        {"tag", "7"}, {"sql", "2"}, {"orderly", "6"}, {"broadcast", "2"}, {"tx", "1"}, {"reply", "1"},
    };

    @Autowired
    private RocketMQTemplate template;

    public static void main(String[] args) {
        System.setOut(System.err);
        int code = 0;
        try {
            SpringApplication.exit(SpringApplication.run(SpringScenario.class, args));
        } catch (Throwable e) {
            Events.emit("error", "error", String.valueOf(e));
            code = 1;
        }
        System.exit(code);
    }

    @Override
    public void run(String... args) throws Exception {
        double timeout = Double.parseDouble(System.getProperty("scenario.timeout", "90"));
        long deadline = System.nanoTime() + (long) (timeout * 1e9);
        sent("sync", template.syncSend("SpTag:TagA", "sync-a"));
        sent("sync", template.syncSend("SpTag:TagB", "sync-b"));
        sent("sync", template.syncSend("SpTag:TagC", "sync-c"));
        template.asyncSend("SpTag:TagA", "async", new SendCallback() {
            @Override
            public void onSuccess(SendResult r) {
                sent("async", r);
            }

            @Override
            public void onException(Throwable e) {
                Events.emit("send_error", "case", "async", "error", String.valueOf(e));
            }
        });
        template.sendOneWay("SpTag:TagA", "oneway");
        Events.emit("sent", "case", "oneway", "status", "NONE");
        List<Message<String>> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            batch.add(MessageBuilder.withPayload("batch-" + i).build());
        }
        sent("batch", template.syncSend("SpTag:TagA", batch));
        for (int i = 0; i < 6; i++) {
            sent("orderly", template.syncSendOrderly("SpOrder", "o" + (i % 2) + "-" + i, "key" + (i % 2)));
        }
        for (int k = 1; k <= 4; k++) {
            sent("sql", template.syncSend("SpSql", MessageBuilder.withPayload("sql-" + k).setHeader("k", k).build()));
        }
        sent("sql", template.syncSend("SpSql", "sql-none"));
        for (int i = 0; i < 2; i++) {
            sent("broadcast", template.syncSend("SpBroad", "broadcast-" + i));
        }
        // The broker pushes the reply to the requester's channel as registered by its heartbeat; the
        // template's producer sent its first one before it knew any broker (the next is 30 s later).
        template.getProducer().getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
        // The callback form: the 5.x client's synchronous request returns as soon as the request is
        // stored, without waiting for the reply.
        template.sendAndReceive("SpReply", "ping", new RocketMQLocalRequestCallback<String>() {
            @Override
            public void onSuccess(String reply) {
                Events.emit("reply", "case", "reply", "body", reply);
            }

            @Override
            public void onException(Throwable e) {
                Events.emit("reply_error", "case", "reply", "error", String.valueOf(e));
            }
        }, 30000);
        TransactionSendResult tx = template.sendMessageInTransaction("SpTx", MessageBuilder.withPayload("tx").build(), null);
        Events.emit("sent", "case", "tx", "status", String.valueOf(tx.getSendStatus()),
            "localTransactionState", String.valueOf(tx.getLocalTransactionState()));
        boolean complete = false;
        while (!complete && System.nanoTime() < deadline) {
            complete = true;
            for (String[] e : EXPECTED) {
                complete &= Events.count("received", e[0]) >= Integer.parseInt(e[1]);
            }
            complete &= Events.count("check", "tx") >= 1 && Events.count("reply", "reply") >= 1;
            if (!complete) {
                Thread.sleep(100);
            }
        }
        Thread.sleep(Long.getLong("scenario.settle.ms", 2000)); // anything more would show up now
        Events.emit("done", "complete", complete);
    }

    private static void sent(String name, SendResult r) {
        Events.emit("sent", "case", name, "status", String.valueOf(r.getSendStatus()), "queueId",
            r.getMessageQueue().getQueueId());
    }

    /** The local transaction stays UNKNOWN; the broker's check-back commits it. */
    @RocketMQTransactionListener
    static final class TxListener implements RocketMQLocalTransactionListener {
        @Override
        public RocketMQLocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            return RocketMQLocalTransactionState.UNKNOWN;
        }

        @Override
        public RocketMQLocalTransactionState checkLocalTransaction(Message msg) {
            Object body = msg.getPayload();
            Events.emit("check", "case", "tx", "body",
                body instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(body));
            return RocketMQLocalTransactionState.COMMIT;
        }
    }
}
