package rmqgateway_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	"github.com/testcontainers/testcontainers-go"

	"rmqgateway/testcontainers"
)

// One container for every test of the package: starting it takes seconds, a test milliseconds.
var gateway *rmqgateway.Container

// tooManyRequests is apache.rocketmq.v2.Code TOO_MANY_REQUESTS, what the Proxy answers for a busy broker.
const tooManyRequests = 42900

func TestMain(m *testing.M) {
	image := os.Getenv("RMQ_GATEWAY_IMAGE")
	if image == "" {
		image = rmqgateway.DefaultImage
	}
	var err error
	gateway, err = rmqgateway.Run(context.Background(), image,
		rmqgateway.WithTopic("go-orders", 4, rmqgateway.Normal),
		rmqgateway.WithTopic("go-payments", 2, rmqgateway.Normal))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if gateway != nil {
			_ = testcontainers.TerminateContainer(gateway)
		}
		os.Exit(1)
	}
	code := m.Run()
	if err := testcontainers.TerminateContainer(gateway); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// startProducer starts the unmodified RocketMQ 5.x Go gRPC client against the container, in
// plaintext, with a 10 s route query timeout (the 3 s default is short on a loaded machine).
func startProducer(t *testing.T, topics ...string) rmq.Producer {
	t.Helper()
	rmq.EnableSsl = false
	newClient := func(config *rmq.Config, opts ...rmq.ClientOption) (rmq.Client, error) {
		return rmq.NewClient(config, append(opts, rmq.WithQueryRouteTimeout(10*time.Second))...)
	}
	producer, err := rmq.NewProducer(
		&rmq.Config{Endpoint: gateway.GrpcEndpoint(), Credentials: &credentials.SessionCredentials{}},
		rmq.WithTopics(topics...), rmq.WithClientFunc(newClient))
	if err != nil {
		t.Fatal(err)
	}
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = producer.GracefulStop() })
	return producer
}

func find(messages []rmqgateway.StoredMessage, msgID string) *rmqgateway.StoredMessage {
	for i := range messages {
		if messages[i].MsgID == msgID {
			return &messages[i]
		}
	}
	return nil
}

func TestSentMessageIsStoredWithItsKeysTagAndProperties(t *testing.T) {
	ctx := context.Background()
	producer := startProducer(t, "go-orders")
	msg := &rmq.Message{Topic: "go-orders", Body: []byte("order 7: 3 apples")}
	msg.SetTag("created")
	msg.SetKeys("order-7")
	msg.AddProperty("region", "eu")

	receipts, err := producer.Send(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}

	messages, err := gateway.AwaitMessages(ctx, "go-orders", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stored := find(messages, receipts[0].MessageID)
	if stored == nil {
		t.Fatalf("message %s not among the stored %+v", receipts[0].MessageID, messages)
	}
	if stored.Keys == nil || *stored.Keys != "order-7" || stored.Tags == nil || *stored.Tags != "created" {
		t.Errorf("keys/tags: %v %v", stored.Keys, stored.Tags)
	}
	if stored.Properties["region"] != "eu" || stored.Body == nil || *stored.Body != "order 7: 3 apples" {
		t.Errorf("stored %+v", stored)
	}
	if stored.QueueID < 0 || stored.QueueID >= 4 || stored.QueueOffset != receipts[0].Offset {
		t.Errorf("queue %d offset %d of a 4-queue topic, receipt offset %d", stored.QueueID, stored.QueueOffset, receipts[0].Offset)
	}
}

func TestProducerRetriesThroughTooManyRequests(t *testing.T) {
	ctx := context.Background()
	producer := startProducer(t, "go-payments")
	if _, err := gateway.AddFault(ctx, "SendMessage", tooManyRequests, "", 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = gateway.ClearFaults(ctx) })

	receipts, err := producer.Send(ctx, &rmq.Message{Topic: "go-payments", Body: []byte("paid")})
	if err != nil {
		t.Fatal(err)
	}

	faults, err := gateway.Faults(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(faults) != 1 || faults[0]["fired"] != float64(1) || faults[0]["active"] != false {
		t.Errorf("faults after the send: %v", faults)
	}
	messages, err := gateway.AwaitMessages(ctx, "go-payments", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(messages) != 1 || messages[0].MsgID != receipts[0].MessageID {
		t.Errorf("stored once as %s: %+v", receipts[0].MessageID, messages)
	}
}

func TestSlaveHoldsWhatItsMasterStored(t *testing.T) {
	ctx := context.Background()
	image := os.Getenv("RMQ_GATEWAY_IMAGE")
	if image == "" {
		image = rmqgateway.DefaultImage
	}
	// a slave of the package's container; ready once registered under brokerId 1
	slave, err := rmqgateway.Run(ctx, image, rmqgateway.WithSlaveOf(gateway),
		rmqgateway.WithTopic("go-orders", 4, rmqgateway.Normal))
	if slave != nil {
		t.Cleanup(func() { _ = testcontainers.TerminateContainer(slave) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if slave.NamesrvAddr() != gateway.NamesrvAddr() {
		t.Errorf("the slave's NameServer %s, its master's %s", slave.NamesrvAddr(), gateway.NamesrvAddr())
	}
	producer := startProducer(t, "go-orders")
	receipts, err := producer.Send(ctx, &rmq.Message{Topic: "go-orders", Body: []byte("order 8: replicated")})
	if err != nil {
		t.Fatal(err)
	}
	onMaster, err := gateway.AwaitMessages(ctx, "go-orders", 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	onSlave, err := slave.AwaitMessages(ctx, "go-orders", len(onMaster), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if find(onSlave, receipts[0].MessageID) == nil {
		t.Errorf("message %s not among the slave's %+v", receipts[0].MessageID, onSlave)
	}
}
