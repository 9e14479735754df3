package io.github.rmqgateway.testcontainers;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

/**
 * One message as the gateway's store holds it, read through the control endpoint
 * ({@code GET /topics/{topic}/messages}) without moving any consumer's offset.
 *
 * @param topic the topic it is stored in
 * @param msgId the message id a producer's {@code SendResult.getMsgId()} returned (the
 *     {@code UNIQ_KEY} property; the offset message id when there is none)
 * @param offsetMsgId the broker's offset message id (store host and commit-log offset)
 * @param queueId the queue it was stored in
 * @param queueOffset its offset in that queue
 * @param keys the {@code KEYS} property (space-separated keys), or null
 * @param tags the {@code TAGS} property, or null
 * @param properties every property of the message, user and system ones
 * @param body the body as UTF-8 text, or null when it is not UTF-8
 * @param bodyBase64 the body's bytes in base64 (always set; bodies the producer compressed are
 *     shown inflated)
 * @param reconsumeTimes how often it was delivered again (retries)
 */
public record StoredMessage(
        String topic,
        String msgId,
        String offsetMsgId,
        int queueId,
        long queueOffset,
        String keys,
        String tags,
        Map<String, String> properties,
        String body,
        String bodyBase64,
        int reconsumeTimes) {

    /** The body's bytes. */
    public byte[] bodyBytes() {
        return Base64.getDecoder().decode(bodyBase64);
    }

    /** The body as text, decoding non-UTF-8 bytes with replacement characters. */
    public String bodyText() {
        return body != null ? body : new String(bodyBytes(), StandardCharsets.UTF_8);
    }

    /** One user property (or system property, by its Java name such as {@code UNIQ_KEY}), or null. */
    public String property(String name) {
        return properties.get(name);
    }

    @SuppressWarnings("unchecked")
    static StoredMessage fromJson(Map<String, Object> json) {
        Map<String, String> properties = Map.copyOf((Map<String, String>) json.getOrDefault("properties", Map.of()));
        return new StoredMessage(
                (String) json.get("topic"),
                (String) json.get("msgId"),
                (String) json.get("offsetMsgId"),
                ((Number) json.get("queueId")).intValue(),
                ((Number) json.get("queueOffset")).longValue(),
                (String) json.get("keys"),
                (String) json.get("tags"),
                properties,
                (String) json.get("body"),
                (String) json.get("bodyBase64"),
                ((Number) json.getOrDefault("reconsumeTimes", 0L)).intValue());
    }
}
