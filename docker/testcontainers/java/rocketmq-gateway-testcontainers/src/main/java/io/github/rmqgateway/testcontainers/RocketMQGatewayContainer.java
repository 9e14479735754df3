package io.github.rmqgateway.testcontainers;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * The rocketmq-gateway image (a RocketMQ 5.3.3-compatible NameServer, Broker and gRPC endpoint in
 * one small container) for testcontainers-java.
 *
 * <pre>{@code
 * @Container
 * static final RocketMQGatewayContainer GATEWAY = new RocketMQGatewayContainer()
 *         .withTopic("orders", 4, TopicType.NORMAL);
 *
 * producer.setNamesrvAddr(GATEWAY.getNamesrvAddr());                  // remoting clients
 * new ClientConfiguration.Builder().setEndpoints(GATEWAY.getGrpcEndpoint());  // gRPC clients
 * GATEWAY.addFault("SEND_MESSAGE_V2", 2, null, 2);                     // SYSTEM_BUSY twice
 * GATEWAY.awaitMessages("orders", 1, Duration.ofSeconds(10));          // what the broker stored
 * }</pre>
 *
 * <p>Networking: a RocketMQ client asks the NameServer for the broker's address and connects to
 * that address, so the broker must advertise one the client reaches on the port it really listens
 * on; a remapped port cannot work. The container therefore runs on the host's network, every
 * server listening on a free port of {@code 127.0.0.1} only (the host's other interfaces see
 * nothing) and the broker advertising {@code 127.0.0.1}.
 *
 * <p>Ready means what a client needs: the image's HEALTHCHECK, a protocol probe that passes once
 * the NameServer answers and the broker has registered (and the declared topics exist).
 *
 * <p>A classic master/slave pair: a second container made the slave of the first with
 * {@link #withSlaveOf}: it runs only a broker of the same {@code brokerName} ({@code brokerId=1},
 * {@code brokerRole=SLAVE}, {@code slaveReadEnable=true}) registering to the master's NameServer,
 * and is ready once registered under {@code brokerId} 1 (the image's HEALTHCHECK checks that for
 * a slave). The NameServer runs in the master's container, so stopping the master stops route
 * lookups too; for a master failing, the Python {@code RocketMQGatewayPair} and
 * {@code docker/compose-ha.yaml} run the NameServer in a container of its own.
 *
 * <pre>{@code
 * static final RocketMQGatewayContainer MASTER = new RocketMQGatewayContainer()
 *         .withBrokerProperty("brokerRole", "SYNC_MASTER").withTopic("orders", 4, TopicType.NORMAL);
 * static final RocketMQGatewayContainer SLAVE = new RocketMQGatewayContainer().withSlaveOf(MASTER);
 * }</pre>
 *
 * <p>Where the Ryuk reaper image cannot be pulled, set {@code TESTCONTAINERS_RYUK_DISABLED=true};
 * the JUnit extension (or {@link #stop()}) removes the container.
 */
public class RocketMQGatewayContainer extends GenericContainer<RocketMQGatewayContainer> {
    /** The image scripts/setup-docker.sh builds; the system property {@code rmq.gateway.image} overrides it. */
    public static final String DEFAULT_IMAGE = "rmq-gateway:local";
    /** Container start to a registered broker; about 3 s on a 2-core machine (the HEALTHCHECK runs every 2 s). */
    public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);
    private static final String LOOPBACK = "127.0.0.1";
    private static final Duration POLL_INTERVAL = Duration.ofMillis(50);
    private static final int DEFAULT_MESSAGE_LIMIT = 1000;

    private final int namesrvPort = freePort(0);
    private final int brokerPort = freePort(2); // the broker's VIP channel listens on port - 2
    private final int grpcPort = freePort(0);
    private final int controlPort = freePort(0);
    private final List<String> topics = new ArrayList<>();
    private final List<String> groups = new ArrayList<>();
    private String brokerName = "broker-a";
    private String namesrvAddr; // a slave's: its master's NameServer; null: this container's own

    /** The image named by the system property {@code rmq.gateway.image}, else {@value #DEFAULT_IMAGE}. */
    public RocketMQGatewayContainer() {
        this(DockerImageName.parse(System.getProperty("rmq.gateway.image", DEFAULT_IMAGE)));
    }

    /** The given image (one built from the gateway's docker/Dockerfile). */
    public RocketMQGatewayContainer(DockerImageName image) {
        super(image);
        withNetworkMode("host");
        withEnv("RMQ_HOST", LOOPBACK);
        withEnv("BROKER_IP1", LOOPBACK);
        withEnv("NAMESRV_PORT", String.valueOf(namesrvPort));
        withEnv("BROKER_PORT", String.valueOf(brokerPort));
        withEnv("GRPC_PORT", String.valueOf(grpcPort));
        withEnv("RMQ_GATEWAY_CONTROL_PORT", String.valueOf(controlPort));
        waitingFor(Wait.forHealthcheck().withStartupTimeout(STARTUP_TIMEOUT));
    }

    /**
     * Declares a topic, created with {@code queues} read and write queues and the message type
     * {@code type} before the gateway is ready (its route is already at the NameServer then).
     * Call before the container starts.
     */
    public RocketMQGatewayContainer withTopic(String name, int queues, TopicType type) {
        if (name.isEmpty() || name.contains(",") || name.contains(":") || queues < 1) {
            throw new IllegalArgumentException("topic " + name + " with " + queues + " queues");
        }
        topics.add(name + ":" + queues + ":" + type.name());
        return self();
    }

    /**
     * Declares a consumer group with settings of RocketMQ's {@code SubscriptionGroupConfig}
     * ({@code retryMaxTimes}, {@code consumeMessageOrderly}, {@code consumeBroadcastEnable}, ...).
     * Call before the container starts.
     */
    public RocketMQGatewayContainer withGroup(String name, Map<String, String> settings) {
        StringJoiner spec = new StringJoiner(",", name + (settings.isEmpty() ? "" : ":"), "");
        settings.forEach((key, value) -> spec.add(key + "=" + value));
        groups.add(spec.toString());
        return self();
    }

    /** Sets the broker's {@code brokerName} (default {@code broker-a}). Call before the container starts. */
    public RocketMQGatewayContainer withBrokerName(String name) {
        brokerName = name;
        return withEnv("BROKER_NAME", name);
    }

    /**
     * Makes this container the slave of {@code master} (started first, as a dependency): only a
     * broker, of the master's {@code brokerName}, with {@code brokerId=1}, {@code brokerRole=SLAVE}
     * and {@code slaveReadEnable=true}, registering to the master's NameServer; it finds the
     * master's HA port (listen port + 1, on 127.0.0.1) in its registration answer. The master's
     * declared topics and groups are declared here too. Call before the container starts.
     */
    public RocketMQGatewayContainer withSlaveOf(RocketMQGatewayContainer master) {
        namesrvAddr = master.getNamesrvAddr();
        topics.addAll(master.topics);
        groups.addAll(master.groups);
        dependsOn(master);
        withCommand("broker");
        withEnv("NAMESRV_ADDR", namesrvAddr);
        withBrokerName(master.brokerName);
        withBrokerProperty("brokerId", "1");
        withBrokerProperty("brokerRole", "SLAVE");
        return withBrokerProperty("slaveReadEnable", "true");
    }

    /** Sets a broker property by its Java broker.conf key, e.g. {@code ("flushDiskType", "SYNC_FLUSH")}. */
    public RocketMQGatewayContainer withBrokerProperty(String key, String value) {
        return withEnv("RMQ_PROP_" + key, value);
    }

    @Override
    protected void configure() {
        super.configure();
        if (!topics.isEmpty()) {
            withEnv("RMQ_GATEWAY_TOPICS", String.join(",", topics));
        }
        if (!groups.isEmpty()) {
            withEnv("RMQ_GATEWAY_GROUPS", String.join(";", groups));
        }
    }

    /** {@code 127.0.0.1:port} of the NameServer (a slave's: its master's), a client's {@code namesrvAddr}. */
    public String getNamesrvAddr() {
        return namesrvAddr != null ? namesrvAddr : LOOPBACK + ":" + namesrvPort;
    }

    /** {@code 127.0.0.1:port} of the gRPC endpoint: a RocketMQ 5 gRPC client's endpoints. */
    public String getGrpcEndpoint() {
        return LOOPBACK + ":" + grpcPort;
    }

    /** {@code 127.0.0.1:port} the broker listens on and advertises. */
    public String getBrokerAddr() {
        return LOOPBACK + ":" + brokerPort;
    }

    /** {@code 127.0.0.1:port} of the HTTP control endpoint. */
    public String getControlAddr() {
        return LOOPBACK + ":" + controlPort;
    }

    /** A client of the control endpoint, for what this class has no shortcut for. */
    public GatewayControl control() {
        return new GatewayControl(getControlAddr());
    }

    /**
     * Makes the broker answer the next {@code times} requests of {@code request} (a RequestCode's
     * Java name such as {@code SEND_MESSAGE_V2}, or a unary gRPC method such as {@code SendMessage})
     * with {@code responseCode} (e.g. 2, {@code SYSTEM_BUSY}) and {@code remark} (null: the real
     * broker's text for that code) instead of the real answer; returns the rule's id.
     *
     * @throws IllegalArgumentException when the gateway refuses the rule (unknown request name)
     */
    public long addFault(String request, int responseCode, String remark, int times) {
        Map<String, Object> rule = new LinkedHashMap<>();
        rule.put("request", request);
        rule.put("respond", responseCode);
        if (remark != null) {
            rule.put("remark", remark);
        }
        rule.put("times", times);
        return control().addFault(rule);
    }

    /** Every fault rule with its {@code id}, {@code fired} count and {@code active} flag. */
    public List<Map<String, Object>> faults() {
        return control().faults();
    }

    /** Removes every fault rule; returns how many there were. */
    public int clearFaults() {
        return control().clearFaults();
    }

    /** The stored messages of {@code topic} (the first 1000), in store order. */
    public List<StoredMessage> storedMessages(String topic) {
        return control().storedMessages(topic, DEFAULT_MESSAGE_LIMIT);
    }

    /**
     * The stored messages of {@code topic} once there are at least {@code count}, polled until
     * {@code timeout}.
     *
     * @throws AssertionError when fewer are stored by then (the message says how many there are)
     */
    public List<StoredMessage> awaitMessages(String topic, int count, Duration timeout) {
        GatewayControl control = control();
        long deadline = System.nanoTime() + timeout.toNanos();
        int limit = Math.max(count, DEFAULT_MESSAGE_LIMIT);
        while (true) {
            List<StoredMessage> messages = control.storedMessages(topic, limit);
            if (messages.size() >= count) {
                return messages;
            }
            if (System.nanoTime() - deadline >= 0) {
                throw new AssertionError("expected " + count + " stored messages of topic " + topic
                        + " within " + timeout + ", found " + messages.size());
            }
            try {
                Thread.sleep(POLL_INTERVAL.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for messages of " + topic, e);
            }
        }
    }

    /** A free port of the loopback interface (and, for {@code below > 0}, the port that much lower too). */
    private static int freePort(int below) {
        for (int attempt = 0; attempt < 100; attempt++) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                int port = socket.getLocalPort();
                if (below == 0 || (port - below > 1024 && isFree(port - below))) {
                    return port;
                }
            } catch (IOException e) {
                throw new IllegalStateException("no free port on the loopback interface", e);
            }
        }
        throw new IllegalStateException("no free port pair on the loopback interface");
    }

    private static boolean isFree(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
