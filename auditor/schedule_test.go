package auditor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSchedulerSharesAudits(t *testing.T) {
	var audits atomic.Int32
	release := make(chan struct{})
	audit := func(context.Context) *Report {
		audits.Add(1)
		<-release
		return Evaluate(&Snapshot{Servers: []Server{{ID: "A", Name: "a", Version: "2.14.0"}}}, Policy{Floor: DefaultFloor})
	}
	s := NewScheduler(context.Background(), audit, time.Hour, nil)

	// Ten scrapes arrive together: one audit serves them all.
	var wg sync.WaitGroup
	results := make([]Result, 10)
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
	audit := func(context.Context) *Report {
		if audits.Add(1) == 2 {
			<-block
		}
		return Failed(context.DeadlineExceeded, time.Now(), Policy{Floor: DefaultFloor})
	}
	s := NewScheduler(context.Background(), audit, time.Hour, nil)
	now := time.Now()
	s.now = func() time.Time { return now }

	first := s.Get(context.Background())
	if first.Report.Complete() || !first.LastSuccess.IsZero() {
		t.Fatalf("a failed audit counted as a success: %+v", first)
	}
	if first.Report.Floor != "2.14.0" || first.Report.Status != Unknown {
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
