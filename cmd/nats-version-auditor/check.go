package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

type checkCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
	wait   waitFlags
	assume assumeFlags
}

func addCheckCommand(app *kingpin.Application) *checkCommand {
	c := &checkCommand{}
	c.cmd = app.Command("check", "Audit the whole system once, print the findings and exit with the Nagios status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	addFloorFlag(c.cmd, &c.pol)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json", "nagios")
	addAssetFilterFlags(c.cmd, &c.pol)
	addWaitFlags(c.cmd, &c.wait)
	addAssumeFlag(c.cmd, &c.assume)
	return c
}

// run audits once, or with --wait until the status is good enough, prints
// the outcome and returns the status to exit with. Whatever ends it, the
// output is a complete document in --format: an audit that could not run
// is UNKNOWN with the error, so that `| jq .status` always has an answer.
func (c *checkCommand) run(ctx context.Context, a auditing, stdout, stderr io.Writer) (auditor.Severity, error) {
	started := time.Now()
	pol, r, err := c.audit(ctx, a, stderr)
	if errors.Is(err, errWaitInterrupted) {
		return auditor.Unknown, nil // said, and no report: the wait did not end
	}
	var w *auditor.WhatIf
	if err == nil {
		r, w, err = c.assume.apply(r, pol)
	}
	return c.output(r, w, err, pol, started, stdout)
}

// audit checks the flags and runs the audits.
func (c *checkCommand) audit(ctx context.Context, a auditing, stderr io.Writer) (auditor.Policy, *auditor.Report, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return pol, nil, err
	}
	if err := a.conn.validate(); err != nil {
		return pol, nil, err
	}
	if err := c.wait.validate(); err != nil {
		return pol, nil, err
	}
	if err := c.assume.parse(); err != nil {
		return pol, nil, err
	}
	p := a.once(pol)
	if c.wait.wait == 0 {
		r, err := p.audit(ctx)
		return pol, r, err
	}
	if len(c.assume.parsed) > 0 {
		// A what-if does not change while the system does not: nothing to wait for.
		return pol, nil, fmt.Errorf("--assume judges one audit; it cannot be combined with --wait")
	}
	// A natscli context that cannot be loaded is a flag error: no wait mends it.
	if _, err := a.conn.natsContext(); err != nil {
		return pol, nil, err
	}
	r, err := c.wait.until(ctx, p.audit, stderr)
	return pol, r, err
}

// output prints the outcome of an audit in --format: the report (the
// would-be report of w under --assume) or, for an audit that could not run,
// an UNKNOWN document with its error (which run also prints to stderr).
func (c *checkCommand) output(r *auditor.Report, w *auditor.WhatIf, err error, pol auditor.Policy, started time.Time, stdout io.Writer) (auditor.Severity, error) {
	if err != nil {
		switch c.format {
		case "nagios":
			writeNagiosUnknown(stdout, err)
		case "json":
			// The error is what run reports.
			_ = writeJSON(stdout, failedJSON(err, failedReport(err, pol, started, time.Since(started))))
		}
		return auditor.Unknown, err
	}
	switch c.format {
	case "json":
		err = writeCheckJSON(stdout, checkJSON(r, w))
	case "nagios":
		err = writeNagios(stdout, r, w)
	default:
		err = writeCheckText(stdout, r, w)
	}
	if err != nil {
		return auditor.Unknown, fmt.Errorf("write output: %w", err)
	}
	return r.Status, nil
}
