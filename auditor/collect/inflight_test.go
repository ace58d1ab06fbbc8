package collect

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

func TestJSZCountsRejectBadReplies(t *testing.T) {
	summary := func(data []byte) error { _, err := parseJSZSummary(data, DefaultJSZPageSize); return err }
	counts := func(data []byte) error {
		_, err := pagePlan{accounts: 1, pageSize: DefaultJSZPageSize}.withCounts(data, DefaultMaxBytesInFlight)
		return err
	}
	for _, tt := range []struct {
		parse       func([]byte) error
		reply, want string
	}{
		{summary, `{"data":`, "malformed reply"},
		{summary, `{}`, "reply carries no data"},
		{summary, `{"error":{"code":503,"err_code":10039,"description":"jetstream not enabled"}}`, "jetstream not enabled (10039)"},
		{summary, `{"data":{"streams":-1,"consumers":2,"accounts":1}}`, "-1 streams"},
		{counts, `{"data":`, "malformed reply"},
		{counts, `{}`, "reply carries no data"},
		{counts, `{"data":{"account_details":[{"stream_detail":[{"state":{"consumer_count":-1}}]}]}}`, "-1 consumers"},
	} {
		if err := tt.parse([]byte(tt.reply)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.reply, err, tt.want)
		}
	}
}

func TestPagePlan(t *testing.T) {
	const mib = 1 << 20
	acct := func(consumers int) int64 { return bytesPerAccount + bytesPerStream + int64(consumers)*bytesPerConsumer }
	// plan makes the plan of a server whose accounts hold one stream of
	// these many consumers each, as jsz does; total 0 is a server before
	// 2.11.2, listed shows only the first accounts in the counts reply.
	plan := func(t *testing.T, limit int64, total, listed int, consumers ...int) pagePlan {
		t.Helper()
		sum := 0
		for _, n := range consumers {
			sum += n
		}
		p, err := parseJSZSummary([]byte(fmt.Sprintf(`{"data":{"streams":%d,"consumers":%d,"accounts":%d,"total":%d}}`,
			len(consumers), sum, len(consumers), total)), DefaultJSZPageSize)
		if err != nil {
			t.Fatal(err)
		}
		if !p.needsCounts(limit) {
			return p
		}
		var accs []string
		for _, n := range consumers[:listed] {
			accs = append(accs, fmt.Sprintf(`{"stream_detail":[{"state":{"consumer_count":%d}}]}`, n))
		}
		p, err = p.withCounts([]byte(fmt.Sprintf(`{"data":{"account_details":[%s]}}`, strings.Join(accs, ","))), limit)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name      string
		limit     int64
		total     int // 0: before 2.11.2
		consumers []int
		listed    int // accounts in the counts reply; 0: all
		pageSize  int
	}{
		{"small beside the bound: the configured pages", 32 * mib, 3, []int{1000, 1000, 1000}, 0, 1024},
		// 5 × 7,000 consumers: about 35 MB, more than a third of 32 MiB;
		// one account (7 MB) a page keeps pages within 8 MiB, two would not.
		{"large: one account a page", 32 * mib, 5, []int{7000, 7000, 7000, 7000, 7000}, 0, 1},
		{"large, smaller accounts: three a page", 24 * mib, 6, []int{2000, 2000, 2000, 2000, 2000, 2000}, 0, 3},
		// Pages of 4 would put the two large accounts in the last, partial
		// page: it counts as the full ones do.
		{"uneven: the last, partial page counts", 12 * mib, 7, []int{100, 100, 100, 100, 100, 1500, 3000}, 0, 3},
		{"one account: nothing to split", 32 * mib, 1, []int{40000}, 0, 1024},
		{"before 2.11.2: pages in no stable order, not split", 32 * mib, 0, []int{20000, 20000}, 0, 1024},
		{"accounts came since the summary: its estimate, not split", 32 * mib, 3, []int{20000, 20000, 20000}, 2, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			listed := cmp.Or(tt.listed, len(tt.consumers))
			p := plan(t, tt.limit, tt.total, listed, tt.consumers...)
			var want int64 = bytesPerReply
			for _, n := range tt.consumers {
				want += acct(n)
			}
			if p.pageSize != tt.pageSize || p.total != want {
				t.Errorf("page size %d, estimate %d; want %d, %d", p.pageSize, p.total, tt.pageSize, want)
			}
			if p.pageSize < DefaultJSZPageSize {
				for off := 0; off < len(tt.consumers); off += p.pageSize {
					if e := p.estimate(off, p.pageSize); e > tt.limit/4 {
						t.Errorf("page at %d: estimate %d over a quarter of %d", off, e, tt.limit)
					}
				}
			} else if e := p.estimate(0, p.pageSize); e != p.total {
				t.Errorf("one page estimated at %d, want the whole %d", e, p.total)
			}
		})
	}
	// More accounts than one counts request lists are not counted one by
	// one: the summary's estimate stands.
	many := make([]int, DefaultJSZPageSize+1)
	for i := range many {
		many[i] = 100
	}
	if p, _ := parseJSZSummary([]byte(fmt.Sprintf(`{"data":{"streams":%d,"consumers":%d,"accounts":%d,"total":%d}}`,
		len(many), 100*len(many), len(many), len(many))), DefaultJSZPageSize); p.needsCounts(1) {
		t.Errorf("a server of %d accounts is to be counted in one request", len(many))
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
	kind   string // "summary", "counts" or "page"
	page   bool
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
	plans := map[string]*pagePlan{}
	record := func(m *nats.Msg) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if strings.HasPrefix(m.Subject, "$SYS.REQ.SERVER.") {
			var req jszRequest
			e := jszEvent{server: strings.Split(m.Subject, ".")[3]}
			e.err = json.Unmarshal(m.Data, &req)
			switch {
			case req.Consumer:
				e.kind, e.page = "page", true
			case req.Accounts:
				e.kind = "counts"
			default:
				e.kind = "summary"
			}
			e.plan = plans[e.server]
			e.offset, e.limit = req.Offset, req.Limit
			pending[m.Reply] = e
			tr.events = append(tr.events, e)
			return
		}
		if req, ok := pending[m.Subject]; ok {
			if req.server == "PING" {
				// The census's broadcast: each server's reply names it.
				var sum *jszSummary
				if sum, req.err = decodeJSZSummary(m.Data); req.err == nil {
					req.server = sum.Server.ID
				}
			}
			req.reply, req.size = true, len(m.Data)
			switch req.kind {
			case "summary":
				var p pagePlan
				p, req.err = parseJSZSummary(m.Data, DefaultJSZPageSize)
				plans[req.server] = &p
			case "counts":
				if p := plans[req.server]; p != nil {
					*p, req.err = p.withCounts(m.Data, bound)
				}
			}
			req.plan = plans[req.server]
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
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case m := <-msgs:
				record(m)
			case <-done:
				return
			}
		}
	}()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestCollectBoundsRepliesInFlight audits servers of three versions, each
// hosting a stream of 75 consumers in each of two accounts, through one
// server. Watched on that server: every server is asked for its summary
// before anything else of its JSZ, the requests within the bound never
// hold more than it beside each other, each estimate covers its reply, and
// every consumer is found. With a bound smaller than any reply, no request
// within it is asked while another is unanswered, and the servers that sort
// their pages (2.11.2 on) are counted account by account and asked one
// account a page.
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
				requests, replies, summaries := 0, 0, 0
				for _, e := range events {
					switch {
					case e.kind == "summary" && e.reply:
						summaries++
					case e.reply:
						replies++
					case e.kind != "summary":
						requests++
					}
				}
				if summaries < len(names) || replies < requests || requests < len(names) {
					return fmt.Errorf("observed %d JSZ summaries, %d other requests and %d replies: %+v", summaries, requests, replies, events)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// open holds the estimates of the requests within the bound (a
			// large server's counts, every page) asked and unanswered.
			open := map[string]int64{}
			held := func() (sum int64) {
				for _, e := range open {
					sum += min(e, bound)
				}
				return sum
			}
			summarised := map[string]bool{}
			pageSizes := map[string][]int{}
			for _, e := range events {
				if e.err != nil {
					t.Errorf("server %s: %v", e.server, e.err)
				}
				switch {
				case e.kind == "summary" && e.reply:
					summarised[e.server] = true
				case e.kind != "summary" && !e.reply:
					if !summarised[e.server] || e.plan == nil {
						t.Errorf("server %s asked for its %s before its summary came", e.server, e.kind)
						continue
					}
					if tt.bound == 1 && len(open) > 0 {
						t.Errorf("server %s asked for its %s while %v were unanswered", e.server, e.kind, open)
					}
					est := e.plan.countsEstimate()
					if e.page {
						est = e.plan.estimate(e.offset, e.limit)
						pageSizes[e.server] = append(pageSizes[e.server], e.limit)
					}
					if sum := held() + min(est, bound); len(open) > 0 && sum > bound {
						t.Errorf("server %s asked for its %s (about %d bytes) beside %v: %d bytes in flight, bound %d", e.server, e.kind, est, open, sum, bound)
					}
					open[e.server] = est
				case e.kind != "summary" && e.reply:
					if est := open[e.server]; est < int64(e.size) {
						t.Errorf("server %s, %s at %d of %d: estimate %d bytes, reply %d bytes", e.server, e.kind, e.offset, e.limit, est, e.size)
					}
					delete(open, e.server)
				}
			}
			// The census and its JSZ broadcast (every server's summary),
			// then per server LEAFZ; one at a time, the two 2.11.2+ servers
			// are counted account by account and asked one account a page
			// (the second page ends the paging by the total), the 2.10
			// server once.
			if want := map[int]int{1: 2 + 3 + 2 + 2 + 2 + 1, 0: 2 + 3 + 3}[tt.bound]; snap.Requests != want {
				t.Errorf("%d requests, want %d", snap.Requests, want)
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

// A server before 2.11.2 takes a limit of 0 as 1024 (2.10.27 monitor.go
// Jsz): asking it for every account at once must send a number. (The
// real-server case of 1,031 accounts on 2.10 in TestCollectPagesOverAccounts
// cannot show it alone: that server lists its accounts in map order, and
// two listings of 1,024 of them rarely miss the same ones.)
func TestEveryAccountAtOnceIsAskedByNumber(t *testing.T) {
	data, err := json.Marshal(jszPage(0, allAccounts))
	if err != nil {
		t.Fatal(err)
	}
	var req struct{ Limit int }
	if err := json.Unmarshal(data, &req); err != nil || req.Limit < 1<<20 {
		t.Errorf("every account at once asked as %s, want a limit no server reaches", data)
	}
}

// parseJSZSummary is the plan a summary reply makes at pageSize, as jsz makes it.
func parseJSZSummary(data []byte, pageSize int) (pagePlan, error) {
	resp, err := decodeJSZSummary(data)
	if err != nil {
		return pagePlan{}, err
	}
	return resp.plan(pageSize)
}
