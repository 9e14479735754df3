package io.github.rmqgateway.testcontainers;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A client of the gateway's HTTP control endpoint (JSON over HTTP/1.1, no authentication): fault
 * rules and stored messages. Every call fails with {@link IllegalStateException} when the endpoint
 * cannot be reached or answers with an error status (its message carries the endpoint's reason).
 */
public final class GatewayControl {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);
    private final URI base;
    private final HttpClient http;

    /** A client of the endpoint at {@code http://hostPort/}. */
    public GatewayControl(String hostPort) {
        this.base = URI.create("http://" + hostPort + "/");
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(REQUEST_TIMEOUT)
                .build();
    }

    /**
     * Adds a fault rule given as its JSON fields ({@code request}, {@code respond}, {@code remark},
     * {@code delay_ms}, {@code close}, {@code drop}, {@code topic}, {@code group}, {@code target},
     * {@code times}, {@code duration_ms}, {@code probability}; docs/testing-with-gateway.md) and
     * returns its id. A rule the gateway refuses raises {@link IllegalArgumentException}.
     */
    public long addFault(Map<String, ?> rule) {
        HttpResponse<String> reply = send("POST", "faults", Json.object(rule));
        if (reply.statusCode() == 400) {
            throw new IllegalArgumentException("fault rule refused: " + reply.body());
        }
        return ((Number) asMap(checked(reply)).get("id")).longValue();
    }

    /** Every fault rule with its {@code id}, {@code fired} count and {@code active} flag. */
    @SuppressWarnings("unchecked")
    public List<Map<String, Object>> faults() {
        return (List<Map<String, Object>>) checked(send("GET", "faults", null));
    }

    /** Removes one rule; false when there was none of that id. */
    public boolean removeFault(long id) {
        HttpResponse<String> reply = send("DELETE", "faults/" + id, null);
        if (reply.statusCode() == 404) {
            return false;
        }
        checked(reply);
        return true;
    }

    /** Removes every rule and returns how many there were. */
    public int clearFaults() {
        return ((Number) asMap(checked(send("DELETE", "faults", null))).get("removed")).intValue();
    }

    /** The first {@code limit} stored messages of {@code topic}, in store order (empty: none, or no such topic). */
    @SuppressWarnings("unchecked")
    public List<StoredMessage> storedMessages(String topic, int limit) {
        String path = "topics/" + URLEncoder.encode(topic, StandardCharsets.UTF_8).replace("+", "%20")
                + "/messages?limit=" + limit;
        List<StoredMessage> out = new ArrayList<>();
        for (Object item : (List<Object>) checked(send("GET", path, null))) {
            out.add(StoredMessage.fromJson((Map<String, Object>) item));
        }
        return out;
    }

    /** Whether the endpoint answers {@code GET /health}. */
    public boolean healthy() {
        try {
            return http.send(request("GET", "health", null), HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private HttpRequest request(String method, String path, String json) {
        HttpRequest.Builder builder = HttpRequest.newBuilder(base.resolve(path)).timeout(REQUEST_TIMEOUT);
        if (json == null) {
            return builder.method(method, HttpRequest.BodyPublishers.noBody()).build();
        }
        return builder.header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(json, StandardCharsets.UTF_8))
                .build();
    }

    private HttpResponse<String> send(String method, String path, String json) {
        try {
            return http.send(request(method, path, json), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException("control endpoint " + base + " unreachable: " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while calling the control endpoint", e);
        }
    }

    private Object checked(HttpResponse<String> reply) {
        if (reply.statusCode() >= 300) {
            throw new IllegalStateException(reply.request().method() + " " + reply.uri() + ": HTTP "
                    + reply.statusCode() + " " + reply.body());
        }
        return reply.body().isEmpty() ? null : Json.parse(reply.body());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object value) {
        return (Map<String, Object>) value;
    }
}
