package natstest

import (
	"encoding/json"
	"errors"
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
// up to timeout for the reply and returns the stream's acknowledgement.
// "No responders" is asked again until timeout, as nats.go's JetStream
// publish does: a stream just created or whose leader just moved answers
// through its leader, and the route brings that interest here a moment
// later (see WaitInterest). No server took such a message, so asking again
// cannot store it twice. It is an error naming the subject when nothing
// answers by then, when the reply is not a JetStream publish
// acknowledgement, or when the server refused the message. A plain
// publish hides all three.
func PublishMsg(nc *nats.Conn, msg *nats.Msg, timeout time.Duration) (*server.PubAck, error) {
	deadline := time.Now().Add(timeout)
	reply, err := nc.RequestMsg(msg, timeout)
	for errors.Is(err, nats.ErrNoResponders) && time.Until(deadline) > 50*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
		reply, err = nc.RequestMsg(msg, time.Until(deadline))
	}
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
