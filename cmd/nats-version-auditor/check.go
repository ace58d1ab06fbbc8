package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

type checkCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
	wait   waitFlags
}

func addCheckCommand(app *kingpin.Application) *checkCommand {
	c := &checkCommand{}
	c.cmd = app.Command("check", "Audit the whole system once, print the findings and exit with the Nagios status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	addFloorFlag(c.cmd, &c.pol)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json", "nagios")
	addAssetFilterFlags(c.cmd, &c.pol)
	addWaitFlags(c.cmd, &c.wait)
	return c
}

// run audits once, or with --wait until the status is good enough, prints
// the outcome and returns the status to exit with.
func (c *checkCommand) run(ctx context.Context, a auditing, stdout, stderr io.Writer) (auditor.Severity, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return auditor.Unknown, err
	}
	if err := c.wait.validate(); err != nil {
		return auditor.Unknown, err
	}
	p := a.once(pol)
	if c.wait.wait == 0 {
		r, err := p.audit(ctx)
		return c.output(r, err, stdout)
	}
	// A natscli context that cannot be loaded is a flag error: no wait mends it.
	if _, err := a.conn.natsContext(); err != nil {
		return auditor.Unknown, err
	}
	r, err := c.wait.until(ctx, p.audit, stderr)
	if errors.Is(err, errWaitInterrupted) {
		return auditor.Unknown, nil // said, and no report: the wait did not end
	}
	return c.output(r, err, stdout)
}

// output prints the outcome of an audit in --format: the report, or, for
// an audit that could not run, its error (which run prints).
func (c *checkCommand) output(r *auditor.Report, err error, stdout io.Writer) (auditor.Severity, error) {
	if err != nil {
		if c.format == "nagios" {
			writeNagiosUnknown(stdout, err)
		}
		return auditor.Unknown, err
	}
	switch c.format {
	case "json":
		err = writeJSON(stdout, checkJSON(r))
	case "nagios":
		err = writeNagios(stdout, r)
	default:
		err = writeCheckText(stdout, r)
	}
	if err != nil {
		return auditor.Unknown, fmt.Errorf("write output: %w", err)
	}
	return r.Status, nil
}
