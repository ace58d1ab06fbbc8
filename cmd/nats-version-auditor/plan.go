package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

type planCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	to     string
	scope  auditor.PlanScope
	format string
}

func addPlanCommand(app *kingpin.Application) *planCommand {
	c := &planCommand{}
	c.cmd = app.Command("plan", "Plan restarting every server that does not run --to onto it, one at a time (followers first, the meta leader last), and say what each step does, a path the NATS docs do not support (to 2.15 from before 2.14.7) with the release to go to first; exit with the worst step's status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	addFloorFlag(c.cmd, &c.pol)
	addUnpulledAfterFlag(c.cmd, &c.pol)
	c.cmd.Flag("to", "Version to restart the servers on, an upgrade or a downgrade (2.14.0)").Required().StringVar(&c.to)
	c.cmd.Flag("cluster", "Only restart servers of this cluster (repeatable)").StringsVar(&c.scope.Clusters)
	c.cmd.Flag("domain", "Only restart servers of this JetStream domain (repeatable)").StringsVar(&c.scope.Domains)
	c.cmd.Flag("servers", "Only restart these servers (comma-separated, repeatable)").StringsVar(&c.scope.Servers)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json")
	return c
}

// run audits once, plans and prints the plan, and returns the worst step's
// status to exit with. Whatever ends it, --format json prints a complete
// document: a plan that could not be made is UNKNOWN with the error.
func (c *planCommand) run(ctx context.Context, a auditing, stdout io.Writer) (findings.Severity, error) {
	started := time.Now()
	plan, r, err := c.plan(ctx, a)
	if err != nil {
		if r == nil {
			c.failed(stdout, err, started)
		} else {
			// The audit ran; the plan could not be made of it.
			_ = render.WritePlanFailed(stdout, c.format, err, c.to, r)
		}
		return findings.Unknown, err
	}
	if err := render.WritePlan(stdout, c.format, plan, r); err != nil {
		return findings.Unknown, err
	}
	return plan.Status, nil
}

// failed prints plan's document when no audit could run, begun at started;
// the error is what run reports.
func (c *planCommand) failed(stdout io.Writer, err error, started time.Time) {
	_ = render.WritePlanFailed(stdout, c.format, err, c.to, c.pol.failed(err, started))
}

// plan checks the flags, audits once and plans.
func (c *planCommand) plan(ctx context.Context, a auditing) (*auditor.Plan, *findings.Report, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return nil, nil, err
	}
	if err := a.conn.validate(); err != nil {
		return nil, nil, err
	}
	to, err := version.ParseRelease(c.to)
	if err != nil {
		return nil, nil, fmt.Errorf("--to: %w", err)
	}
	c.scope.Servers = splitCommas(c.scope.Servers)
	r, err := a.once(pol).audit(ctx)
	if err != nil {
		return nil, nil, err
	}
	plan, err := auditor.MakePlan(r, pol, to, c.scope)
	return plan, r, err
}

func splitCommas(list []string) []string {
	var out []string
	for _, s := range list {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
