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
	// RequestedAudits counts the audits Request started.
	RequestedAudits uint64
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
//
// Request asks for an audit that starts after the call, however young the
// last one is, but no sooner than the request interval after the last audit
// started: requests that arrive before it starts share it.
type Scheduler struct {
	audit       AuditFunc
	minInterval time.Duration
	base        context.Context
	log         *slog.Logger
	now         func() time.Time

	mu      sync.Mutex
	last    Result
	running chan struct{} // closed when the running audit ends; nil when none runs

	requestInterval time.Duration
	lastStart       time.Time
	// pending is a Request no audit has started since; while no audit runs,
	// timer starts one when the request interval allows.
	pending       bool
	pendingReason string
	coalesced     int
	timer         *time.Timer
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
	running := s.startLocked()
	s.mu.Unlock()

	select {
	case <-running:
	case <-ctx.Done():
	}
	return s.Latest()
}

// SetRequestInterval sets the least time between the start of any audit and
// the start of one Request asks for. Call it before the first Request.
func (s *Scheduler) SetRequestInterval(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestInterval = d
}

// Request asks for an audit that starts after this call, for reason (logged).
// It does not wait. Requests that arrive before that audit starts are served
// by it, and it starts no sooner than the request interval after the last
// audit started: however often Request is called, it adds at most one audit
// per interval. An audit a scrape starts in the meantime serves it too.
func (s *Scheduler) Request(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base.Err() != nil {
		return
	}
	if s.pending {
		s.coalesced++
		return
	}
	s.pending, s.pendingReason, s.coalesced = true, reason, 0
	if s.running == nil {
		s.armLocked()
	}
	// Else the running audit may have missed what the caller saw: run
	// arms the timer when it ends.
}

func (s *Scheduler) armLocked() {
	wait := s.requestInterval - s.now().Sub(s.lastStart)
	s.timer = time.AfterFunc(max(wait, 0), s.fire)
}

func (s *Scheduler) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Any audit that started since the request cleared pending; one that
	// runs now arms the timer again when it ends.
	if !s.pending || s.running != nil || s.base.Err() != nil {
		return
	}
	s.log.Debug("audit requested", "reason", s.pendingReason, "coalesced", s.coalesced)
	s.last.RequestedAudits++
	s.startLocked()
}

// startLocked starts an audit unless one runs, and returns the channel
// closed when the running audit ends.
func (s *Scheduler) startLocked() chan struct{} {
	if s.running == nil {
		s.running = make(chan struct{})
		s.lastStart = s.now()
		if s.pending {
			s.pending = false
			if s.timer != nil {
				s.timer.Stop()
			}
		}
		go s.run(s.running)
	}
	return s.running
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
	if s.pending {
		s.armLocked()
	}
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
