package collect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"
)

// Replies to the census's JSZ broadcast, as the handler takes them: by the
// id of the server that sent each, the first of one server standing; a reply
// that names no server is a problem of the audit, unless the audit has
// closed (its snapshot may be taken).
func TestSummaryReplies(t *testing.T) {
	reply := func(data string) *nats.Msg { return &nats.Msg{Data: []byte(data)} }
	c := fuzzCollection()
	c.onSummary(reply(`{"server":{"id":"NA"},"data":{"streams":1,"consumers":2,"accounts":1,"total":1}}`))
	c.onSummary(reply(`{"server":{"id":"NA"},"data":{"streams":9,"consumers":9,"accounts":9,"total":9}}`))
	c.onSummary(reply(`{"data":{"streams":1}}`))
	c.onSummary(reply(`{"server":`))
	c.onSummary(&nats.Msg{Header: nats.Header{"Status": []string{"503"}}}) // no responders: the census says so

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sum, err := c.summary(ctx, snapshot.Server{ID: "NA", Name: "a"}, true)
	if err != nil || sum.Data == nil || sum.Data.Consumers != 2 {
		t.Errorf("summary of NA: %+v, %v; want its first reply", sum, err)
	}
	var got []string
	for _, p := range c.snap.Problems {
		got = append(got, p.Request+": "+p.Err)
	}
	if len(got) != 2 || !strings.Contains(got[0], "reply names no server") || !strings.Contains(got[1], "malformed") {
		t.Errorf("problems %q, want one reply naming no server and one malformed", got)
	}

	// A server that had the broadcast and whose reply does not come is
	// waited for until the audit ends, then named.
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if _, err := c.summary(short, snapshot.Server{ID: "NB", Name: "b"}, true); err == nil || !strings.Contains(err.Error(), "no reply within the audit timeout") {
		t.Errorf("summary of NB, never sent: %v, want no reply within the audit timeout", err)
	}

	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.onSummary(reply(`{"server":`))
	if len(c.snap.Problems) != 2 {
		t.Errorf("a reply after the audit closed added a problem: %+v", c.snap.Problems)
	}
}
