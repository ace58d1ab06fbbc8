package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

type reportCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
	assume assumeFlags
}

func addReportCommand(app *kingpin.Application) *reportCommand {
	c := &reportCommand{}
	c.cmd = app.Command("report", "Print the inventory one audit saw (servers, clusters and leafnode links) and what is wrong with it; exit with the status as check does.")
	addFloorFlag(c.cmd, &c.pol)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json")
	addAssumeFlag(c.cmd, &c.assume)
	return c
}

// run audits once, prints the inventory with the findings behind its
// status, and returns that status to exit with, as check does.
func (c *reportCommand) run(ctx context.Context, a auditing, stdout io.Writer) (auditor.Severity, error) {
	started := time.Now()
	pol, err := c.pol.policy()
	if err == nil {
		err = a.conn.validate()
	}
	if err == nil {
		err = c.assume.parse()
	}
	var r *auditor.Report
	var w *auditor.WhatIf
	if err == nil {
		r, err = a.once(pol).audit(ctx)
	}
	if err == nil {
		r, w, err = c.assume.apply(r, pol)
	}
	if err != nil {
		if c.format == "json" {
			// The error is what run reports.
			_ = writeJSON(stdout, failedReportJSON(err, failedReport(err, pol, started, time.Since(started))))
		}
		return auditor.Unknown, err
	}
	out := reportOf(r, w)
	if c.format == "json" {
		err = writeReportJSON(stdout, out)
	} else {
		err = writeReportText(stdout, out, r, w)
	}
	if err != nil {
		return auditor.Unknown, fmt.Errorf("write output: %w", err)
	}
	return r.Status, nil
}
