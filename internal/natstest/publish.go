package natstest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Publish publishes data to subject as a JetStream request and returns the
// stream's acknowledgement. See PublishMsg.
func Publish(nc *nats.Conn, subject string, data []byte, timeout time.Duration) (*server.PubAck, error) {
	return PublishMsg(nc, &nats.Msg{Subject: subject, Data: data}, timeout)
}

// PublishMsg publishes msg, headers and all, as a JetStream request, waits
// up to timeout for the reply and returns the stream's acknowledgement. It
// is an error naming the subject when nothing answers (no stream's subjects
// reach this server yet, or the request timed out), when the reply is not a
// JetStream publish acknowledgement, or when the server refused the message.
// A plain publish hides all three.
func PublishMsg(nc *nats.Conn, msg *nats.Msg, timeout time.Duration) (*server.PubAck, error) {
	reply, err := nc.RequestMsg(msg, timeout)
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", msg.Subject, err)
	}
	var resp server.JSPubAckResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("publish %s: reply %q: %w", msg.Subject, reply.Data, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("publish %s: refused: %s", msg.Subject, resp.Error.Error())
	}
	if resp.PubAck == nil {
		return nil, fmt.Errorf("publish %s: reply %q holds no acknowledgement", msg.Subject, reply.Data)
	}
	return resp.PubAck, nil
}
