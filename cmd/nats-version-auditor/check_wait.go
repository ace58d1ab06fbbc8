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

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

// waitFlags are check's flags for the status the gate accepts and for
// waiting until the system is good enough.
type waitFlags struct {
	wait time.Duration
	// accept is --accept as given, and waitFor its hidden alias --wait-for;
	// empty where not given.
	accept, waitFor string
	minInterval     time.Duration
	// ended is how the wait ended, for the document: zero without --wait.
	ended render.Wait
}

// The values of --accept: the worst status that still exits 0. CRITICAL
// and UNKNOWN are none of them: a gate never passes what it knows is
// broken, nor what it did not see.
const (
	acceptOK      = "ok"
	acceptWarning = "warning"
)

// maxBackoff is how many --audit.min-interval a wait lets pass between two
// audits at most while nothing changes.
const maxBackoff = 4

func addWaitFlags(cmd *kingpin.CmdClause, w *waitFlags) {
	cmd.Flag("wait", "Audit again while the status is worse than --accept, for at most this long (0: audit once)").Default("0s").DurationVar(&w.wait)
	cmd.Flag("accept", "The worst status that still exits 0: ok, or warning (a WARNING, such as the mixed versions of a NATS rolling upgrade in progress, then exits 0 and is printed as WARNING); "+
		"with --wait, the status to wait for. CRITICAL and UNKNOWN never pass (default ok)").PlaceHolder(acceptOK).EnumVar(&w.accept, acceptOK, acceptWarning)
	// The old name, from when only a wait could accept a warning.
	cmd.Flag("wait-for", "Old name of --accept").Hidden().EnumVar(&w.waitFor, acceptOK, acceptWarning)
	addMinIntervalFlag(cmd, waitMinInterval, &w.minInterval)
}

func (w *waitFlags) validate() error {
	switch {
	case w.wait < 0:
		return fmt.Errorf("--wait %s: must not be negative", w.wait)
	case w.accept != "" && w.waitFor != "" && w.accept != w.waitFor:
		return fmt.Errorf("--accept %s and --wait-for %s disagree: give --accept alone (--wait-for is its old name)", w.accept, w.waitFor)
	case w.wait > 0 && w.minInterval <= 0:
		return fmt.Errorf("--audit.min-interval %s: must be positive with --wait", w.minInterval)
	}
	return nil
}

// acceptName is --accept's value, or its alias's, or the default.
func (w *waitFlags) acceptName() string {
	switch {
	case w.accept != "":
		return w.accept
	case w.waitFor != "":
		return w.waitFor
	}
	return acceptOK
}

// accepted is the worst status that exits 0, and that a wait waits for.
func (w *waitFlags) accepted() findings.Severity {
	if w.acceptName() == acceptWarning {
		return findings.Warning
	}
	return findings.OK
}

// exit is the status a report of status exits with: OK where --accept
// takes it, else its own.
func (w *waitFlags) exit(status findings.Severity) findings.Severity {
	if status.Worse(w.accepted()) {
		return status
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
	want := w.accepted()
	begun := time.Now()
	deadline := begun.Add(w.wait)
	backoff := w.minInterval
	lastLine := ""
	last := &waitInterrupted{lastErr: errWaitInterrupted}
	defer func() { w.ended.Took = time.Since(begun) }()
	interrupted := func() (*findings.Report, error) {
		fmt.Fprintf(stderr, "%s: %v\n", appName, errWaitInterrupted)
		w.ended.Interrupted = true
		return nil, last
	}
	for {
		started := time.Now()
		r, err := auditUnlessInterrupted(ctx, audit)
		if ctx.Err() != nil {
			return interrupted()
		}
		w.ended.Audits++
		if err != nil && !waitable(err) {
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

// waitable reports whether another audit may succeed where err failed: an
// exporter's answer says for itself (exporterError), a failure on NATS as
// worthWaiting says.
func waitable(err error) bool {
	var e *exporterError
	if errors.As(err, &e) {
		return !e.final
	}
	return worthWaiting(err)
}
