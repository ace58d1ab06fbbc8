package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
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
	addUnpulledAfterFlag(c.cmd, &c.pol)
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
		_ = render.WriteCheck(stdout, c.format, interrupted.last, nil)
		if interrupted.last.Status.Worse(findings.Unknown) {
			return interrupted.last.Status, nil
		}
		return findings.Unknown, nil
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
	if err := render.WriteCheck(stdout, c.format, r, w); err != nil {
		return findings.Unknown, err
	}
	return r.Status, nil
}

// failed prints check's document of an audit that could not run, begun at
// started; the error is what run reports.
func (c *checkCommand) failed(stdout io.Writer, err error, started time.Time) {
	_ = render.WriteCheckFailed(stdout, c.format, err, c.pol.failed(err, started))
}

// audit checks the flags and runs the audits.
func (c *checkCommand) audit(ctx context.Context, a auditing, stderr io.Writer) (auditor.Policy, *findings.Report, error) {
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

// waitFlags are check's flags for waiting until the system is good enough.
type waitFlags struct {
	wait        time.Duration
	waitFor     string
	minInterval time.Duration
}

// maxBackoff is how many --audit.min-interval a wait lets pass between two
// audits at most while nothing changes.
const maxBackoff = 4

func addWaitFlags(cmd *kingpin.CmdClause, w *waitFlags) {
	cmd.Flag("wait", "Audit again while the status is worse than --wait-for, for at most this long (0: audit once)").Default("0s").DurationVar(&w.wait)
	cmd.Flag("wait-for", "With --wait: the status to wait for, ok or warning (default ok)").EnumVar(&w.waitFor, "ok", "warning")
	addMinIntervalFlag(cmd, waitMinInterval, &w.minInterval)
}

func (w *waitFlags) validate() error {
	switch {
	case w.wait < 0:
		return fmt.Errorf("--wait %s: must not be negative", w.wait)
	case w.waitFor != "" && w.wait == 0:
		return errors.New("--wait-for needs --wait")
	case w.wait > 0 && w.minInterval <= 0:
		return fmt.Errorf("--audit.min-interval %s: must be positive with --wait", w.minInterval)
	}
	return nil
}

func (w *waitFlags) wanted() findings.Severity {
	if w.waitFor == "warning" {
		return findings.Warning
	}
	return findings.OK
}

// errWaitInterrupted is what a wait that SIGINT or SIGTERM ended says.
var errWaitInterrupted = errors.New("wait interrupted")

// waitInterrupted is until's answer when SIGINT or SIGTERM ended the wait;
// it has said so. last is the last audit's report, or lastErr why it could
// not run (errWaitInterrupted if no audit ended before the signal).
type waitInterrupted struct {
	last    *findings.Report
	lastErr error
}

func (w *waitInterrupted) Error() string { return errWaitInterrupted.Error() }

// waitGaveUp is until's answer when the wait ended on the deadline with an
// audit that could not run: that audit's error, and how the wait ended, said
// in one line.
type waitGaveUp struct {
	err    error
	gaveUp string
}

func (w *waitGaveUp) Error() string { return w.err.Error() + "; " + w.gaveUp }
func (w *waitGaveUp) Unwrap() error { return w.err }

// until audits until the status is the one wanted or better, printing a
// line to stderr whenever the picture changes, and returns the last audit's
// outcome for check to print. A connection failure is waited out (a rolling
// upgrade restarts the very server the gate may connect to); credentials,
// TLS and permission failures are not, as waiting cannot mend them.
func (w *waitFlags) until(ctx context.Context, audit func(context.Context) (*findings.Report, error), stderr io.Writer) (*findings.Report, error) {
	want := w.wanted()
	begun := time.Now()
	deadline := begun.Add(w.wait)
	backoff := w.minInterval
	lastLine := ""
	last := &waitInterrupted{lastErr: errWaitInterrupted}
	interrupted := func() (*findings.Report, error) {
		fmt.Fprintf(stderr, "%s: %v\n", appName, errWaitInterrupted)
		return nil, last
	}
	for {
		started := time.Now()
		r, err := auditUnlessInterrupted(ctx, audit)
		if ctx.Err() != nil {
			return interrupted()
		}
		if err != nil && !worthWaiting(err) {
			return nil, err
		}
		last.last, last.lastErr = r, err
		done := err == nil && !r.Status.Worse(want)
		// No audit may start after the deadline: the wait gives up after
		// this one unless it is done.
		givingUp := !done && started.Add(w.minInterval).After(deadline)
		line := render.Progress(r, err)
		// What an audit that ends the wait found is said once, in the line
		// that ends it.
		unsaid := givingUp && line != lastLine
		if line != lastLine {
			if !givingUp {
				fmt.Fprintf(stderr, "%s %s\n", started.Format("15:04:05"), line)
			}
			lastLine = line
			backoff = w.minInterval
		} else {
			backoff = min(2*backoff, maxBackoff*w.minInterval)
		}
		if done {
			return r, nil
		}
		if givingUp {
			status := findings.Unknown
			if err == nil {
				status = r.Status
			}
			// Say when it ends, not when it would have: the deadline may be
			// seconds away, but no audit may start before it.
			gaveUp := fmt.Sprintf("the wait gave up after %s of --wait %s: the next audit could not start before the deadline "+
				"(at most one per --audit.min-interval %s); status %s, wanted %s",
				time.Since(begun).Round(100*time.Millisecond), w.wait, w.minInterval, status, want)
			if err != nil {
				// One line for both, the error run prints.
				return nil, &waitGaveUp{err: err, gaveUp: gaveUp}
			}
			if unsaid {
				gaveUp += ": " + strings.TrimPrefix(line, status.String()+" ")
			}
			fmt.Fprintf(stderr, "%s: %s\n", appName, gaveUp)
			return r, nil
		}
		next := started.Add(backoff)
		if next.After(deadline) {
			next = deadline
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return interrupted()
		case <-timer.C:
		}
	}
}

// auditUnlessInterrupted runs one audit but returns as soon as ctx ends:
// connecting does not watch ctx, and an interrupted wait exits at once.
func auditUnlessInterrupted(ctx context.Context, audit func(context.Context) (*findings.Report, error)) (*findings.Report, error) {
	type outcome struct {
		r   *findings.Report
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := audit(ctx)
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		return o.r, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
