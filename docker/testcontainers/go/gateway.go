// Package rmqgateway is a testcontainers-go module for rocketmq-gateway's image: a RocketMQ
// 5.3.3-compatible NameServer, Broker and gRPC endpoint in one small container, with declared
// topics, fault rules and the stored messages of a topic through the image's HTTP control endpoint.
//
//	gw, err := rmqgateway.Run(ctx, rmqgateway.DefaultImage, rmqgateway.WithTopic("orders", 4, rmqgateway.Normal))
//	defer testcontainers.TerminateContainer(gw)
//	producer, _ := rmq.NewProducer(&rmq.Config{Endpoint: gw.GrpcEndpoint(), ...})   // RocketMQ 5 gRPC clients
//	gw.NamesrvAddr()                                                               // remoting clients
//	gw.AddFault(ctx, "SendMessage", 42900, "", 1)                                  // TOO_MANY_REQUESTS once
//	gw.AwaitMessages(ctx, "orders", 1, 10*time.Second)                            // what the broker stored
//
// Networking: a RocketMQ client asks the NameServer for the broker's address and connects to that
// address, so the broker must advertise one the client reaches on the port it really listens on;
// a remapped port cannot work. The container runs on the host's network, every server on a free
// port of 127.0.0.1 only, the broker advertising 127.0.0.1. Ready means the image's HEALTHCHECK
// (a protocol probe: the NameServer answers and the broker has registered) passed.
//
// A classic master/slave pair: a second container started with WithSlaveOf(master) runs only a
// broker of the master's brokerName (brokerId=1, brokerRole=SLAVE, slaveReadEnable=true)
// registering to the master's NameServer; it finds the master's HA port (listen port + 1, on
// 127.0.0.1) in its registration answer, and is ready once registered under brokerId 1 (the
// image's HEALTHCHECK checks that for a slave). The NameServer runs in the master's container.
//
//	master, err := rmqgateway.Run(ctx, img, rmqgateway.WithBrokerProperty("brokerRole", "SYNC_MASTER"))
//	slave, err := rmqgateway.Run(ctx, img, rmqgateway.WithSlaveOf(master))
//	slave.AwaitMessages(ctx, "orders", 1, 10*time.Second)                         // what the slave holds
//
// Where the Ryuk reaper image cannot be pulled, set TESTCONTAINERS_RYUK_DISABLED=true and
// terminate the container yourself (testcontainers.TerminateContainer).
package rmqgateway

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	// DefaultImage is the image scripts/setup-docker.sh builds.
	DefaultImage = "rmq-gateway:local"
	// StartupTimeout bounds container start to a registered broker; about 3 s on a 2-core
	// machine (the HEALTHCHECK runs every 2 s).
	StartupTimeout = 60 * time.Second
	loopback       = "127.0.0.1"
	topicsEnv      = "RMQ_GATEWAY_TOPICS" // NAME:QUEUES:TYPE,... (gateway/resources.py)
	groupsEnv      = "RMQ_GATEWAY_GROUPS" // NAME[:KEY=VALUE,...];...
)

// TopicType is a declared topic's message type, its +message.type attribute (mirrors
// org.apache.rocketmq.common.attribute.TopicMessageType): a gRPC producer's send is checked
// against it.
type TopicType string

// The message types of a declared topic.
const (
	Normal      TopicType = "NORMAL"
	FIFO        TopicType = "FIFO"
	Delay       TopicType = "DELAY"
	Transaction TopicType = "TRANSACTION"
)

// Container is a started gateway container.
type Container struct {
	testcontainers.Container
	namesrvPort, brokerPort, grpcPort, controlPort int
	// namesrvAddr is a slave's: its master's NameServer ("": the container's own).
	namesrvAddr, brokerName string
}

// NamesrvAddr is 127.0.0.1:port of the NameServer: a remoting client's namesrvAddr.
// A slave's is its master's.
func (c *Container) NamesrvAddr() string {
	if c.namesrvAddr != "" {
		return c.namesrvAddr
	}
	return hostPort(c.namesrvPort)
}

// GrpcEndpoint is 127.0.0.1:port of the gRPC endpoint: a RocketMQ 5 gRPC client's Endpoint.
func (c *Container) GrpcEndpoint() string { return hostPort(c.grpcPort) }

// BrokerAddr is 127.0.0.1:port the broker listens on and advertises.
func (c *Container) BrokerAddr() string { return hostPort(c.brokerPort) }

// ControlAddr is 127.0.0.1:port of the HTTP control endpoint.
func (c *Container) ControlAddr() string { return hostPort(c.controlPort) }

func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }

// WithTopic declares a topic with queues read and write queues and message type typ, created
// before the gateway is ready (its route is at the NameServer by then).
func WithTopic(name string, queues int, typ TopicType) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if name == "" || strings.ContainsAny(name, ",:") || queues < 1 {
			return fmt.Errorf("rmqgateway: topic %q with %d queues", name, queues)
		}
		return appendEnv(req, topicsEnv, ",", fmt.Sprintf("%s:%d:%s", name, queues, typ))
	}
}

// WithGroup declares a consumer group with settings of RocketMQ's SubscriptionGroupConfig
// (retryMaxTimes, consumeMessageOrderly, consumeBroadcastEnable, ...).
func WithGroup(name string, settings map[string]string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		pairs := make([]string, 0, len(settings))
		for key, value := range settings {
			pairs = append(pairs, key+"="+value)
		}
		spec := name
		if len(pairs) > 0 {
			spec += ":" + strings.Join(pairs, ",")
		}
		return appendEnv(req, groupsEnv, ";", spec)
	}
}

// WithBrokerProperty sets a broker property by its Java broker.conf key ("flushDiskType", "SYNC_FLUSH").
func WithBrokerProperty(key, value string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"RMQ_PROP_" + key: value})
}

// WithBrokerName sets the broker's brokerName (default broker-a).
func WithBrokerName(name string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithEnv(map[string]string{"BROKER_NAME": name})
}

// WithSlaveOf makes the container the slave of the running master: only a broker, of the
// master's brokerName, with brokerId=1, brokerRole=SLAVE and slaveReadEnable=true, registering
// to the master's NameServer. Declare the master's topics on the slave too (WithTopic).
func WithSlaveOf(master *Container) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if master == nil || master.Container == nil {
			return fmt.Errorf("rmqgateway: the slave's master is not running")
		}
		req.Cmd = []string{"broker"}
		return testcontainers.WithEnv(map[string]string{
			"NAMESRV_ADDR":             master.NamesrvAddr(),
			"BROKER_NAME":              master.brokerName,
			"RMQ_PROP_brokerId":        "1",
			"RMQ_PROP_brokerRole":      "SLAVE",
			"RMQ_PROP_slaveReadEnable": "true",
		})(req)
	}
}

func appendEnv(req *testcontainers.GenericContainerRequest, key, sep, value string) error {
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	if old := req.Env[key]; old != "" {
		value = old + sep + value
	}
	req.Env[key] = value
	return nil
}

// Run starts the image on the host network with free loopback ports and waits until the broker
// is registered. On an error after the container was created, the container is returned with it,
// for the caller to terminate.
func Run(ctx context.Context, img string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	ports := make([]int, 4)
	for i, below := range []int{0, 2, 0, 0} { // the broker's VIP channel listens on its port - 2
		port, err := freePort(below)
		if err != nil {
			return nil, err
		}
		ports[i] = port
	}
	c := &Container{namesrvPort: ports[0], brokerPort: ports[1], grpcPort: ports[2], controlPort: ports[3]}
	base := []testcontainers.ContainerCustomizer{
		testcontainers.WithEnv(map[string]string{
			"RMQ_HOST":                 loopback,
			"BROKER_IP1":               loopback,
			"NAMESRV_PORT":             strconv.Itoa(c.namesrvPort),
			"BROKER_PORT":              strconv.Itoa(c.brokerPort),
			"GRPC_PORT":                strconv.Itoa(c.grpcPort),
			"RMQ_GATEWAY_CONTROL_PORT": strconv.Itoa(c.controlPort),
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) { hc.NetworkMode = "host" }),
		testcontainers.WithWaitStrategy(wait.ForHealthCheck().WithStartupTimeout(StartupTimeout)),
	}
	// last: what the options left, for NamesrvAddr and a later WithSlaveOf
	learn := testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
		c.brokerName = req.Env["BROKER_NAME"]
		if c.brokerName == "" {
			c.brokerName = "broker-a"
		}
		if len(req.Cmd) > 0 && req.Cmd[0] == "broker" {
			c.namesrvAddr = req.Env["NAMESRV_ADDR"]
		}
		return nil
	})
	all := append(append(base, opts...), learn)
	ctr, err := testcontainers.Run(ctx, img, all...)
	if ctr != nil {
		c.Container = ctr
	}
	if err != nil {
		if ctr == nil {
			return nil, fmt.Errorf("rmqgateway: run %s: %w", img, err)
		}
		return c, fmt.Errorf("rmqgateway: run %s: %w", img, err)
	}
	return c, nil
}

// freePort is a free port of the loopback interface (and, for below > 0, the port that much lower too).
func freePort(below int) (int, error) {
	for attempt := 0; attempt < 100; attempt++ {
		ln, err := net.Listen("tcp", loopback+":0")
		if err != nil {
			return 0, fmt.Errorf("rmqgateway: no free port on the loopback interface: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		free := below == 0
		if !free && port-below > 1024 {
			if other, err := net.Listen("tcp", hostPort(port-below)); err == nil {
				other.Close()
				free = true
			}
		}
		ln.Close()
		if free {
			return port, nil
		}
	}
	return 0, fmt.Errorf("rmqgateway: no free port pair on the loopback interface")
}
