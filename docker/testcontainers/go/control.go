package rmqgateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const (
	defaultMessageLimit = 1000
	pollInterval        = 50 * time.Millisecond
	requestTimeout      = 10 * time.Second
)

// ErrFaultRefused is wrapped by AddFault's error when the gateway refuses the rule (HTTP 400).
var ErrFaultRefused = errors.New("fault rule refused")

// StoredMessage is one message as the gateway's store holds it (GET /topics/{topic}/messages),
// read without moving any consumer's offset.
type StoredMessage struct {
	Topic          string            `json:"topic"`
	MsgID          string            `json:"msgId"` // the UNIQ_KEY: what a producer's send returned
	OffsetMsgID    string            `json:"offsetMsgId"`
	QueueID        int               `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	Keys           *string           `json:"keys"` // space-separated, nil when none
	Tags           *string           `json:"tags"`
	Properties     map[string]string `json:"properties"`
	Body           *string           `json:"body"` // the body as text, nil when not UTF-8
	BodyBase64     string            `json:"bodyBase64"`
	ReconsumeTimes int               `json:"reconsumeTimes"`
}

// BodyBytes is the body's bytes (bodies the producer compressed come inflated).
func (m StoredMessage) BodyBytes() ([]byte, error) {
	return base64.StdEncoding.DecodeString(m.BodyBase64)
}

// Fault is a fault rule as the gateway lists it: the rule's fields plus id, fired and active.
type Fault map[string]any

var httpClient = &http.Client{Timeout: requestTimeout}

func (c *Container) call(ctx context.Context, method, path string, body any, out any) (int, error) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.ControlAddr()+"/"+path, reader)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("rmqgateway: control endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("rmqgateway: control endpoint: %w", err)
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("rmqgateway: %s /%s: HTTP %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("rmqgateway: %s /%s: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// AddFault makes the gateway answer the next times requests of request (a RequestCode's Java name
// such as SEND_MESSAGE_V2, or a unary gRPC method such as SendMessage) with responseCode (a
// RemotingCommand code such as 2, SYSTEM_BUSY; for gRPC methods an apache.rocketmq.v2.Code such
// as 42900, TOO_MANY_REQUESTS) and remark ("": the real broker's text for that code). It returns
// the rule's id.
func (c *Container) AddFault(ctx context.Context, request string, responseCode int, remark string, times int) (int64, error) {
	rule := map[string]any{"request": request, "respond": responseCode, "times": times}
	if remark != "" {
		rule["remark"] = remark
	}
	return c.AddFaultRule(ctx, rule)
}

// AddFaultRule adds a rule given as its JSON fields (request, respond, remark, delay_ms, close,
// drop, topic, group, target, times, duration_ms, probability) and returns its id.
func (c *Container) AddFaultRule(ctx context.Context, rule map[string]any) (int64, error) {
	var added struct {
		ID int64 `json:"id"`
	}
	status, err := c.call(ctx, http.MethodPost, "faults", rule, &added)
	if status == http.StatusBadRequest {
		return 0, fmt.Errorf("%w: %v", ErrFaultRefused, err)
	}
	return added.ID, err
}

// Faults lists every fault rule with its id, fired count and active flag.
func (c *Container) Faults(ctx context.Context) ([]Fault, error) {
	var faults []Fault
	_, err := c.call(ctx, http.MethodGet, "faults", nil, &faults)
	return faults, err
}

// ClearFaults removes every fault rule and returns how many there were.
func (c *Container) ClearFaults(ctx context.Context) (int, error) {
	var cleared struct {
		Removed int `json:"removed"`
	}
	_, err := c.call(ctx, http.MethodDelete, "faults", nil, &cleared)
	return cleared.Removed, err
}

// StoredMessages returns the first 1000 stored messages of topic in store order (none: no such topic yet).
func (c *Container) StoredMessages(ctx context.Context, topic string) ([]StoredMessage, error) {
	return c.storedMessages(ctx, topic, defaultMessageLimit)
}

func (c *Container) storedMessages(ctx context.Context, topic string, limit int) ([]StoredMessage, error) {
	var messages []StoredMessage
	path := "topics/" + url.PathEscape(topic) + "/messages?limit=" + strconv.Itoa(limit)
	_, err := c.call(ctx, http.MethodGet, path, nil, &messages)
	return messages, err
}

// AwaitMessages polls the stored messages of topic until there are at least count, for at most
// timeout; the error says how many there were by then.
func (c *Container) AwaitMessages(ctx context.Context, topic string, count int, timeout time.Duration) ([]StoredMessage, error) {
	deadline := time.Now().Add(timeout)
	limit := max(count, defaultMessageLimit)
	for {
		messages, err := c.storedMessages(ctx, topic, limit)
		if err != nil {
			return nil, err
		}
		if len(messages) >= count {
			return messages, nil
		}
		if !time.Now().Before(deadline) {
			return messages, fmt.Errorf("rmqgateway: expected %d stored messages of topic %s within %v, found %d",
				count, topic, timeout, len(messages))
		}
		select {
		case <-ctx.Done():
			return messages, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}
