package auditor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestReplyBudget(t *testing.T) {
	b := newReplyBudget(100)
	// An estimate beyond the bound takes the whole bound, so that a server
	// larger than it is still asked, alone.
	big, err := b.acquire(context.Background(), 500)
	if err != nil || big != 100 {
		t.Fatalf("acquire(500) = %d, %v; want the whole bound, 100", big, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.acquire(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire while the bound is held: %v, want the context's deadline", err)
	}
	b.release(big)
	a, err := b.acquire(context.Background(), 60)
	if err != nil || a != 60 {
		t.Fatalf("acquire(60) = %d, %v", a, err)
	}
	// A zero estimate still holds a byte: a server is never asked without
	// taking its turn.
	if z, err := b.acquire(context.Background(), 0); err != nil || z != 1 {
		t.Fatalf("acquire(0) = %d, %v; want 1", z, err)
	}
	if b.sem.TryAcquire(40) {
		t.Error("61 of 100 held, yet 40 more were let in")
	}
}

func TestParseJSZSummaryRejectsBadReplies(t *testing.T) {
	for _, tt := range []struct{ reply, want string }{
		{`{"data":`, "malformed reply"},
		{`{}`, "reply carries no data"},
		{`{"error":{"code":503,"err_code":10039,"description":"jetstream not enabled"}}`, "jetstream not enabled (10039)"},
		{`{"data":{"streams":-1,"consumers":2,"total":1}}`, "-1 streams"},
	} {
		if _, err := parseJSZSummary([]byte(tt.reply)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.reply, err, tt.want)
		}
	}
}

// jszTraffic records, in the order the server the audit is connected to
// passes them on, the JSZ requests of an audit and the replies to them.
type jszTraffic struct {
	mu     sync.Mutex
	events []jszEvent
}

type jszEvent struct {
	server string // the server id a request is directed at
	inbox  string // the request's reply subject, or the reply's subject
	page   bool   // a request for details, not the counts alone
	reply  bool
	size   int
	// estimate is what the counts in a reply to a counts request promise.
	estimate int64
	err      error
}

func watchJSZ(t *testing.T, nc *nats.Conn) *jszTraffic {
	t.Helper()
	tr := &jszTraffic{}
	pending := map[string]*jszEvent{}
	record := func(m *nats.Msg) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if strings.HasPrefix(m.Subject, "$SYS.REQ.SERVER.") {
			id := strings.Split(m.Subject, ".")[3]
			e := &jszEvent{server: id, inbox: m.Reply, page: strings.Contains(string(m.Data), `"accounts":true`)}
			pending[m.Reply] = e
			tr.events = append(tr.events, *e)
			return
		}
		if req, ok := pending[m.Subject]; ok {
			e := jszEvent{server: req.server, inbox: m.Subject, page: req.page, reply: true, size: len(m.Data)}
			if !e.page {
				e.estimate, e.err = parseJSZSummary(m.Data)
			}
			tr.events = append(tr.events, e)
		}
	}
	// One channel for both subscriptions: nats.go's read loop fills it in
	// the order the server sent (a handler each would run on goroutines of
	// their own).
	msgs := make(chan *nats.Msg, 1<<16)
	for _, subj := range []string{"$SYS.REQ.SERVER.*.JSZ", "_INBOX.>"} {
		sub, err := nc.ChanSubscribe(subj, msgs)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	go func() {
		for m := range msgs {
			record(m)
		}
	}()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestCollectBoundsRepliesInFlight audits servers of three versions, each
// hosting its own stream of 150 consumers, through one server, with a bound
// on the bytes in flight smaller than any one reply: watched on that
// server, no server is asked for its pages while another's are unanswered,
// each is asked for its counts first, and every consumer is still found.
// It also holds the estimate from a server's counts to the replies that
// follow on every version.
func TestCollectBoundsRepliesInFlight(t *testing.T) {
	const perServer = 150
	names := []string{"n1", "n2", "n3"}
	versions := []string{natstest.Floor, natstest.Old, natstest.NoLevels}
	var specs []natstest.Spec
	for i, name := range names {
		specs = append(specs, natstest.Node(name, versions[i], "c1"))
	}
	sys := natstest.Start(t, specs...)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	for _, name := range names {
		stream := "S" + name
		if err := natstest.AddStream(app, server.StreamConfig{Name: stream, Subjects: []string{stream}, Storage: server.MemoryStorage,
			Placement: &server.Placement{Tags: []string{"node:" + name}}}); err != nil {
			t.Fatalf("stream on %s: %v", name, err)
		}
		for i := range perServer {
			if err := natstest.AddConsumer(app, stream, server.ConsumerConfig{Durable: fmt.Sprintf("C%03d", i), AckPolicy: server.AckExplicit,
				FilterSubject: stream, Description: "a consumer of the kind a service makes"}); err != nil {
				t.Fatalf("consumer of %s: %v", stream, err)
			}
		}
	}

	for _, tt := range []struct {
		name  string
		bound int
	}{{"one at a time", 1}, {"the default bound", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			observer := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
			tr := watchJSZ(t, observer)
			nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
			snap, err := Collect(context.Background(), nc, Options{MaxBytesInFlight: tt.bound, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Problems) != 0 {
				t.Fatalf("problems: %+v", snap.Problems)
			}
			hosted := map[string]int{}
			for _, c := range snap.Consumers {
				hosted[c.Leader]++
			}
			for _, name := range names {
				if hosted[name] != perServer {
					t.Errorf("%s leads %d consumers in the snapshot, want %d", name, hosted[name], perServer)
				}
			}
			// Every reply the audit read has come by the time Collect
			// returns; the observer's copies may still be on their way.
			var events []jszEvent
			if err := natstest.Eventually(10*time.Second, func() error {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				events = append(events[:0], tr.events...)
				replies := 0
				for _, e := range events {
					if e.reply {
						replies++
					}
				}
				if replies < 2*len(names) {
					return fmt.Errorf("observed %d JSZ replies of %d: %+v", replies, 2*len(names), events)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			counted, asked := map[string]bool{}, map[string]bool{}
			open := map[string]bool{} // pages asked and unanswered, by server id
			estimates := map[string]int64{}
			for _, e := range events {
				switch {
				case !e.page && e.reply:
					if e.err != nil {
						t.Errorf("server %s's counts: %v", e.server, e.err)
					}
					counted[e.server], estimates[e.server] = true, e.estimate
				case e.page && !e.reply:
					if !counted[e.server] {
						t.Errorf("server %s asked for its pages before its counts came", e.server)
					}
					if tt.bound == 1 && len(open) > 0 {
						t.Errorf("server %s asked for its pages while those of %v were unanswered", e.server, open)
					}
					open[e.server], asked[e.server] = true, true
				case e.page && e.reply:
					delete(open, e.server)
					if estimates[e.server] < int64(e.size) {
						t.Errorf("server %s: estimate %d bytes from its counts, page %d bytes", e.server, estimates[e.server], e.size)
					}
				}
			}
			if len(asked) != len(names) {
				t.Errorf("pages asked of %d servers, want %d: %+v", len(asked), len(names), events)
			}
		})
	}
}
