package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"

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
}

// pipeline is the pipeline of policy and conn, with the flags' options.
func (a auditing) pipeline(policy func() (auditor.Policy, error), conn func(context.Context) (*nats.Conn, func(), error)) *pipeline {
	return &pipeline{policy: policy, conn: conn, options: a.flags.options(a.conn.timeout, a.logger), who: a.conn.who, logger: a.logger}
}

// once is the pipeline of check, report and check --wait: each audit on a
// connection of its own, held against pol.
func (a auditing) once(pol auditor.Policy) *pipeline {
	return a.pipeline(func() (auditor.Policy, error) { return pol, nil },
		func(context.Context) (*nats.Conn, func(), error) {
			nc, err := a.conn.connect(false, a.logger)
			if err != nil {
				return nil, nil, err
			}
			return nc, nc.Close, nil
		})
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
