package main

import (
	"context"
	"io"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

type reportCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
	assume assumeFlags
	// pullWatch is --pull-watch.
	pullWatch time.Duration
}

func addReportCommand(app *kingpin.Application) *reportCommand {
	c := &reportCommand{}
	c.cmd = app.Command("report", "Print the inventory one audit saw (servers, clusters and leafnode links) and what is wrong with it; exit with the status as check does.")
	addFloorFlag(c.cmd, &c.pol)
	addUnpulledAfterFlag(c.cmd, &c.pol)
	addPullWatchFlag(c.cmd, &c.pullWatch, "")
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json")
	addAssumeFlag(c.cmd, &c.assume)
	return c
}

// run audits once, prints the inventory with the findings behind its
// status, and returns that status to exit with, as check does.
func (c *reportCommand) run(ctx context.Context, a auditing, stdout io.Writer) (findings.Severity, error) {
	started := time.Now()
	pol, err := c.pol.policy()
	if err == nil {
		err = a.conn.validate()
	}
	if err == nil {
		err = c.assume.parse()
	}
	var r *findings.Report
	var w *auditor.WhatIf
	if err == nil {
		a.pullWatch = c.pullWatch
		r, err = a.once(pol).audit(ctx)
	}
	if err == nil {
		r, w, err = c.assume.apply(r, pol)
	}
	if err != nil {
		c.failed(stdout, err, started)
		return findings.Unknown, err
	}
	if err := render.WriteReport(stdout, c.format, r, w); err != nil {
		return findings.Unknown, err
	}
	return r.Status, nil
}

// failed prints report's document of an audit that could not run, begun at
// started; the error is what run reports.
func (c *reportCommand) failed(stdout io.Writer, err error, started time.Time) {
	_ = render.WriteReportFailed(stdout, c.format, err, c.pol.failed(err, started))
}
