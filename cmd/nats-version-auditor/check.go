package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

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
			fmt.Fprintf(stdout, "NATS VERSIONS UNKNOWN - %v\n", err)
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

// checkOutput is the documented JSON of `check --format json`.
type checkOutput struct {
	Status   auditor.Severity       `json:"status"`
	Floor    string                 `json:"floor"`
	Findings []auditor.Finding      `json:"findings"`
	Servers  []auditor.ServerReport `json:"servers"`
	Audit    auditInfo              `json:"audit"`
}

type auditInfo struct {
	Started          time.Time `json:"started"`
	DurationSeconds  float64   `json:"duration_seconds"`
	ServersExpected  int       `json:"servers_expected"`
	ServersResponded int       `json:"servers_responded"`
	Requests         int       `json:"requests"`
}

func newAuditInfo(r *auditor.Report) auditInfo {
	return auditInfo{
		Started:          r.Snapshot.Started.UTC(),
		DurationSeconds:  r.Snapshot.Duration.Seconds(),
		ServersExpected:  r.ServersExpected,
		ServersResponded: len(r.Servers),
		Requests:         r.Snapshot.Requests,
	}
}

func checkJSON(r *auditor.Report) checkOutput {
	return checkOutput{Status: r.Status, Floor: r.Floor, Findings: nonNil(r.Findings), Servers: nonNil(r.Servers), Audit: newAuditInfo(r)}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeJSON writes v as one line of JSON. Indenting it cost ten times the
// encoding itself (80 ms for 11,000 findings); `jq .` indents for people.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

func summary(r *auditor.Report) string {
	counts := map[auditor.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	return fmt.Sprintf("%d of %d expected servers answered, floor %s; %d findings (%d critical, %d unknown, %d warning)",
		len(r.Servers), r.ServersExpected, r.Floor, len(r.Findings), counts[auditor.Critical], counts[auditor.Unknown], counts[auditor.Warning])
}

func writeCheckText(w io.Writer, r *auditor.Report) error {
	ew := &errWriter{w: w}
	ew.printf("%s: %s\n", r.Status, summary(r))
	for i := 0; i < len(r.Findings); {
		code := r.Findings[i].Code
		j := i
		for j < len(r.Findings) && r.Findings[j].Code == code {
			j++
		}
		ew.printf("\n%s (%s, %d)\n", code, r.Findings[i].Severity, j-i)
		for _, f := range r.Findings[i:j] {
			ew.printf("  %s\n", f.Message)
		}
		i = j
	}
	return ew.err
}

func writeNagios(w io.Writer, r *auditor.Report) error {
	counts := map[auditor.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	first := ""
	if len(r.Findings) > 0 {
		first = ": " + r.Findings[0].Message
	}
	_, err := fmt.Fprintf(w, "NATS VERSIONS %s - %d findings%s | servers=%d;;;0 servers_expected=%d;;;0 critical=%d;;;0 unknown=%d;;;0 warning=%d;;;0 duration=%.3fs;;;0 requests=%d;;;0\n",
		r.Status, len(r.Findings), first, len(r.Servers), r.ServersExpected,
		counts[auditor.Critical], counts[auditor.Unknown], counts[auditor.Warning], r.Snapshot.Duration.Seconds(), r.Snapshot.Requests)
	return err
}

// errWriter keeps the first write error so that a run of prints needs one check.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
