// Command txproducer is the Go judge of transactional messages (compat_tests/test_transaction_compat.py):
// the unmodified Apache RocketMQ Go client (github.com/apache/rocketmq-client-go/v2) sends count
// transactional messages whose local transaction answers COMMIT (i%3 == 0), ROLLBACK (i%3 == 1)
// or UNKNOW (i%3 == 2; its check-back answers COMMIT), then a push consumer reads the topic.
// One JSON object per line on stdout: sent {i, status, local}, check {i, n}, received {i},
// done {received: {i: n}, checks: {i: n}, complete}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var (
	outMu    sync.Mutex
	countsMu sync.Mutex
	checks   = map[string]int{}
	received = map[string]int{}
)

func emit(event map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	line, _ := json.Marshal(event)
	fmt.Println(string(line))
}

type listener struct{}

func plan(msg *primitive.Message) int {
	i, _ := strconv.Atoi(msg.GetProperty("i"))
	return i % 3
}

func (listener) ExecuteLocalTransaction(msg *primitive.Message) primitive.LocalTransactionState {
	switch plan(msg) {
	case 0:
		return primitive.CommitMessageState
	case 1:
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

func (listener) CheckLocalTransaction(msg *primitive.MessageExt) primitive.LocalTransactionState {
	i := msg.GetProperty("i")
	countsMu.Lock()
	checks[i]++
	n := checks[i]
	countsMu.Unlock()
	emit(map[string]any{"event": "check", "i": i, "n": n})
	if plan(&msg.Message) == 1 {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func main() {
	namesrv := flag.String("namesrv", "", "NameServer address")
	topic := flag.String("topic", "", "topic")
	group := flag.String("group", "", "producer group")
	cgroup := flag.String("cgroup", "", "consumer group")
	count := flag.Int("count", 9, "messages")
	timeout := flag.Duration("timeout", 120*time.Second, "overall limit")
	settle := flag.Duration("settle", 6*time.Second, "wait after everything expected arrived")
	flag.Parse()
	rlog.SetLogLevel("warn")
	deadline := time.Now().Add(*timeout)
	resolver := primitive.NewPassthroughResolver([]string{*namesrv})

	p, err := rocketmq.NewTransactionProducer(listener{},
		producer.WithNsResolver(resolver), producer.WithGroupName(*group), producer.WithRetry(2),
		producer.WithSendMsgTimeout(10*time.Second))
	if err != nil {
		fail(err)
	}
	if err := p.Start(); err != nil {
		fail(err)
	}
	for i := 0; i < *count; i++ {
		msg := primitive.NewMessage(*topic, []byte("go-tx-"+strconv.Itoa(i)))
		msg.WithProperty("i", strconv.Itoa(i))
		res, err := p.SendMessageInTransaction(context.Background(), msg)
		if err != nil {
			emit(map[string]any{"event": "send_error", "i": i, "error": err.Error()})
			continue
		}
		emit(map[string]any{"event": "sent", "i": i, "status": int(res.Status), "local": int(res.State)})
	}

	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver), consumer.WithGroupName(*cgroup),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		fail(err)
	}
	err = c.Subscribe(*topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			i := m.GetProperty("i")
			countsMu.Lock()
			received[i]++
			countsMu.Unlock()
			emit(map[string]any{"event": "received", "i": i})
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		fail(err)
	}
	if err := c.Start(); err != nil {
		fail(err)
	}
	var metAt time.Time
	for time.Now().Before(deadline) {
		if metAt.IsZero() && expectedMet(*count) {
			metAt = time.Now()
		}
		if !metAt.IsZero() && time.Since(metAt) >= *settle {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	countsMu.Lock()
	emit(map[string]any{"event": "done", "received": received, "checks": checks, "complete": !metAt.IsZero()})
	countsMu.Unlock()
	_ = c.Shutdown()
	_ = p.Shutdown()
}

func expectedMet(count int) bool {
	countsMu.Lock()
	defer countsMu.Unlock()
	for i := 0; i < count; i++ {
		key := strconv.Itoa(i)
		if i%3 != 1 && received[key] == 0 {
			return false
		}
		if i%3 == 2 && checks[key] == 0 {
			return false
		}
	}
	return true
}

func fail(err error) {
	emit(map[string]any{"event": "error", "error": err.Error()})
	os.Exit(1)
}
