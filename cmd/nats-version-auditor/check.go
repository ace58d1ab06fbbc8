package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

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

func (c *checkCommand) run(ctx context.Context, conn *connFlags, logger *slog.Logger, stdout, stderr io.Writer) int {
	pol, err := c.pol.policy()
	if err != nil {
		return fail(stderr, err)
	}
	if err := c.wait.validate(); err != nil {
		return fail(stderr, err)
	}
	if c.wait.wait > 0 {
		return c.runWait(ctx, conn, pol, logger, stdout, stderr)
	}
	r, err := audit(ctx, conn, pol, logger)
	return c.output(r, err, stdout, stderr)
}

// output prints the outcome of an audit as check does and returns the exit
// code: the report's status, or UNKNOWN when the audit could not run.
func (c *checkCommand) output(r *auditor.Report, err error, stdout, stderr io.Writer) int {
	if err != nil {
		if c.format == "nagios" {
			writeNagiosUnknown(stdout, err)
		}
		return fail(stderr, err)
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
		return fail(stderr, fmt.Errorf("write output: %w", err))
	}
	return int(r.Status)
}
