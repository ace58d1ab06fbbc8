package auditor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	json "github.com/segmentio/encoding/json"

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

func TestParseJSZCountsRejectsBadReplies(t *testing.T) {
	for _, tt := range []struct{ reply, want string }{
		{`{"data":`, "malformed reply"},
		{`{}`, "reply carries no data"},
		{`{"error":{"code":503,"err_code":10039,"description":"jetstream not enabled"}}`, "jetstream not enabled (10039)"},
		{`{"data":{"total":1,"account_details":[{"stream_detail":[{"state":{"consumer_count":-1}}]}]}}`, "-1 consumers"},
	} {
		if _, err := parseJSZCounts([]byte(tt.reply)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.reply, err, tt.want)
		}
	}
}

func TestPagePlan(t *testing.T) {
	// accounts of n consumers in one stream each
	counts := func(total int, consumers ...int) pagePlan {
		t.Helper()
		var accs []string
		for _, n := range consumers {
			accs = append(accs, fmt.Sprintf(`{"stream_detail":[{"state":{"consumer_count":%d}}]}`, n))
		}
		p, err := parseJSZCounts([]byte(fmt.Sprintf(`{"data":{"total":%d,"account_details":[%s]}}`, total, strings.Join(accs, ","))))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mib = 1 << 20
	acct := func(consumers int) int64 { return bytesPerAccount + bytesPerStream + int64(consumers)*bytesPerConsumer }
	tests := []struct {
		name     string
		plan     pagePlan
		limit    int64
		pageSize int
		total    int64
	}{
		{"small beside the bound: the configured pages", counts(3, 1000, 1000, 1000), 32 * mib, 1024, 3*acct(1000) + bytesPerReply},
		// 5 × 7,000 consumers: about 35 MB, more than a third of 32 MiB;
		// one account (7 MB) a page keeps pages within 8 MiB, two would not.
		{"large: split into pages within a quarter", counts(5, 7000, 7000, 7000, 7000, 7000), 32 * mib, 1, 5*acct(7000) + bytesPerReply},
		{"large, small accounts: several a page", counts(6, 2000, 2000, 2000, 2000, 2000, 2000), 12 * mib, 1, 6*acct(2000) + bytesPerReply},
		{"large, small accounts, larger bound", counts(6, 2000, 2000, 2000, 2000, 2000, 2000), 24 * mib, 3, 6*acct(2000) + bytesPerReply},
		{"one account: nothing to split", counts(1, 40000), 32 * mib, 1024, acct(40000) + bytesPerReply},
		// 2.10 sends no total; a listing short of the total cannot be split
		// by it either; the unlisted accounts count as the largest listed.
		{"no total (2.10)", counts(0, 20000, 20000), 32 * mib, 1024, 2*acct(20000) + bytesPerReply},
		{"a partial listing", counts(4, 20000, 20000), 32 * mib, 1024, 4*acct(20000) + bytesPerReply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.plan.plan(1024, tt.limit)
			if p.pageSize != tt.pageSize || p.total != tt.total {
				t.Errorf("page size %d, estimate %d; want %d, %d", p.pageSize, p.total, tt.pageSize, tt.total)
			}
			if p.pageSize < 1024 {
				for off := 0; off < len(p.perAccount); off += p.pageSize {
					if e := p.estimate(off, p.pageSize); e > tt.limit/4 {
						t.Errorf("page at %d: estimate %d over a quarter of %d", off, e, tt.limit)
					}
				}
			}
		})
	}
	// A page the listing does not cover is estimated as the whole server.
	p := counts(2, 10, 10)
	if got := p.estimate(2, 1); got != p.total {
		t.Errorf("estimate past the listing %d, want the whole %d", got, p.total)
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
	page   bool   // a request for consumers, not the counts
	reply  bool
	// offset and limit of a page request
	offset, limit int
	size          int       // of a reply
	plan          *pagePlan // what the counts in a reply to a counts request plan
	err           error
}

// watchJSZ records the audit's JSZ traffic; the plan of each counts reply is
// made with bound, as the audit makes it.
func watchJSZ(t *testing.T, nc *nats.Conn, bound int64) *jszTraffic {
	t.Helper()
	tr := &jszTraffic{}
	pending := map[string]jszEvent{}
	record := func(m *nats.Msg) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if strings.HasPrefix(m.Subject, "$SYS.REQ.SERVER.") {
			var req jszRequest
			e := jszEvent{server: strings.Split(m.Subject, ".")[3], page: strings.Contains(string(m.Data), `"consumer":true`)}
			e.err = json.Unmarshal(m.Data, &req)
			e.offset, e.limit = req.Offset, req.Limit
			pending[m.Reply] = e
			tr.events = append(tr.events, e)
			return
		}
		if req, ok := pending[m.Subject]; ok {
			req.reply, req.size = true, len(m.Data)
			if !req.page {
				var p pagePlan
				p, req.err = parseJSZCounts(m.Data)
				p = p.plan(DefaultJSZPageSize, bound)
				req.plan = &p
			}
			tr.events = append(tr.events, req)
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
// hosting a stream of 75 consumers in each of two accounts, through one
// server. Watched on that server: every server is asked for its counts
// before its pages, the estimate from the counts covers every page, and
// every consumer is found. With a bound smaller than any reply, no page is
// asked while another is unanswered, and the servers that sort their pages
// (2.11 on) are asked one account a page.
func TestCollectBoundsRepliesInFlight(t *testing.T) {
	const perStream = 75
	names := []string{"n1", "n2", "n3"}
	versions := []string{natstest.Floor, natstest.Old, natstest.NoLevels}
	var specs []natstest.Spec
	for i, name := range names {
		spec := natstest.Node(name, versions[i], "c1")
		spec.ExtraAccounts = 1
		specs = append(specs, spec)
	}
	sys := natstest.Start(t, specs...)
	for _, user := range []string{natstest.AppUser, "acc0001"} {
		password := natstest.AppPassword
		if user != natstest.AppUser {
			password = "acc"
		}
		nc := sys.Connect("n1", user, password)
		for _, name := range names {
			stream := "S" + name
			if err := natstest.AddStream(nc, server.StreamConfig{Name: stream, Subjects: []string{stream}, Storage: server.MemoryStorage,
				Placement: &server.Placement{Tags: []string{"node:" + name}}}); err != nil {
				t.Fatalf("stream of %s on %s: %v", user, name, err)
			}
			for i := range perStream {
				if err := natstest.AddConsumer(nc, stream, server.ConsumerConfig{Durable: fmt.Sprintf("C%03d", i), AckPolicy: server.AckExplicit,
					FilterSubject: stream, Description: "a consumer of the kind a service makes"}); err != nil {
					t.Fatalf("consumer of %s's %s: %v", user, stream, err)
				}
			}
		}
	}

	for _, tt := range []struct {
		name  string
		bound int
	}{{"one at a time", 1}, {"the default bound", 0}} {
		t.Run(tt.name, func(t *testing.T) {
			bound := int64(cmp.Or(tt.bound, DefaultMaxBytesInFlight))
			observer := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
			tr := watchJSZ(t, observer, bound)
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
				if hosted[name] != 2*perStream {
					t.Errorf("%s leads %d consumers in the snapshot, want %d", name, hosted[name], 2*perStream)
				}
			}
			// Every reply the audit read has come by the time Collect
			// returns; the observer's copies may still be on their way.
			var events []jszEvent
			if err := natstest.Eventually(10*time.Second, func() error {
				tr.mu.Lock()
				defer tr.mu.Unlock()
				events = append(events[:0], tr.events...)
				requests, replies := 0, 0
				for _, e := range events {
					if e.reply {
						replies++
					} else {
						requests++
					}
				}
				if replies < requests || requests < 2*len(names) {
					return fmt.Errorf("observed %d JSZ requests and %d replies: %+v", requests, replies, events)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			plans := map[string]*pagePlan{}
			open := map[string]bool{} // pages asked and unanswered, by server id
			pageSizes := map[string][]int{}
			for _, e := range events {
				if e.err != nil {
					t.Errorf("server %s: %v", e.server, e.err)
				}
				switch {
				case !e.page && e.reply:
					plans[e.server] = e.plan
				case e.page && !e.reply:
					if plans[e.server] == nil {
						t.Errorf("server %s asked for its pages before its counts came", e.server)
					}
					if tt.bound == 1 && len(open) > 0 {
						t.Errorf("server %s asked for a page while those of %v were unanswered", e.server, open)
					}
					open[e.server] = true
					pageSizes[e.server] = append(pageSizes[e.server], e.limit)
				case e.page && e.reply:
					delete(open, e.server)
					if p := plans[e.server]; p != nil {
						if est := p.estimate(e.offset, e.limit); est < int64(e.size) {
							t.Errorf("server %s, page at %d of %d: estimate %d bytes from its counts, page %d bytes", e.server, e.offset, e.limit, est, e.size)
						}
					}
				}
			}
			for _, s := range snap.Servers {
				want := DefaultJSZPageSize
				if tt.bound == 1 && "v"+s.Version != natstest.NoLevels {
					want = 1
				}
				if len(pageSizes[s.ID]) == 0 || pageSizes[s.ID][0] != want {
					t.Errorf("%s (%s) asked with page sizes %v, want pages of %d", s.Name, s.Version, pageSizes[s.ID], want)
				}
			}
		})
	}
}
