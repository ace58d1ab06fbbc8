package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/version"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

type checkCommand struct {
	cmd      *kingpin.CmdClause
	pol      policyFlags
	floorSet bool
	// pullWatch is --pull-watch.
	pullWatch time.Duration
	format    string
	wait      waitFlags
	assume    assumeFlags
	remote    exporterFlags
	// given are the flags of the audit on NATS that were given on the
	// command line, by name: --exporter refuses them.
	given map[string]*bool
}

func addCheckCommand(app *kingpin.Application) *checkCommand {
	c := &checkCommand{}
	c.cmd = app.Command("check", "Audit the whole system once, print the findings and exit with the Nagios status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	addFloorFlag(c.cmd, &c.pol).IsSetByUser(&c.floorSet)
	addUnpulledAfterFlag(c.cmd, &c.pol)
	addPullWatchFlag(c.cmd, &c.pullWatch, "")
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json", "nagios")
	addAssetFilterFlags(c.cmd, &c.pol)
	addWaitFlags(c.cmd, &c.wait)
	addAssumeFlag(c.cmd, &c.assume)
	addExporterFlags(c.cmd, &c.remote)
	c.given = map[string]*bool{}
	// Every flag of the application but help, version and logging shapes
	// the audit on NATS (its connection, its bounds), and so does each of
	// check's below: a new one is refused with --exporter until it is
	// known to mean something there.
	for _, f := range app.Model().Flags {
		if !exporterKeeps(f.Name) {
			c.given[f.Name] = new(bool)
			app.GetFlag(f.Name).IsSetByUser(c.given[f.Name])
		}
	}
	for _, name := range []string{"unpulled-after", "pull-watch", "account", "stream", "consumer", "assume"} {
		c.given[name] = new(bool)
		c.cmd.GetFlag(name).IsSetByUser(c.given[name])
	}
	return c
}

// exporterKeeps reports whether the application's flag name means the same
// with --exporter: help, version, shell completion and logging.
func exporterKeeps(name string) bool {
	return name == "version" || name == "log.level" || name == "log.format" ||
		strings.HasPrefix(name, "help") || strings.HasPrefix(name, "completion-")
}

// run audits once, or with --wait until the status is good enough, prints
// the outcome and returns the status to exit with: the report's, or OK
// where --accept takes it. Whatever ends it, the output is a complete
// document in --format: an audit that could not run is UNKNOWN with the
// error, so that `| jq .status` always has an answer.
func (c *checkCommand) run(ctx context.Context, a auditing, stdout, stderr io.Writer) (findings.Severity, error) {
	started := time.Now()
	pol, r, err := c.audit(ctx, a, stderr)
	var interrupted *waitInterrupted
	if errors.As(err, &interrupted) {
		// Said on stderr; the document is of the last audit the wait saw.
		// The wait did not end on its own, so the exit is UNKNOWN unless
		// that audit was CRITICAL: a gate that knows something is broken
		// says so, as the document does.
		if interrupted.last == nil {
			c.failed(stdout, interrupted.lastErr, started)
			return findings.Unknown, nil
		}
		exit := findings.Unknown
		if interrupted.last.Status.Worse(findings.Unknown) {
			exit = interrupted.last.Status
		}
		_ = c.write(stdout, interrupted.last, nil, exit)
		return exit, nil
	}
	var w *auditor.WhatIf
	if err == nil {
		r, w, err = c.assume.apply(r, pol)
	}
	if err != nil {
		// The document says why the last audit could not run; how the
		// wait ended goes to stderr with it.
		audit := err
		var gaveUp *waitGaveUp
		if errors.As(err, &gaveUp) {
			audit = gaveUp.err
		}
		c.failed(stdout, audit, started)
		return findings.Unknown, err
	}
	exit := c.wait.exit(r.Status)
	if err := c.write(stdout, r, w, exit); err != nil {
		return findings.Unknown, err
	}
	return exit, nil
}

// write prints check's document of r (the would-be report of w under
// --assume) in --format, with what the gate adds where it applies: under
// --accept warning, the status accepted and the exit; with --exporter,
// where the report came from. The Nagios line is the report's alone: its
// status is the one Nagios reads.
func (c *checkCommand) write(stdout io.Writer, r *findings.Report, w *auditor.WhatIf, exit findings.Severity) error {
	from := c.remote.answerOf(r)
	var gate *gateDoc
	if accept := c.wait.accepted(); accept != findings.OK {
		gate = &gateDoc{Accept: accept, ExitCode: int(exit)}
	}
	wait := c.wait.ended
	if c.format == render.FormatJSON && (gate != nil || from != nil) {
		doc := checkDoc{Gate: gate}
		if from != nil {
			// The exporter's document as it came, with how this run's wait
			// ended (left out, as CheckWaitedOf leaves it, without one).
			doc.Check, doc.Exporter = from.doc, &exporterDoc{URL: c.remote.shown(), AgeSeconds: from.ageSeconds}
			if wait != (render.Wait{}) {
				doc.Waited = &render.Waited{Seconds: wait.Took.Seconds(), Audits: wait.Audits}
			}
			doc.Interrupted = wait.Interrupted
		} else {
			doc.Check = render.CheckWaitedOf(r, w, wait)
		}
		if err := render.WriteJSON(stdout, doc); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	if err := render.WriteCheckWaited(stdout, c.format, r, w, wait); err != nil {
		return err
	}
	if c.format != render.FormatText {
		return nil
	}
	var lines []string
	if from != nil {
		lines = append(lines, fmt.Sprintf("from the exporter at %s: its audit started %.1fs before it answered", c.remote.shown(), from.ageSeconds))
	}
	if exit == findings.OK && r.Status != findings.OK {
		lines = append(lines, fmt.Sprintf("accepted: %s passes the gate under --accept %s (exit 0)", r.Status, c.wait.acceptName()))
	}
	if len(lines) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(stdout, "\n%s\n", strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// checkDoc is check's JSON document with what the gate adds to it, each
// block only where it applies: every other run prints render's document
// as it is.
type checkDoc struct {
	render.Check
	Gate     *gateDoc     `json:"gate,omitempty"`
	Exporter *exporterDoc `json:"exporter,omitempty"`
}

// gateDoc is how the gate judged the status, under --accept warning.
type gateDoc struct {
	// Accept is the worst status that exits 0.
	Accept findings.Severity `json:"accept"`
	// ExitCode is the exit code of the run that printed the document.
	ExitCode int `json:"exit_code"`
}

// exporterDoc says where a report from --exporter came from.
type exporterDoc struct {
	URL string `json:"url"`
	// AgeSeconds is how long before it answered the exporter's audit started.
	AgeSeconds float64 `json:"age_seconds"`
}

// failed prints check's document of an audit that could not run, begun at
// started, with how a wait ended; the error is what run reports.
func (c *checkCommand) failed(stdout io.Writer, err error, started time.Time) {
	_ = render.WriteCheckFailedWaited(stdout, c.format, err, c.pol.failed(err, started), c.wait.ended)
}

// audit checks the flags and runs the audits, on NATS or, with
// --exporter, asked of a running serve.
func (c *checkCommand) audit(ctx context.Context, a auditing, stderr io.Writer) (auditor.Policy, *findings.Report, error) {
	pol, err := c.pol.policy()
	if err != nil {
		return pol, nil, err
	}
	if c.remote.url != "" {
		if err := c.refuseNATSFlags(); err != nil {
			return pol, nil, err
		}
	} else {
		if c.remote.maxAgeSet {
			return pol, nil, errors.New("--max-age bounds the age of an exporter's audit: it needs --exporter")
		}
		if err := a.conn.validate(); err != nil {
			return pol, nil, err
		}
	}
	if err := c.wait.validate(); err != nil {
		return pol, nil, err
	}
	if err := c.assume.parse(); err != nil {
		return pol, nil, err
	}
	a.pullWatch = c.pullWatch
	audit := a.once(pol).audit
	if c.remote.url != "" {
		// --floor given must be the exporter's; left at its default, the
		// exporter's floor is taken.
		var floor version.Version
		if c.floorSet {
			floor = pol.Floor
		}
		audit = func(ctx context.Context) (*findings.Report, error) { return c.remote.fetch(ctx, floor) }
	}
	if c.wait.wait == 0 {
		r, err := audit(ctx)
		return pol, r, err
	}
	if len(c.assume.parsed) > 0 {
		// A what-if does not change while the system does not: nothing to wait for.
		return pol, nil, fmt.Errorf("--assume judges one audit; it cannot be combined with --wait")
	}
	// A natscli context that cannot be loaded is a flag error: no wait mends it.
	if c.remote.url == "" {
		if _, err := a.conn.natsContext(); err != nil {
			return pol, nil, err
		}
	}
	r, err := c.wait.until(ctx, audit, stderr)
	return pol, r, err
}

// refuseNATSFlags refuses, with --exporter, the flags that shape an audit on
// NATS: the exporter audits with its own, and a gate given both would
// judge by flags that did nothing.
func (c *checkCommand) refuseNATSFlags() error {
	if err := c.remote.validate(); err != nil {
		return err
	}
	given := func(names ...string) []string {
		var out []string
		for _, name := range names {
			if *c.given[name] {
				out = append(out, "--"+name)
			}
		}
		return out
	}
	if given("assume") != nil {
		return errors.New("--assume needs the audit's snapshot, which an exporter's report does not carry: drop --exporter to judge the what-if on NATS")
	}
	if filters := given("account", "stream", "consumer"); filters != nil {
		// The report lists findings, not the assets the audit saw: a
		// pattern that matches nothing would pass as one whose assets are
		// healthy.
		return fmt.Errorf("%s cannot narrow an exporter's report, which does not list the assets its audit saw (a pattern that matches nothing would pass): "+
			"drop %s, or drop --exporter to audit NATS narrowed", strings.Join(filters, ", "), plural(len(filters), "it", "them"))
	}
	if given("unpulled-after") != nil {
		return errors.New("--unpulled-after is the exporter's to set: serve judges its audits with its own (set it on serve, or drop --exporter)")
	}
	if given("pull-watch") != nil {
		return errors.New("--pull-watch is the exporter's to set: serve listens to the pulls all the time with its own (set it on serve, or drop --exporter)")
	}
	names := slices.Sorted(maps.Keys(c.given))
	if conn := given(names...); conn != nil {
		return fmt.Errorf("--exporter asks a running serve, which audits NATS with its own connection and flags: %s would not be used; "+
			"drop %s, or drop --exporter to audit NATS directly", strings.Join(conn, ", "), plural(len(conn), "it", "them"))
	}
	return nil
}

// plural is one or many, as n calls for.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
