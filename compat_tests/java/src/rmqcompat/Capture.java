package rmqcompat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

/**
 * Drives one real client through the requests the golden vectors need: route lookups, producer and
 * consumer heartbeats, a single send (SEND_MESSAGE_V2), a batch send, and unregistration. Sends may
 * fail (the target may not implement them yet); the frames the client writes are what matters.
 * Usage: Capture NAMESRV_ADDR TOPIC
 */
public final class Capture {
    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("golden_consumer");
        consumer.setNamesrvAddr(namesrv);
        consumer.subscribe(topic, "TagA || TagB");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("golden_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(3000);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        Message msg = new Message(topic, "TagA", "key-1 键-2", "hello 你好".getBytes(StandardCharsets.UTF_8));
        msg.putUserProperty("color", "蓝");
        try {
            System.out.println("send: " + producer.send(msg));
        } catch (Exception e) {
            System.out.println("send failed: " + e);
        }
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            batch.add(new Message(topic, "TagB", "batch-" + i, ("batch body " + i).getBytes(StandardCharsets.UTF_8)));
        }
        try {
            System.out.println("batch: " + producer.send(batch));
        } catch (Exception e) {
            System.out.println("batch failed: " + e);
        }
        Thread.sleep(1000);
        producer.shutdown();
        consumer.shutdown();
        System.out.println("done");
    }
}
