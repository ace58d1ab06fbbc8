package exporter

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

// AuditFunc runs one audit and always returns a report: an audit that could
// not run is a report of why (findings.Failed).
type AuditFunc func(ctx context.Context) *findings.Report

// Scheduler runs audits on demand, at most one per MinInterval: callers that
// arrive while an audit runs share it, and callers within MinInterval of the
// last one get its result. However many scrapers ask, the servers see at most
// one audit per interval.
//
// Request asks for an audit that starts after the call, however young the
// last one is, but no sooner than the request interval after the last audit
// started: requests that arrive before it starts share it. It does not wait
// for a running audit to end (one that waits for a server that just went
// away can take the whole timeout): at most two audits run at once, and an
// audit's result replaces only the results of audits that started before it.
type Scheduler struct {
	audit       AuditFunc
	minInterval time.Duration
	base        context.Context
	log         *slog.Logger
	now         func() time.Time

	mu      sync.Mutex
	last    findings.Result
	running chan struct{} // closed when the running audit ends; nil when none runs
	// overtaking is a requested audit started while running still ran.
	overtaking chan struct{}
	// newest is when the audit whose result is last started.
	newest time.Time

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
func (s *Scheduler) Latest() findings.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Get returns a result no older than MinInterval, running an audit if there
// is none, or waiting for the one already running. If ctx ends first it
// returns the latest result there is.
func (s *Scheduler) Get(ctx context.Context) findings.Result {
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
	if s.overtaking == nil {
		s.armLocked()
	}
	// Else two audits run: the end of one arms the timer.
}

func (s *Scheduler) armLocked() {
	if s.timer != nil {
		s.timer.Stop()
	}
	wait := s.requestInterval - s.now().Sub(s.lastStart)
	s.timer = time.AfterFunc(max(wait, 0), s.fire)
}

func (s *Scheduler) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Any audit that started since the request cleared pending; with two
	// running, the end of one arms the timer again.
	if !s.pending || s.overtaking != nil || s.base.Err() != nil {
		return
	}
	if s.now().Sub(s.lastStart) < s.requestInterval {
		s.armLocked() // an audit started since the timer was set
		return
	}
	s.log.Debug("audit requested", "reason", s.pendingReason, "coalesced", s.coalesced)
	s.last.RequestedAudits++
	if s.running == nil {
		s.startLocked()
		return
	}
	// The running audit may have missed what the caller saw, and may wait
	// long for a server that went away: do not wait for it.
	s.overtaking = make(chan struct{})
	s.beginLocked()
	go s.run(s.overtaking, s.lastStart)
}

// startLocked starts an audit unless one runs, and returns the channel
// closed when the running audit ends.
func (s *Scheduler) startLocked() chan struct{} {
	if s.running == nil {
		s.running = make(chan struct{})
		s.beginLocked()
		go s.run(s.running, s.lastStart)
	}
	return s.running
}

// beginLocked notes an audit's start: it serves any pending request.
func (s *Scheduler) beginLocked() {
	s.lastStart = s.now()
	if s.pending {
		s.pending = false
		if s.timer != nil {
			s.timer.Stop()
		}
	}
}

func (s *Scheduler) run(done chan struct{}, started time.Time) {
	r := s.audit(s.base)
	s.mu.Lock()
	prev := s.last.Report
	s.last.Audits++
	// An audit that started before the one whose result stands saw less.
	stale := started.Before(s.newest)
	if !stale {
		s.newest = started
		if prev != nil {
			c := auditor.CountPinChanges(prev, r)
			s.last.PinChanges.Pin += c.Pin
			s.last.PinChanges.WithLeader += c.WithLeader
		}
		s.last.Report = r
		s.last.Finished = s.now()
		if r.Complete() {
			s.last.LastSuccess = s.last.Finished
		}
	}
	if done == s.running {
		s.running = nil
	} else {
		s.overtaking = nil
	}
	if s.pending {
		s.armLocked()
	}
	s.mu.Unlock()
	close(done)
	if stale {
		s.log.Debug("audit finished after a later one; its result is dropped", "status", r.Status, "duration", r.Snapshot.Duration)
		return
	}

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
