package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
)

// auditing is what every command audits with: the connection flags, the
// audit flags and the logger.
type auditing struct {
	conn   *connFlags
	flags  *auditFlags
	logger *slog.Logger
	// pullWatch is check's and report's --pull-watch.
	pullWatch time.Duration
}

// pipeline is the one way an audit runs, whichever command asks for it
// (check, report, check --wait, serve's scrapes, events and JSON API): the
// policy in force, a connection, collect.Collect, what serve remembers of
// servers gone quiet, auditor.Evaluate, and serve's scope.
type pipeline struct {
	policy func() (auditor.Policy, error)
	// conn returns the connection to audit on, and what to do with it once
	// the audit is done.
	conn    func(ctx context.Context) (nc *nats.Conn, done func(), err error)
	options collect.Options
	// memory, when set, says what the servers that stopped answering last
	// ran (serve's).
	memory *exporter.Memory
	// connectedOnly narrows the audit to the server the connection is on
	// (serve --scope server).
	connectedOnly bool
	// who names the user the connection logs in as.
	who    func() string
	logger *slog.Logger
	// pullWatch, when above 0, is how long an audit listens to the pulls
	// of the accounts the system account imports them from, where one has
	// a pinned_client consumer.
	pullWatch time.Duration
	// pulls, serve's, names who pulls from what it heard since its
	// connection was made.
	pulls *exporter.PullListener
}

// pipeline is the pipeline of policy and conn, with the flags' options.
func (a auditing) pipeline(policy func() (auditor.Policy, error), conn func(context.Context) (*nats.Conn, func(), error)) *pipeline {
	return &pipeline{policy: policy, conn: conn, options: a.flags.options(a.conn.timeout, a.logger), who: a.conn.who, logger: a.logger}
}

// once is the pipeline of check, report and check --wait: each audit on a
// connection of its own, held against pol.
func (a auditing) once(pol auditor.Policy) *pipeline {
	p := a.pipeline(func() (auditor.Policy, error) { return pol, nil },
		func(context.Context) (*nats.Conn, func(), error) {
			nc, err := a.conn.connect(false, a.logger)
			if err != nil {
				return nil, nil, err
			}
			return nc, nc.Close, nil
		})
	p.pullWatch = a.pullWatch
	return p
}

// audit runs one audit.
func (p *pipeline) audit(ctx context.Context) (*findings.Report, error) {
	r, _, err := p.run(ctx)
	return r, err
}

// report runs one audit as serve's scheduler does: a failure is a report
// too, UNKNOWN with an AUDIT_INCOMPLETE finding that names it.
func (p *pipeline) report(ctx context.Context) *findings.Report {
	started := time.Now()
	r, pol, err := p.run(ctx)
	if err != nil {
		// Without a policy pol is zero: floor_info is left out rather than
		// show a floor nobody set.
		return findings.Failed(fmt.Errorf("audit: %w", err), pol.Floor, "", started, time.Since(started))
	}
	return r
}

// run runs one audit and returns the policy in force (zero if it could
// not be read).
func (p *pipeline) run(ctx context.Context) (*findings.Report, auditor.Policy, error) {
	pol, err := p.policy()
	if err != nil {
		return nil, auditor.Policy{}, err
	}
	nc, done, err := p.conn(ctx)
	if err != nil {
		return nil, pol, err
	}
	defer done()
	opts := p.options
	// Read before collecting: a reconnect meanwhile must not change which
	// server the audit is narrowed to.
	self := nc.ConnectedServerName()
	if p.connectedOnly {
		opts.OnlyServerID = nc.ConnectedServerId()
	}
	snap, err := collect.Collect(ctx, nc, opts)
	if err != nil {
		return nil, pol, collectError(err, p.who())
	}
	if p.pullWatch > 0 && snap.HasPinned() {
		p.hearPulls(ctx, nc, snap)
	}
	if p.pulls != nil {
		p.pulls.Fill(ctx, nc, snap)
	}
	if p.memory != nil {
		p.memory.Recall(snap)
	}
	r := auditor.Evaluate(snap, pol)
	if p.connectedOnly {
		r = r.ForServer(self)
	}
	p.logger.Debug("audit evaluated", "servers", len(snap.Servers), "consumers", len(snap.Consumers),
		"findings", len(r.Findings), "collect", snap.Duration, "evaluate", time.Since(snap.Started)-snap.Duration)
	return r, pol, nil
}

// reevaluate is the report of snap, an audit's snapshot that serve amended
// with the leader changes it heard since, under the policy in force: the
// rules of an audit, without asking the servers. Not for serve --scope
// server, whose audits ask one server only.
func (p *pipeline) reevaluate(snap *snapshot.Snapshot) *findings.Report {
	pol, err := p.policy()
	if err != nil {
		return findings.Failed(fmt.Errorf("audit: %w", err), pol.Floor, "", snap.Started, snap.Duration)
	}
	return auditor.Evaluate(snap, pol)
}

// drift is serve's check between full audits (collect.Drift): what differs
// from the counts of full, the audit whose result stands, "" when nothing
// does. Who pulls a shard (a consumer with a priority policy) is in its
// leader's record only, and a shard pulled by nobody must show within
// --unpulled-after: where last, full's result as events amended it, has
// one, a check that finds no drift also reads the shards' accounts again
// (collect.RereadPulls) and returns last's snapshot with their leaders'
// records now.
func (p *pipeline) drift(ctx context.Context, full, last *findings.Report) (*snapshot.Snapshot, string, error) {
	if full.Snapshot == nil || last.Snapshot == nil {
		return nil, "no snapshot", nil
	}
	// The floor may change under a running serve (--policy.file): the
	// audit holds the snapshot against the new one, or fails closed on a
	// file it cannot read.
	pol, err := p.policy()
	if err != nil {
		return nil, "the policy cannot be read", nil
	}
	if pol.Floor != full.Floor {
		return nil, fmt.Sprintf("the floor is %s, the last audit's %s", pol.Floor, full.Floor), nil
	}
	nc, done, err := p.conn(ctx)
	if err != nil {
		return nil, "", err
	}
	defer done()
	opts := p.options
	if opts.Timeout <= 0 {
		opts.Timeout = collect.DefaultTimeout
	}
	if reason, err := collect.Drift(ctx, nc, full.Snapshot, opts.Timeout); reason != "" || err != nil {
		return nil, reason, err
	}
	if !last.Snapshot.HasShards() {
		return nil, "", nil
	}
	snap, reason := collect.RereadPulls(ctx, nc, last.Snapshot, opts)
	if reason != "" {
		return nil, reason, nil
	}
	if p.pulls != nil {
		p.pulls.Fill(ctx, nc, snap)
	}
	return snap, "", nil
}

// hearPulls listens, where snap has a pinned_client consumer, to the
// pulls of the accounts the system account imports them from, for
// pullWatch, then writes who pulled into snap. It listens only after the
// audit: a system without shards, or a user who may not ask, costs nothing
// and says nothing. An interrupt ends the wait early: the snapshot then
// says how long it listened.
func (p *pipeline) hearPulls(ctx context.Context, nc *nats.Conn, snap *snapshot.Snapshot) {
	w, err := collect.WatchPulls(ctx, nc, 0)
	if err != nil {
		p.logger.Warn("cannot hear who pulls the pinned consumers: the audit goes on without (docs/pulls.md)", "err", err)
		return
	}
	defer w.Stop()
	if heardPinned(snap, w) {
		p.logger.Debug("listening to who pulls the pinned consumers", "for", p.pullWatch)
		t := time.NewTimer(p.pullWatch)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	w.Fill(context.WithoutCancel(ctx), snap, 0)
}

// heardPinned: snap has a pinned_client consumer whose account's pulls w
// hears.
func heardPinned(snap *snapshot.Snapshot, w *collect.PullWatch) bool {
	for i := range snap.Consumers {
		if a := &snap.Consumers[i]; a.Pull != nil && a.Pull.Policy == snapshot.PriorityPinnedClient && w.Hears(a.Account) {
			return true
		}
	}
	return false
}
