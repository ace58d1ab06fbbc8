package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// policyFlags are the flags that choose what an audit is held against.
type policyFlags struct {
	floor                        string
	accounts, streams, consumers []string
}

func addFloorFlag(cmd *kingpin.CmdClause, p *policyFlags) *kingpin.FlagClause {
	f := cmd.Flag("floor", "Oldest acceptable nats-server version (2.14, 2.14.0 or v2.14.0)").Default(auditor.Display(auditor.DefaultFloor))
	f.StringVar(&p.floor)
	return f
}

func (p *policyFlags) policy() (auditor.Policy, error) {
	floor, err := auditor.ParseVersion(p.floor)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--floor: %w", err)
	}
	return auditor.Policy{Floor: floor, Accounts: p.accounts, Streams: p.streams, Consumers: p.consumers}, nil
}

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
	c.cmd.Flag("account", "Only report asset findings of accounts matching this glob (repeatable)").StringsVar(&c.pol.accounts)
	c.cmd.Flag("stream", "Only report asset findings of streams matching this glob (repeatable)").StringsVar(&c.pol.streams)
	c.cmd.Flag("consumer", "Only report consumer findings of consumers matching this glob (repeatable)").StringsVar(&c.pol.consumers)
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
