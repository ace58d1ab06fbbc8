package main

import (
	"context"
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

type reportCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
}

func addReportCommand(app *kingpin.Application) *reportCommand {
	c := &reportCommand{}
	c.cmd = app.Command("report", "Print the inventory one audit saw: servers, clusters and leafnode links.")
	addFloorFlag(c.cmd, &c.pol)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json")
	return c
}

// run audits once and prints the inventory. What the audit found is for
// check to judge: report exits OK whenever it could print.
func (c *reportCommand) run(ctx context.Context, a auditing, stdout io.Writer) (auditor.Severity, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return auditor.Unknown, err
	}
	r, err := a.once(pol).audit(ctx)
	if err != nil {
		return auditor.Unknown, err
	}
	out := reportOf(r)
	if c.format == "json" {
		err = writeJSON(stdout, out)
	} else {
		err = writeReportText(stdout, out, r)
	}
	if err != nil {
		return auditor.Unknown, fmt.Errorf("write output: %w", err)
	}
	return auditor.OK, nil
}
