package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
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

func (c *reportCommand) run(ctx context.Context, conn *connFlags, logger *slog.Logger, stdout, stderr io.Writer) int {
	pol, err := c.pol.policy()
	if err != nil {
		return fail(stderr, err)
	}
	r, err := audit(ctx, conn, pol, logger)
	if err != nil {
		return fail(stderr, err)
	}
	out := reportOf(r)
	if c.format == "json" {
		err = writeJSON(stdout, out)
	} else {
		err = writeReportText(stdout, out, r)
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("write output: %w", err))
	}
	return exitOK
}
