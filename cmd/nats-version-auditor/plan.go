package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
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
	c.cmd = app.Command("plan", "Plan restarting every server that does not run --to onto it, one at a time (followers first, the meta leader last), and say what each step does; exit with the worst step's status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	addFloorFlag(c.cmd, &c.pol)
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
func (c *planCommand) run(ctx context.Context, a auditing, stdout io.Writer) (auditor.Severity, error) {
	started := time.Now()
	pol, plan, r, err := c.plan(ctx, a)
	if err != nil {
		if c.format == "json" {
			// The error is what run reports.
			audit := auditInfo{Started: started.UTC(), DurationSeconds: time.Since(started).Seconds()}
			if r != nil {
				audit = newAuditInfo(r) // the audit ran; the plan could not be made of it
			}
			_ = writeJSON(stdout, failedPlanJSON(err, c.to, auditor.Display(pol.Floor), audit))
		}
		return auditor.Unknown, err
	}
	if c.format == "json" {
		err = writeJSON(stdout, planOutput{Plan: plan, Audit: newAuditInfo(r)})
	} else {
		err = writePlanText(stdout, plan)
	}
	if err != nil {
		return auditor.Unknown, fmt.Errorf("write output: %w", err)
	}
	return plan.Status, nil
}

// plan checks the flags, audits once and plans.
func (c *planCommand) plan(ctx context.Context, a auditing) (auditor.Policy, *auditor.Plan, *auditor.Report, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return pol, nil, nil, err
	}
	if _, err := auditor.ParseRelease(c.to); err != nil {
		return pol, nil, nil, fmt.Errorf("--to: %w", err)
	}
	c.scope.Servers = splitCommas(c.scope.Servers)
	r, err := a.once(pol).audit(ctx)
	if err != nil {
		return pol, nil, nil, err
	}
	plan, err := auditor.MakePlan(r.Snapshot, pol, c.to, c.scope)
	return pol, plan, r, err
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

// planOutput is the documented JSON of `plan --format json`.
type planOutput struct {
	*auditor.Plan
	Audit auditInfo `json:"audit"`
	// Error is set when no plan could be made (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

// failedPlanJSON is plan's document when no plan could be made: UNKNOWN,
// no step, the error. to is --to as given.
func failedPlanJSON(err error, to, floor string, audit auditInfo) planOutput {
	return planOutput{Plan: &auditor.Plan{To: to, ToLevel: auditor.LevelUnknown, Floor: floor, Status: auditor.Unknown,
		Steps: []auditor.PlanStep{}, Unchanged: []string{}}, Audit: audit, Error: err.Error()}
}

// listed is how many entries of a list the text output prints before it
// says how many more there are.
const listed = 10

func writePlanText(w io.Writer, p *auditor.Plan) error {
	ew := &errWriter{w: w}
	level := fmt.Sprint(p.ToLevel)
	if p.ToLevel == auditor.LevelUnknown {
		level = "unknown: " + p.LevelSource
	}
	met := "the floor " + p.Floor + " is never met"
	switch {
	case p.FloorMetAt == nil:
	case *p.FloorMetAt == 0:
		met = "every server already runs the floor " + p.Floor + " or later"
	default:
		met = fmt.Sprintf("the floor %s is first met after step %d", p.Floor, *p.FloorMetAt)
	}
	ew.printf("%s: plan to %s (JetStream API level %s): %s; %s\n", p.Status, p.To, level, fmt.Sprintf("%d %s", len(p.Steps), plural(len(p.Steps), "step")), met)
	if len(p.Unchanged) > 0 {
		ew.printf("already on %s: %s\n", p.To, strings.Join(p.Unchanged, ", "))
	}
	if len(p.Steps) > 0 {
		ew.printf("Restart one server at a time: lame duck mode first, then wait for /healthz before the next.\n")
	}
	for _, st := range p.Steps {
		ew.printf("\n%s: %s\n", st, st.Status)
		ew.printf("  still not on %s: %s\n", p.To, orNone(st.StillOld))
		groups := func(title string, gs []auditor.GroupImpact) {
			ew.printf("  %s: %d\n", title, len(gs))
			for i, g := range gs {
				if i == listed {
					ew.printf("    ... and %d more\n", len(gs)-listed)
					break
				}
				ew.printf("    %s: %s\n", groupName(g.Kind, g.Account, g.AccountName, g.Stream, g.Consumer, g.Domain), g.Reason)
			}
		}
		groups("unavailable while "+st.Server+" restarts", st.Unavailable)
		groups("left with a bare quorum while "+st.Server+" restarts", st.BareQuorum)
		ew.printf("  consumers that cannot take a RESET after the step: %d\n", len(st.NoReset))
		for i, r := range st.NoReset {
			if i == listed {
				ew.printf("    ... and %d more\n", len(st.NoReset)-listed)
				break
			}
			ew.printf("    %s: %s: %s\n", groupName("consumer", r.Account, r.AccountName, r.Stream, r.Consumer, r.Domain), r.Reset, r.Reason)
		}
		findings := func(title string, fs []auditor.Finding) {
			ew.printf("  %s: %d\n", title, len(fs))
			for i, f := range fs {
				if i == listed {
					ew.printf("    ... and %d more\n", len(fs)-listed)
					break
				}
				ew.printf("    %s %s\n", f.Code, f.Message)
			}
		}
		findings("assets held offline, diverging or of unknown fate after the step", st.LevelFindings)
		findings("findings that appear", st.Appear)
		findings("findings that go", st.Gone)
		for _, d := range st.Depend {
			ew.printf("  depends on the leader: %s\n", d.Message)
		}
	}
	return ew.err
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func groupName(kind, account, accountName, stream, consumer, domain string) string {
	n := kind
	if kind == "meta" {
		n = "the JetStream meta group"
	} else {
		n += " " + auditor.AccountLabel(account, accountName) + " > " + stream
		if consumer != "" {
			n += " > " + consumer
		}
	}
	if domain != "" {
		n += " (domain " + domain + ")"
	}
	return n
}
