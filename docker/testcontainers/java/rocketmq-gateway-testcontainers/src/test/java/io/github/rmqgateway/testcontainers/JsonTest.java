package io.github.rmqgateway.testcontainers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The module's JSON reader and writer on what the control endpoint sends and takes (no Docker). */
class JsonTest {
    @Test
    void readsAStoredMessageReply() {
        String reply = "[{\"topic\": \"orders\", \"msgId\": \"7F00\", \"offsetMsgId\": \"AC11\", \"queueId\": 3,"
                + " \"queueOffset\": 12345678901, \"keys\": \"k1 k2\", \"tags\": null,"
                + " \"properties\": {\"UNIQ_KEY\": \"7F00\", \"note\": \"caf\\u00e9 \\\"x\\\"\\n\"},"
                + " \"body\": \"\\u4e2d\\u6587\", \"bodyBase64\": \"5Lit5paH\", \"reconsumeTimes\": 0,"
                + " \"storeTimestamp\": 1.5e3, \"ok\": true}]";
        @SuppressWarnings("unchecked")
        List<Object> items = (List<Object>) Json.parse(reply);
        @SuppressWarnings("unchecked")
        StoredMessage message = StoredMessage.fromJson((Map<String, Object>) items.get(0));

        assertEquals("orders", message.topic());
        assertEquals(3, message.queueId());
        assertEquals(12345678901L, message.queueOffset());
        assertEquals("k1 k2", message.keys());
        assertNull(message.tags());
        assertEquals("café \"x\"\n", message.property("note"));
        assertEquals("中文", message.body());
        assertEquals("中文", new String(message.bodyBytes(), java.nio.charset.StandardCharsets.UTF_8));
    }

    @Test
    void readsEmptyContainersAndNumbers() {
        assertEquals(List.of(), Json.parse(" [ ] "));
        assertEquals(Map.of(), Json.parse("{}"));
        assertEquals(-2L, Json.parse("-2"));
        assertEquals(0.25, Json.parse("2.5e-1"));
    }

    @Test
    void refusesBadJsonWithItsPosition() {
        for (String bad : new String[] {"", "{", "[1,", "{\"a\" 1}", "\"open", "[1] x", "{1: 2}", "nul"}) {
            IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
            assertEquals(true, error.getMessage().startsWith("bad JSON from the control endpoint at "), error.getMessage());
        }
    }

    @Test
    void writesARuleWithEscapes() {
        Map<String, Object> rule = new LinkedHashMap<>();
        rule.put("request", "SEND_MESSAGE_V2");
        rule.put("respond", 2);
        rule.put("remark", "busy \"now\"\n");
        rule.put("close", false);
        rule.put("topic", null);
        assertEquals("{\"request\":\"SEND_MESSAGE_V2\",\"respond\":2,\"remark\":\"busy \\\"now\\\"\\u000a\",\"close\":false,\"topic\":null}",
                Json.object(rule));
        rule.put("respond", 2L); // integers read back as Long
        assertEquals(rule, Json.parse(Json.object(rule)));
    }
}
