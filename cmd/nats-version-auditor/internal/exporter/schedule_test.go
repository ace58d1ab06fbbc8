package exporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestSchedulerSharesAudits(t *testing.T) {
	var audits atomic.Int32
	release := make(chan struct{})
	audit := func(context.Context) *findings.Report {
		audits.Add(1)
		<-release
		return auditor.Evaluate(&snapshot.Snapshot{Servers: []snapshot.Server{{ID: "A", Name: "a", Version: "2.14.0"}}}, auditor.Policy{Floor: version.DefaultFloor})
	}
	s := NewScheduler(context.Background(), audit, time.Hour, nil)

	// Ten scrapes arrive together: one audit serves them all.
	var wg sync.WaitGroup
	results := make([]findings.Result, 10)
	for i := range results {
		wg.Go(func() { results[i] = s.Get(context.Background()) })
	}
	for audits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := audits.Load(); n != 1 {
		t.Fatalf("%d audits for ten concurrent callers, want 1", n)
	}
	for i, r := range results {
		if r.Report == nil || r.Audits != 1 || r.LastSuccess.IsZero() {
			t.Fatalf("caller %d got %+v", i, r)
		}
	}
	// Within the interval the last result is served as it is.
	if r := s.Get(context.Background()); r.Audits != 1 || audits.Load() != 1 {
		t.Fatalf("a caller within the interval started audit %d", audits.Load())
	}
}

func TestSchedulerAfterIntervalAndOnCancel(t *testing.T) {
	var audits atomic.Int32
	block := make(chan struct{})
	audit := func(context.Context) *findings.Report {
		if audits.Add(1) == 2 {
			<-block
		}
		return findings.Failed(context.DeadlineExceeded, version.DefaultFloor, "", time.Now(), 0)
	}
	s := NewScheduler(context.Background(), audit, time.Hour, nil)
	now := time.Now()
	s.now = func() time.Time { return now }

	first := s.Get(context.Background())
	if first.Report.Complete() || !first.LastSuccess.IsZero() {
		t.Fatalf("a failed audit counted as a success: %+v", first)
	}
	if first.Report.Floor.String() != "2.14.0" || first.Report.Status != findings.Unknown {
		t.Fatalf("failed report floor %q status %s", first.Report.Floor, first.Report.Status)
	}

	now = now.Add(2 * time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The second audit blocks; a caller that gives up gets the last result.
	if r := s.Get(ctx); r.Audits != 1 {
		t.Fatalf("a cancelled caller got %+v, want the first result", r)
	}
	close(block)
	for s.Latest().Audits != 2 {
		time.Sleep(time.Millisecond)
	}
	if n := audits.Load(); n != 2 {
		t.Fatalf("%d audits, want 2", n)
	}
}

// requestClock records when each audit of a scheduler starts, on synctest's
// fake clock, and the most audits that ran at once. Each audit takes the
// next of takes (the last one once they run out) and reports a server whose
// version is its number ("1", "2", ...).
type requestClock struct {
	mu          sync.Mutex
	starts      []time.Time
	now, maxNow int
}

func (c *requestClock) audit(takes ...time.Duration) AuditFunc {
	return func(context.Context) *findings.Report {
		c.mu.Lock()
		c.starts = append(c.starts, time.Now())
		n := len(c.starts)
		took := takes[min(n, len(takes))-1]
		c.now++
		c.maxNow = max(c.maxNow, c.now)
		c.mu.Unlock()
		time.Sleep(took)
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
		return auditor.Evaluate(&snapshot.Snapshot{Servers: []snapshot.Server{{ID: "A", Name: "a", Version: fmt.Sprint(n)}}}, auditor.Policy{Floor: version.DefaultFloor})
	}
}

func (c *requestClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.starts)
}

func TestSchedulerRequestCoalescesABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c requestClock
		s := NewScheduler(t.Context(), c.audit(100*time.Millisecond), time.Hour, nil)
		s.SetRequestInterval(time.Second)
		// An audit first (a scrape's), so that the burst's audit waits for
		// the request interval on the bubble's clock, which moves only once
		// every goroutine blocks: the whole burst is in before it can
		// start. (A first request with no audit before it fires at once,
		// and could start mid-burst.)
		s.Get(t.Context())
		asked := time.Now()
		for range 50 {
			s.Request("burst")
		}
		synctest.Wait()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := c.count(); n != 2 {
			t.Fatalf("%d audits for a scrape and a burst of 50 requests, want 2", n)
		}
		if c.starts[1].Before(asked) {
			t.Fatal("the requested audit started before the requests")
		}
		if r := s.Latest(); r.Started[findings.ReasonEvent] != 1 || r.Audits != 2 {
			t.Fatalf("result %+v, want 2 audits, 1 requested", r)
		}
		// The hour-long min-interval does not hold a request back.
		s.Request("later")
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := c.count(); n != 3 {
			t.Fatalf("%d audits after a second request, want 3", n)
		}
	})
}

func TestSchedulerRequestRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c requestClock
		s := NewScheduler(t.Context(), c.audit(50*time.Millisecond), time.Hour, nil)
		s.SetRequestInterval(time.Second)
		// A flapping server: an event every 10 ms for a minute.
		start := time.Now()
		for time.Since(start) < time.Minute {
			s.Request("flap")
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // the last requested audit ends
		synctest.Wait()
		n := c.count()
		if n > 61 || n < 55 {
			t.Fatalf("%d audits in a minute of requests every 10 ms with a 1 s interval, want about 60 and at most 61", n)
		}
		for i := 1; i < n; i++ {
			if gap := c.starts[i].Sub(c.starts[i-1]); gap < time.Second {
				t.Fatalf("audits %d and %d started %s apart, under the 1 s interval", i-1, i, gap)
			}
		}
	})
}

func TestSchedulerRequestDuringAuditOvertakesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c requestClock
		// The first audit waits 10 s (a server that just went away); the
		// others take 1 s.
		s := NewScheduler(t.Context(), c.audit(10*time.Second, time.Second), time.Hour, nil)
		s.SetRequestInterval(2 * time.Second)
		go s.Get(t.Context())
		synctest.Wait()
		time.Sleep(time.Second)
		// The running audit may have missed what made the caller ask, and
		// a new one does not wait for it: it starts once the interval
		// since the last start has passed.
		s.Request("server came back")
		synctest.Wait()
		if n := c.count(); n != 1 {
			t.Fatalf("%d audits 1 s after the first started, want 1: the interval is 2 s", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := c.count(); n != 2 {
			t.Fatalf("%d audits, want the running one and one overtaking it", n)
		}
		if gap := c.starts[1].Sub(c.starts[0]); gap != 2*time.Second {
			t.Fatalf("the requested audit started %s after the first, want 2s (the interval)", gap)
		}
		// Requests while two run: no third at once.
		for range 20 {
			s.Request("flap")
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if r := s.Latest(); r.Report == nil || r.Report.Servers[0].Version != "2" {
			t.Fatalf("the overtaking audit's result is not the latest: %+v", r.Report)
		}
		// The first audit ends last: its older result does not replace the
		// newer one's.
		time.Sleep(20 * time.Second)
		synctest.Wait()
		r := s.Latest()
		if v := r.Report.Servers[0].Version; v == "1" {
			t.Fatal("the audit that started first, and ended last, replaced a newer result")
		}
		if c.maxNow > 2 {
			t.Fatalf("%d audits ran at once, want at most 2", c.maxNow)
		}
		if r.Audits != uint64(c.count()) {
			t.Fatalf("Audits = %d, %d ran", r.Audits, c.count())
		}
	})
}

func TestSchedulerRequestServedByAScrape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c requestClock
		s := NewScheduler(t.Context(), c.audit(10*time.Millisecond), 0, nil)
		s.SetRequestInterval(time.Minute)
		s.Get(t.Context())
		// The request waits for the interval; a scrape's audit starts first
		// and serves it.
		s.Request("event")
		time.Sleep(time.Second)
		s.Get(t.Context())
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := c.count(); n != 2 {
			t.Fatalf("%d audits, want 2: the scrape's audit serves the pending request", n)
		}
		if r := s.Latest(); r.Started[findings.ReasonEvent] != 0 {
			t.Fatalf("audits started for an event: %d, want 0", r.Started[findings.ReasonEvent])
		}
	})
}

func TestSchedulerRequestAfterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c requestClock
		ctx, cancel := context.WithCancel(t.Context())
		s := NewScheduler(ctx, c.audit(10*time.Millisecond), time.Hour, nil)
		s.SetRequestInterval(time.Second)
		// An audit first, so that the request below waits for its interval
		// on the bubble's clock: with none before it, its timer fires at
		// once, on a goroutine that may start the audit before cancel().
		s.Get(ctx)
		s.Request("before")
		cancel()
		s.Request("after")
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := c.count(); n != 1 {
			t.Fatalf("%d audits, want only the one before the base context ended", n)
		}
	})
}

// TestSchedulerCountsPinChanges: each audit's pins are held against the
// last one's, and the changes add up across audits.
func TestSchedulerCountsPinChanges(t *testing.T) {
	pins := []struct{ leader, holder string }{{"n1", "a"}, {"n1", "b"}, {"n2", ""}, {"n2", "c"}}
	var n atomic.Int32
	audit := func(context.Context) *findings.Report {
		p := pins[n.Add(1)-1]
		servers := []snapshot.Server{{Name: "n1"}, {Name: "n2"}}
		for i := range servers {
			servers[i].SetVersion("2.15.3")
		}
		snap := &snapshot.Snapshot{Servers: servers, Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "APP", Stream: "WORK", Consumer: "shard",
			Leader: p.leader, Pull: &snapshot.PullState{Policy: snapshot.PriorityPinnedClient, FromLeader: true, PinnedID: p.holder}}}}
		return auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	}
	s := NewScheduler(context.Background(), audit, time.Hour, nil)
	now := time.Now()
	s.now = func() time.Time { return now }
	var last findings.Result
	for range pins {
		last = s.Get(context.Background())
		now = now.Add(2 * time.Hour)
	}
	if want := (findings.PinChanges{Pin: 2, WithLeader: 1}); last.Audits != 4 || last.PinChanges != want {
		t.Errorf("after %d audits: %+v, want %+v", last.Audits, last.PinChanges, want)
	}
}

// leaderAudit is an audit of consumer APP > S > c on n1 (2.14.0), n2
// (2.14.0) and n3 (2.12.15), led by whatever leader says when it runs,
// after waiting for hold (if not nil).
func leaderAudit(leader func() string, hold <-chan struct{}) AuditFunc {
	return func(context.Context) *findings.Report {
		started := time.Now()
		l := leader()
		if hold != nil {
			<-hold
		}
		servers := []snapshot.Server{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
		for i, v := range []string{"2.14.0", "2.14.0", "2.12.15"} {
			servers[i].SetVersion(v)
		}
		return auditor.Evaluate(&snapshot.Snapshot{Started: started, Servers: servers, Consumers: []snapshot.Asset{{Kind: releases.KindConsumer,
			Account: "APP", Stream: "S", Consumer: "c", Leader: l, Replicas: 3, Peers: []string{"n1", "n2", "n3"}}}}, leaderPolicy)
	}
}

var leaderPolicy = auditor.Policy{Floor: version.DefaultFloor}

func leaderOf(r findings.Result) string { return r.Report.Snapshot.Consumers[0].Leader }

func moved(to string, elected time.Time) snapshot.LeaderChange {
	return snapshot.LeaderChange{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "c", Leader: to, Elected: elected, Heard: time.Now()}
}

// TestSchedulerAmendsWithoutAnAudit: a leader change applies to the last
// result and its findings at once; a change of an asset the audit did not
// see is handed back for an audit and changes nothing.
func TestSchedulerAmendsWithoutAnAudit(t *testing.T) {
	s := NewScheduler(context.Background(), leaderAudit(func() string { return "n1" }, nil), time.Hour, nil)
	s.SetReevaluate(func(snap *snapshot.Snapshot) *findings.Report { return auditor.Evaluate(snap, leaderPolicy) })
	if r := s.Get(context.Background()); leaderOf(r) != "n1" || r.Report.Status != findings.Warning && r.Report.Status != findings.Critical {
		t.Fatalf("first audit: leader %s, status %s", leaderOf(r), r.Report.Status)
	}
	before := s.Latest().Report.Findings
	unseen, stale := s.Amend([]snapshot.LeaderChange{moved("n3", time.Now())})
	r := s.Latest()
	if len(unseen)+len(stale) != 0 || leaderOf(r) != "n3" || r.Amended.IsZero() || r.Amendments != 1 || r.Audits != 1 {
		t.Fatalf("after the move: leader %s, amended %v (%d), %d audits, unseen %v, stale %v", leaderOf(r), r.Amended, r.Amendments, r.Audits, unseen, stale)
	}
	if !hasCode(r.Report.Findings, findings.ConsumerLeaderBelowFloor) || hasCode(before, findings.ConsumerLeaderBelowFloor) {
		t.Errorf("the findings did not follow the leader to n3 (2.12.15): %v", r.Report.Findings)
	}
	other := moved("n2", time.Now())
	other.Consumer = "not-audited"
	if unseen, _ := s.Amend([]snapshot.LeaderChange{other}); len(unseen) != 1 || s.Latest().Amendments != 1 {
		t.Errorf("a change of an unseen consumer: unseen %v, amendments %d", unseen, s.Latest().Amendments)
	}
}

// TestSchedulerAmendsAnAuditThatReadTheOldLeader: a change heard while an
// audit runs is applied to that audit's result too, which may have read the
// consumer before the change.
func TestSchedulerAmendsAnAuditThatReadTheOldLeader(t *testing.T) {
	hold := make(chan struct{})
	var n atomic.Int32
	audit := func(ctx context.Context) *findings.Report {
		if n.Add(1) == 1 {
			return leaderAudit(func() string { return "n1" }, nil)(ctx)
		}
		return leaderAudit(func() string { return "n1" }, hold)(ctx)
	}
	// Every Get audits: the changes are heard by the same clock as the
	// audits start.
	s := NewScheduler(context.Background(), audit, 0, nil)
	s.SetReevaluate(func(snap *snapshot.Snapshot) *findings.Report { return auditor.Evaluate(snap, leaderPolicy) })
	s.Get(context.Background())
	done := make(chan findings.Result)
	go func() { done <- s.Get(context.Background()) }()
	for n.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if unseen, stale := s.Amend([]snapshot.LeaderChange{moved("n3", time.Now())}); len(unseen)+len(stale) != 0 || leaderOf(s.Latest()) != "n3" {
		t.Fatalf("during the audit: leader %s, unseen %v, stale %v", leaderOf(s.Latest()), unseen, stale)
	}
	close(hold)
	r := <-done
	if r.Audits != 2 || leaderOf(r) != "n3" || r.Amended.IsZero() {
		t.Errorf("the audit that read n1 before the move: %d audits, leader %s, amended %v; want n3", r.Audits, leaderOf(r), r.Amended)
	}
}

// TestSchedulerRefusesOutOfOrderLeaders: an advisory of an election older
// than one already applied, or older than the audit that stands, is not
// applied but handed back for an audit.
func TestSchedulerRefusesOutOfOrderLeaders(t *testing.T) {
	s := NewScheduler(context.Background(), leaderAudit(func() string { return "n1" }, nil), time.Hour, nil)
	s.SetReevaluate(func(snap *snapshot.Snapshot) *findings.Report { return auditor.Evaluate(snap, leaderPolicy) })
	s.Get(context.Background())
	t0 := time.Now()
	if _, stale := s.Amend([]snapshot.LeaderChange{moved("n2", t0.Add(2*time.Second))}); len(stale) != 0 {
		t.Fatalf("an election after the audit: stale %v", stale)
	}
	// Heard after the n2 election, elected before it.
	_, stale := s.Amend([]snapshot.LeaderChange{moved("n3", t0.Add(time.Second))})
	if len(stale) != 1 || leaderOf(s.Latest()) != "n2" {
		t.Errorf("a late advisory: stale %v, leader %s; want it handed back and n2 kept", stale, leaderOf(s.Latest()))
	}
	// Within one batch, too.
	_, stale = s.Amend([]snapshot.LeaderChange{moved("n1", t0.Add(4*time.Second)), moved("n3", t0.Add(3*time.Second))})
	if len(stale) != 1 || leaderOf(s.Latest()) != "n1" {
		t.Errorf("a late advisory in a batch: stale %v, leader %s; want it handed back and n1 kept", stale, leaderOf(s.Latest()))
	}
	// Elected before the audit that stands started.
	_, stale = s.Amend([]snapshot.LeaderChange{moved("n3", s.Latest().Report.Snapshot.Started.Add(-time.Second))})
	if len(stale) != 1 || leaderOf(s.Latest()) != "n1" {
		t.Errorf("an election before the audit: stale %v, leader %s", stale, leaderOf(s.Latest()))
	}
}

func hasCode(fs []findings.Finding, c findings.Code) bool {
	for _, f := range fs {
		if f.Code == c {
			return true
		}
	}
	return false
}

// TestSchedulerChecksBetweenFullAudits: with a drift check, a Get due an
// audit asks the check while the last full audit is younger than the full
// interval, and audits only when the check names a difference, fails, or
// the full interval has passed; GetFull and Request always audit, and a
// check does not take a pending Request's place.
func TestSchedulerChecksBetweenFullAudits(t *testing.T) {
	var audits, checks atomic.Int32
	audit := func(context.Context) *findings.Report {
		audits.Add(1)
		return leaderAudit(func() string { return "n1" }, nil)(context.Background())
	}
	var diff atomic.Value
	diff.Store("")
	s := NewScheduler(context.Background(), audit, time.Second, nil)
	s.SetDriftCheck(func(context.Context, *findings.Report, *findings.Report) (*snapshot.Snapshot, string, error) {
		checks.Add(1)
		return nil, diff.Load().(string), nil
	}, time.Hour)
	now := time.Now()
	s.now = func() time.Time { return now }
	step := func() findings.Result {
		now = now.Add(2 * time.Second)
		return s.Get(context.Background())
	}
	s.Get(context.Background())
	for range 3 {
		step()
	}
	if r := s.Latest(); audits.Load() != 1 || checks.Load() != 3 || r.Checks != 3 || r.Checked.IsZero() {
		t.Fatalf("3 Gets within the full interval: %d audits, %d checks (%d counted)", audits.Load(), checks.Load(), r.Checks)
	}
	diff.Store("n2 hosts 1 more consumer")
	if r := step(); audits.Load() != 2 || r.Started[findings.ReasonCheck] != 1 || r.Audits != 2 {
		t.Fatalf("a check that found a difference: %d audits, started %v", audits.Load(), r.Started)
	}
	diff.Store("")
	if s.GetFull(context.Background()); audits.Load() != 2 {
		t.Fatalf("GetFull within the min interval audited again")
	}
	now = now.Add(2 * time.Second)
	if s.GetFull(context.Background()); audits.Load() != 3 {
		t.Fatalf("GetFull past the min interval: %d audits, want a full one", audits.Load())
	}
	now = now.Add(2 * time.Hour)
	if step(); audits.Load() != 4 {
		t.Fatalf("past the full interval: %d audits, want a full one", audits.Load())
	}
	// Each full audit counted once, under why it ran.
	want := [findings.NumAuditReasons]uint64{findings.ReasonFirst: 1, findings.ReasonCheck: 1, findings.ReasonMaxAge: 1, findings.ReasonFullInterval: 1}
	if r := s.Latest(); r.Started != want {
		t.Errorf("audits started by reason %v, want %v", r.Started, want)
	}
}

// TestSchedulerAuditReasons: a Get with no check audits for "scrape", one
// whose last full audit was incomplete for "incomplete" (a check of counts
// cannot stand in for what was not seen), and a Request for "event".
func TestSchedulerAuditReasons(t *testing.T) {
	var incomplete atomic.Bool
	audit := func(ctx context.Context) *findings.Report {
		if incomplete.Load() {
			return findings.Failed(errors.New("n2 did not answer"), version.Version{}, "", time.Now(), 0)
		}
		return leaderAudit(func() string { return "n1" }, nil)(ctx)
	}
	now := time.Now()
	step := func(s *Scheduler) { now = now.Add(2 * time.Second); s.Get(context.Background()) }

	plain := NewScheduler(context.Background(), audit, time.Second, nil)
	plain.now = func() time.Time { return now }
	step(plain)
	step(plain)
	if r := plain.Latest(); r.Started[findings.ReasonFirst] != 1 || r.Started[findings.ReasonScrape] != 1 {
		t.Errorf("without a check: started %v, want first 1, scrape 1", r.Started)
	}

	checked := NewScheduler(context.Background(), audit, time.Second, nil)
	checked.now = func() time.Time { return now }
	checked.SetDriftCheck(func(context.Context, *findings.Report, *findings.Report) (*snapshot.Snapshot, string, error) {
		return nil, "", nil
	}, time.Hour)
	incomplete.Store(true)
	step(checked)
	incomplete.Store(false)
	step(checked)
	step(checked)
	if r := checked.Latest(); r.Started[findings.ReasonIncomplete] != 1 || r.Checks != 1 {
		t.Errorf("after an incomplete audit: started %v, %d checks; want incomplete 1, then a check", r.Started, r.Checks)
	}
	// A request pending when a scrape comes: a check cannot stand in for
	// what the event said, so the scrape audits in full and serves it.
	pending := NewScheduler(context.Background(), audit, time.Second, nil)
	pending.now = func() time.Time { return now }
	pending.SetDriftCheck(func(context.Context, *findings.Report, *findings.Report) (*snapshot.Snapshot, string, error) {
		return nil, "", nil
	}, time.Hour)
	pending.SetRequestInterval(time.Hour)
	step(pending)
	pending.Request("a server's LAMEDUCK")
	step(pending)
	if r := pending.Latest(); r.Started[findings.ReasonEvent] != 1 || r.Checks != 0 {
		t.Errorf("a scrape with a request pending: started %v, %d checks; want event 1, no check", r.Started, r.Checks)
	}

	checked.SetRequestInterval(time.Millisecond)
	now = now.Add(time.Second)
	checked.Request("a server's SHUTDOWN")
	for deadline := time.Now().Add(10 * time.Second); checked.Latest().Started[findings.ReasonEvent] != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a Request: started %v, want event 1", checked.Latest().Started)
		}
	}
}

// TestSchedulerStandsAReread: a check that read the shards again puts what
// it read in the place of the result: the pin it read is the result's, the
// pin change counts from the audit to the check, and a leader change heard
// while the check ran is applied over it. A check that read the shards
// before an audit that now stands changes nothing.
func TestSchedulerStandsAReread(t *testing.T) {
	servers := []snapshot.Server{{Name: "n1"}, {Name: "n2"}, {Name: "n3"}}
	for i := range servers {
		servers[i].SetVersion("2.14.0")
	}
	peers := []string{"n1", "n2", "n3"}
	var auditPin atomic.Value
	auditPin.Store("A")
	audit := func(context.Context) *findings.Report {
		return auditor.Evaluate(&snapshot.Snapshot{Started: time.Now(), Servers: servers,
			Streams: []snapshot.Asset{{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n1", Replicas: 3, Peers: peers}},
			Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "c", Leader: "n1", Replicas: 3, Peers: peers,
				Pull: &snapshot.PullState{Policy: snapshot.PriorityPinnedClient, FromLeader: true, PinnedID: auditPin.Load().(string)}}}}, leaderPolicy)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	reread := func(_ context.Context, _, last *findings.Report) (*snapshot.Snapshot, string, error) {
		entered <- struct{}{}
		<-release
		snap := *last.Snapshot
		snap.Consumers = slices.Clone(snap.Consumers)
		pull := *snap.Consumers[0].Pull
		pull.PinnedID = "B"
		snap.Consumers[0].Pull = &pull
		return &snap, "", nil
	}
	s := NewScheduler(context.Background(), audit, time.Nanosecond, nil)
	s.SetReevaluate(func(snap *snapshot.Snapshot) *findings.Report { return auditor.Evaluate(snap, leaderPolicy) })
	s.SetDriftCheck(reread, time.Hour)
	s.SetRequestInterval(0)
	s.Get(context.Background())

	got := make(chan findings.Result)
	go func() { got <- s.Get(context.Background()) }()
	<-entered
	if unseen, stale := s.Amend([]snapshot.LeaderChange{{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n2", Elected: time.Now(), Heard: time.Now()}}); len(unseen)+len(stale) > 0 {
		t.Fatalf("the stream's move: unseen %v, stale %v", unseen, stale)
	}
	close(release)
	r := <-got
	if c := r.Report.Snapshot.Consumers[0]; c.Pull.PinnedID != "B" {
		t.Errorf("after the check the pin is %q, want the re-read B", c.Pull.PinnedID)
	}
	if l := r.Report.Snapshot.Streams[0].Leader; l != "n2" {
		t.Errorf("after the check the stream's leader is %s, want n2, heard while the check ran", l)
	}
	if r.Audits != 1 || r.Checks != 1 || r.PinChanges.Pin != 1 || r.Amendments != 2 {
		t.Errorf("%d audits, %d checks, pin changes %+v, %d amendments; want 1, 1, one pin change, 2 (the move, applied again over the re-read)",
			r.Audits, r.Checks, r.PinChanges, r.Amendments)
	}

	// The next check reads the shards; an audit an event asks for starts
	// while it runs, and stands.
	release = make(chan struct{})
	go func() { got <- s.Get(context.Background()) }()
	<-entered
	auditPin.Store("C")
	s.Request("a server's SHUTDOWN")
	for deadline := time.Now().Add(10 * time.Second); s.Latest().Audits != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the requested audit did not end: %d audits", s.Latest().Audits)
		}
	}
	close(release)
	r = <-got
	if c := r.Report.Snapshot.Consumers[0]; c.Pull.PinnedID != "C" || r.Checks != 2 {
		t.Errorf("a check that started before the audit that stands: pin %q, %d checks; want the audit's C, 2", c.Pull.PinnedID, r.Checks)
	}
}
