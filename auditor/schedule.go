package auditor

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Result is the latest audit a Scheduler ran.
type Result struct {
	// Report is the latest audit's report; nil until the first audit ends.
	// An audit that could not run at all is a report with one
	// AUDIT_INCOMPLETE finding.
	Report *Report
	// Finished is when the latest audit ended.
	Finished time.Time
	// LastSuccess is when the latest complete audit ended.
	LastSuccess time.Time
	// Audits counts the audits run.
	Audits uint64
}

// AuditFunc runs one audit and always returns a report: an audit that could
// not run is a report of why (see Failed).
type AuditFunc func(ctx context.Context) *Report

// Failed is the report of an audit that could not run at all: one
// AUDIT_INCOMPLETE finding naming err.
func Failed(err error, started time.Time, p Policy) *Report {
	return Evaluate(&Snapshot{Started: started, Duration: time.Since(started),
		Problems: []Problem{{Request: "audit", Err: err.Error()}}}, p)
}

// Scheduler runs audits on demand, at most one per MinInterval: callers that
// arrive while an audit runs share it, and callers within MinInterval of the
// last one get its result. However many scrapers ask, the servers see at most
// one audit per interval.
type Scheduler struct {
	audit       AuditFunc
	minInterval time.Duration
	base        context.Context
	log         *slog.Logger
	now         func() time.Time

	mu      sync.Mutex
	last    Result
	running chan struct{} // closed when the running audit ends; nil when none runs
}

// NewScheduler returns a Scheduler whose audits run under base: cancelling
// base cancels a running audit, but a caller giving up does not.
func NewScheduler(base context.Context, audit AuditFunc, minInterval time.Duration, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{audit: audit, minInterval: minInterval, base: base, log: log, now: time.Now}
}

// Latest returns the latest result without starting an audit.
func (s *Scheduler) Latest() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Get returns a result no older than MinInterval, running an audit if there
// is none, or waiting for the one already running. If ctx ends first it
// returns the latest result there is.
func (s *Scheduler) Get(ctx context.Context) Result {
	s.mu.Lock()
	if s.last.Report != nil && s.now().Sub(s.last.Finished) < s.minInterval {
		defer s.mu.Unlock()
		return s.last
	}
	running := s.running
	if running == nil {
		running = make(chan struct{})
		s.running = running
		go s.run(running)
	}
	s.mu.Unlock()

	select {
	case <-running:
	case <-ctx.Done():
	}
	return s.Latest()
}

func (s *Scheduler) run(done chan struct{}) {
	r := s.audit(s.base)
	s.mu.Lock()
	prev := s.last.Report
	s.last.Report = r
	s.last.Finished = s.now()
	s.last.Audits++
	if r.Complete() {
		s.last.LastSuccess = s.last.Finished
	}
	s.running = nil
	s.mu.Unlock()
	close(done)

	s.log.Debug("audit finished", "status", r.Status, "findings", len(r.Findings), "servers", len(r.Servers),
		"complete", r.Complete(), "duration", r.Snapshot.Duration)
	if prev == nil || prev.Status != r.Status {
		prevStatus := "none"
		if prev != nil {
			prevStatus = prev.Status.String()
		}
		args := []any{"from", prevStatus, "to", r.Status, "findings", len(r.Findings)}
		if len(r.Findings) > 0 {
			args = append(args, "worst", r.Findings[0].Message)
		}
		s.log.Info("audit status changed", args...)
	}
}
