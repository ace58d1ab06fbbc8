package exporter

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
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

	// reevaluate turns a snapshot amended by leader changes into a report
	// (SetReevaluate); nil: changes wait for the next audit.
	reevaluate func(*snapshot.Snapshot) *findings.Report
	// amending serializes every replacement of last.Report that re-reads
	// the snapshot (Amend, and the end of an audit that missed changes), so
	// that one cannot undo another; mu is held only to read and set.
	amending sync.Mutex
	// changes are the leader changes heard since the oldest audit still
	// running, or the one whose result stands, started: an audit that
	// started before a change may have read the asset before it.
	changes []snapshot.LeaderChange
	// latest indexes changes (latestLocked); nil: to be built again.
	latest map[snapshot.AssetKey]snapshot.LeaderChange
	// starts are when the running audits started.
	starts []time.Time
	// full is the report of the audit whose result stands, before any
	// change was applied.
	full *findings.Report
	// pins is the last report whose pins were counted, before any change
	// was applied: pin changes are counted from one read of the shards to
	// the next (a full audit, or a check that read them again).
	pins *findings.Report

	// check tells whether anything the audit whose result stands counted
	// has changed ("" when nothing has); a Get within fullInterval of that
	// audit's start asks it instead of auditing (SetDriftCheck).
	check        CheckFunc
	fullInterval time.Duration
}

// CheckFunc is serve's look between full audits: whether anything full,
// the audit whose result stands, counted has changed (reason "" when
// nothing has). Where nothing has, it may return a snapshot read again in
// part: last's (full's result as changes amended it) with what it re-read,
// to stand in last's place.
type CheckFunc func(ctx context.Context, full, last *findings.Report) (reread *snapshot.Snapshot, reason string, err error)

// NewScheduler returns a Scheduler whose audits run under base: cancelling
// base cancels a running audit, but a caller giving up does not.
func NewScheduler(base context.Context, audit AuditFunc, minInterval time.Duration, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{audit: audit, minInterval: minInterval, base: base, log: log, now: time.Now}
}

// SetReevaluate sets how Amend turns an amended snapshot into a report: the
// same policy and rules an audit's report has. Call it before the first
// Amend.
func (s *Scheduler) SetReevaluate(f func(*snapshot.Snapshot) *findings.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reevaluate = f
}

// orderWindow is how long, with no audit running, Amend keeps the changes
// it applied to tell a later advisory that arrived out of order.
const orderWindow = time.Minute

// Amend applies leader changes heard between audits to the latest result,
// without asking the servers (snapshot.WithLeaders), and keeps them for any
// audit running that started before they were heard. It returns the changes
// only an audit can tell (unseen, stale: see WithLeaders); before the first
// audit, or without SetReevaluate, every change is unseen. A change heard
// after another of the same asset that was elected later, or elected before
// the audit whose result stands started, is stale and not applied: the
// advisories arrived out of order, or the audit may have read a newer
// leader.
func (s *Scheduler) Amend(changes []snapshot.LeaderChange) (unseen, stale []snapshot.LeaderChange) {
	if len(changes) == 0 {
		return nil, nil
	}
	s.amending.Lock()
	defer s.amending.Unlock()
	s.mu.Lock()
	var inOrder []snapshot.LeaderChange
	for _, c := range changes {
		p, heard := s.latestLocked()[c.Key()]
		if heard && c.OutOfOrder(p) || s.full != nil && s.full.Snapshot != nil && c.Elected.Before(s.full.Snapshot.Started) {
			stale = append(stale, c)
			continue
		}
		s.changes = append(s.changes, c)
		if !heard || p.Elected.Before(c.Elected) {
			s.latest[c.Key()] = c
		}
		inOrder = append(inOrder, c)
	}
	if len(s.starts) == 0 {
		// No audit is running to need them: what is kept is only for
		// telling the order of advisories, which arrive within moments of
		// each other or not at all.
		i, _ := slices.BinarySearchFunc(s.changes, s.now().Add(-orderWindow), func(c snapshot.LeaderChange, t time.Time) int { return c.Heard.Compare(t) })
		s.forgetChangesLocked(i)
	}
	last, reevaluate := s.last.Report, s.reevaluate
	s.mu.Unlock()
	if len(inOrder) == 0 {
		return nil, stale
	}
	if last == nil || last.Snapshot == nil || reevaluate == nil {
		return inOrder, stale
	}
	snap, unseen, applied := last.Snapshot.WithLeaders(inOrder)
	stale = append(stale, applied...)
	if len(unseen) == len(inOrder) {
		return unseen, stale
	}
	r := reevaluate(snap)
	s.mu.Lock()
	s.last.Report = r
	s.last.Amended = s.now()
	s.last.Amendments++
	s.mu.Unlock()
	return unseen, stale
}

// SetDriftCheck makes a Get that finds the last result older than
// MinInterval ask check first, while the audit whose result stands started
// less than fullInterval ago and was complete: only a difference check
// names (or an error) starts an audit. Requests (events) and GetFull always
// audit. Call it before the first Get.
func (s *Scheduler) SetDriftCheck(check CheckFunc, fullInterval time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.check, s.fullInterval = check, fullInterval
}

// Latest returns the latest result without starting an audit.
func (s *Scheduler) Latest() findings.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Get returns a result no older than MinInterval, running an audit (or,
// with SetDriftCheck, a check) if there is none, or waiting for the one
// already running. If ctx ends first it returns the latest result there
// is.
func (s *Scheduler) Get(ctx context.Context) findings.Result {
	return s.get(ctx, false)
}

// GetFull is Get counting only full audits: a result a check confirmed
// since is not enough.
func (s *Scheduler) GetFull(ctx context.Context) findings.Result {
	return s.get(ctx, true)
}

func (s *Scheduler) get(ctx context.Context, full bool) findings.Result {
	s.mu.Lock()
	seen := s.last.Finished
	if !full && s.last.Checked.After(seen) {
		seen = s.last.Checked
	}
	if s.last.Report != nil && s.now().Sub(seen) < s.minInterval {
		defer s.mu.Unlock()
		return s.last
	}
	var running chan struct{}
	if !full && s.running == nil && s.lightLocked() {
		running = make(chan struct{})
		s.running = running
		s.starts = append(s.starts, s.now())
		go s.runCheck(running, s.starts[len(s.starts)-1], s.full, s.last.Report)
	} else {
		running = s.startLocked(s.reasonLocked(full))
	}
	s.mu.Unlock()

	select {
	case <-running:
	case <-ctx.Done():
	}
	return s.Latest()
}

// lightLocked reports whether a check may stand in for an audit now.
func (s *Scheduler) lightLocked() bool {
	// An event asked for an audit: a check of counts cannot stand in for
	// what it said.
	return !s.pending && s.check != nil && s.fullInterval > 0 && s.full != nil && s.full.Complete() && s.now().Sub(s.newest) < s.fullInterval
}

// reasonLocked is why a Get (GetFull if full) that may not check audits.
func (s *Scheduler) reasonLocked(full bool) findings.AuditReason {
	switch {
	case s.last.Report == nil || s.full == nil:
		return findings.ReasonFirst
	case full:
		return findings.ReasonMaxAge
	case s.check == nil || s.fullInterval <= 0:
		return findings.ReasonScrape
	case !s.full.Complete():
		return findings.ReasonIncomplete
	case s.now().Sub(s.newest) >= s.fullInterval:
		return findings.ReasonFullInterval
	default:
		// Only a pending request keeps a check from standing in.
		return findings.ReasonEvent
	}
}

// runCheck asks the check about full; if nothing changed, the result stands
// as it is, or as the check re-read it, and counts as checked; else an
// audit runs in the same turn, its callers waiting on done.
func (s *Scheduler) runCheck(done chan struct{}, started time.Time, full, last *findings.Report) {
	reread, reason, err := s.check(s.base, full, last)
	if err == nil && reason == "" {
		if reread != nil {
			s.standReread(reread, started)
		}
		s.mu.Lock()
		s.last.Checked = s.now()
		s.last.Checks++
		s.starts = slices.DeleteFunc(s.starts, started.Equal)
		s.endLocked(done)
		s.mu.Unlock()
		close(done)
		return
	}
	s.log.Debug("the check asks for an audit", "reason", reason, "err", err)
	s.mu.Lock()
	// A full audit from here: it serves any pending request too.
	s.starts = slices.DeleteFunc(s.starts, started.Equal)
	s.beginLocked(findings.ReasonCheck)
	started = s.lastStart
	s.mu.Unlock()
	s.run(done, started)
}

// standReread puts the report of snap, which a check that started at
// started re-read in part, in the place of the result it re-read, with the
// leader changes heard since it started applied; unless an audit that
// started later already stands.
func (s *Scheduler) standReread(snap *snapshot.Snapshot, started time.Time) {
	s.amending.Lock()
	defer s.amending.Unlock()
	s.mu.Lock()
	missed, reevaluate := s.changesSinceLocked(started), s.reevaluate
	s.mu.Unlock()
	if reevaluate == nil {
		return
	}
	pins := reevaluate(snap)
	r := pins
	if len(missed) > 0 {
		// A change of a shard's leader is stale (WithLeaders): its own
		// Amend asked for the audit that reads the new leader's record.
		amended, _, _ := snap.WithLeaders(missed)
		r = reevaluate(amended)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if started.Before(s.newest) {
		return
	}
	s.countPinsLocked(pins)
	s.last.Report = r
	s.log.Debug("a check read the shards again", "leader_changes_applied", len(missed))
	if len(missed) > 0 {
		s.last.Amended = s.now()
		s.last.Amendments++
	}
}

// countPinsLocked adds the pin changes from the last report whose pins
// were counted to r, a new read of the shards.
func (s *Scheduler) countPinsLocked(r *findings.Report) {
	if s.pins != nil {
		c := auditor.CountPinChanges(s.pins, r)
		s.last.PinChanges.Pin += c.Pin
		s.last.PinChanges.WithLeader += c.WithLeader
	}
	s.pins = r
}

// endLocked notes that the run done closes is over.
func (s *Scheduler) endLocked(done chan struct{}) {
	if done == s.running {
		s.running = nil
	} else {
		s.overtaking = nil
	}
	if s.pending {
		s.armLocked()
	}
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
	if s.running == nil {
		s.startLocked(findings.ReasonEvent)
		return
	}
	// The running audit may have missed what the caller saw, and may wait
	// long for a server that went away: do not wait for it.
	s.overtaking = make(chan struct{})
	s.beginLocked(findings.ReasonEvent)
	go s.run(s.overtaking, s.lastStart)
}

// startLocked starts an audit, for reason, unless one runs, and returns
// the channel closed when the running audit ends.
func (s *Scheduler) startLocked(reason findings.AuditReason) chan struct{} {
	if s.running == nil {
		s.running = make(chan struct{})
		s.beginLocked(reason)
		go s.run(s.running, s.lastStart)
	}
	return s.running
}

// changesSinceLocked returns the changes heard at or after t.
func (s *Scheduler) changesSinceLocked(t time.Time) []snapshot.LeaderChange {
	i, _ := slices.BinarySearchFunc(s.changes, t, func(c snapshot.LeaderChange, t time.Time) int { return c.Heard.Compare(t) })
	return slices.Clone(s.changes[i:])
}

// pruneChangesLocked forgets the changes heard before every running audit
// started and before the audit whose result stands started: every result
// to come has read them.
func (s *Scheduler) pruneChangesLocked() {
	oldest := s.newest
	for _, t := range s.starts {
		if t.Before(oldest) {
			oldest = t
		}
	}
	i, _ := slices.BinarySearchFunc(s.changes, oldest, func(c snapshot.LeaderChange, t time.Time) int { return c.Heard.Compare(t) })
	s.forgetChangesLocked(i)
}

// forgetChangesLocked drops the first n changes kept.
func (s *Scheduler) forgetChangesLocked(n int) {
	if n > 0 {
		s.changes = slices.Delete(s.changes, 0, n)
		s.latest = nil
	}
}

// latestLocked is the latest elected of the changes kept, by asset: what a
// change heard next is held against to tell whether it arrived out of
// order. It is built again only after changes are forgotten, so a burst
// of advisories (a restart moves many leaders) costs one lookup each.
func (s *Scheduler) latestLocked() map[snapshot.AssetKey]snapshot.LeaderChange {
	if s.latest == nil {
		s.latest = make(map[snapshot.AssetKey]snapshot.LeaderChange, len(s.changes))
		for _, c := range s.changes {
			if p, ok := s.latest[c.Key()]; !ok || p.Elected.Before(c.Elected) {
				s.latest[c.Key()] = c
			}
		}
	}
	return s.latest
}

// beginLocked notes an audit's start, for reason: it serves any pending
// request.
func (s *Scheduler) beginLocked(reason findings.AuditReason) {
	s.last.Started[reason]++
	s.lastStart = s.now()
	s.starts = append(s.starts, s.lastStart)
	if s.pending {
		s.pending = false
		if s.timer != nil {
			s.timer.Stop()
		}
	}
}

func (s *Scheduler) run(done chan struct{}, started time.Time) {
	r := s.audit(s.base)
	s.amending.Lock()
	defer s.amending.Unlock()
	s.mu.Lock()
	prev := s.last.Report
	s.last.Audits++
	// An audit that started before the one whose result stands saw less.
	stale := started.Before(s.newest)
	s.starts = slices.DeleteFunc(s.starts, started.Equal)
	if !stale {
		s.newest = started
		s.countPinsLocked(r)
		s.full = r
		missed, reevaluate := s.changesSinceLocked(started), s.reevaluate
		amended := false
		if len(missed) > 0 && reevaluate != nil && r.Snapshot != nil {
			// What the audit read of these assets may be from before the
			// change. amending keeps every other writer of the report out
			// meanwhile; the unseen are for the next audit, which the
			// change's own Amend asked for.
			s.mu.Unlock()
			snap, _, _ := r.Snapshot.WithLeaders(missed)
			r, amended = reevaluate(snap), true
			s.mu.Lock()
		}
		s.last.Finished = s.now()
		if r.Complete() {
			s.last.LastSuccess = s.last.Finished
		}
		s.last.Amended = time.Time{}
		if amended {
			s.last.Amended = s.last.Finished
			s.last.Amendments++
		}
		s.last.Report = r
	}
	s.pruneChangesLocked()
	s.endLocked(done)
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
