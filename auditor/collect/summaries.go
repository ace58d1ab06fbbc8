package collect

import (
	"context"
	"errors"
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"
)

// summaryReply is one server's reply to the census's JSZ broadcast: done
// is closed once it has come.
type summaryReply struct {
	done chan struct{}
	resp *jszSummary
}

// summaryFor is the reply of the server with id, come or awaited. Callers
// hold c.mu.
func (c *collection) summaryFor(id string) *summaryReply {
	r := c.summaries[id]
	if r == nil {
		r = &summaryReply{done: make(chan struct{})}
		c.summaries[id] = r
	}
	return r
}

// onSummary takes a reply to the JSZ broadcast, by the id of the server
// that sent it.
func (c *collection) onSummary(m *nats.Msg) {
	if isNoResponders(m) {
		return // the census's own reply says so
	}
	data, err := c.replyData(m)
	var resp *jszSummary
	if err == nil {
		if resp, err = decodeJSZSummary(data); err == nil && resp.Server.ID == "" {
			err = errors.New("reply names no server")
		}
	}
	if err != nil {
		// Of no server the audit can name: the server it came from waits
		// out the timeout for its summary, and is reported then.
		c.replyProblem("", "JSZ", fmt.Errorf("reply to %s: %w", PingEndpointSubject("JSZ"), err))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.summaryFor(resp.Server.ID)
	select {
	case <-r.done: // a second reply of one process: the first stands
	default:
		r.resp = resp
		close(r.done)
	}
}

// summary is a server's JSZ without accounts. A server that had the
// census's broadcast (pinged) answers it there, if it has not already; one
// heard first by its heartbeat may have started after it, and is asked on
// its own subject.
func (c *collection) summary(ctx context.Context, srv snapshot.Server, pinged bool) (*jszSummary, error) {
	if !pinged {
		data, err := c.request(ctx, srv, "JSZ", jszSummaryRequest)
		if err != nil {
			return nil, err
		}
		return decodeJSZSummary(data)
	}
	c.mu.Lock()
	r := c.summaryFor(srv.ID)
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.resp, nil
	case <-ctx.Done():
		if cause := context.Cause(ctx); errors.Is(cause, errShutDown) {
			return nil, fmt.Errorf("no reply: %w", cause)
		}
		return nil, fmt.Errorf("no reply within the audit timeout: %w", ctx.Err())
	}
}
