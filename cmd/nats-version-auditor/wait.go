package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

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

func (w *waitFlags) wanted() auditor.Severity {
	if w.waitFor == "warning" {
		return auditor.Warning
	}
	return auditor.OK
}

// errWaitInterrupted is until's answer when SIGINT or SIGTERM ended the
// wait; it has said so.
var errWaitInterrupted = errors.New("wait interrupted")

// until audits until the status is the one wanted or better, printing a
// line to stderr whenever the picture changes, and returns the last audit's
// outcome for check to print. A connection failure is waited out (a rolling
// upgrade restarts the very server the gate may connect to); credentials,
// TLS and permission failures are not, as waiting cannot mend them.
func (w *waitFlags) until(ctx context.Context, audit func(context.Context) (*auditor.Report, error), stderr io.Writer) (*auditor.Report, error) {
	want := w.wanted()
	begun := time.Now()
	deadline := begun.Add(w.wait)
	backoff := w.minInterval
	lastLine := ""
	interrupted := func() (*auditor.Report, error) {
		fmt.Fprintf(stderr, "%s: %v\n", appName, errWaitInterrupted)
		return nil, errWaitInterrupted
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
		line := progressLine(r, err)
		if line != lastLine {
			fmt.Fprintf(stderr, "%s %s\n", started.Format("15:04:05"), line)
			lastLine = line
			backoff = w.minInterval
		} else {
			backoff = min(2*backoff, maxBackoff*w.minInterval)
		}
		if err == nil && !r.Status.Worse(want) {
			return r, nil
		}
		earliest := started.Add(w.minInterval)
		if earliest.After(deadline) {
			status := auditor.Unknown
			if err == nil {
				status = r.Status
			}
			// Say when it ends, not when it would have: the deadline may be
			// seconds away, but no audit may start before it.
			fmt.Fprintf(stderr, "%s: the wait gave up after %s of --wait %s: the next audit could not start before the deadline "+
				"(at most one per --audit.min-interval %s); status %s, wanted %s\n",
				appName, time.Since(begun).Round(100*time.Millisecond), w.wait, w.minInterval, status, want)
			return r, err
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
func auditUnlessInterrupted(ctx context.Context, audit func(context.Context) (*auditor.Report, error)) (*auditor.Report, error) {
	type outcome struct {
		r   *auditor.Report
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

// progressLine sums up an audit in one line: the status, how many servers
// are at or above the floor, the consumers whose leader or a follower is
// below it, and a count of every other kind of finding.
func progressLine(r *auditor.Report, err error) string {
	if err != nil {
		return fmt.Sprintf("%s %v; still waiting", auditor.Unknown, err)
	}
	counts := map[auditor.Code]int{}
	followed := map[[3]string]bool{}
	for _, f := range r.Findings {
		counts[f.Code]++
		if f.Code == auditor.ConsumerReplicaBelowFloor {
			followed[[3]string{f.Account, f.Stream, f.Consumer}] = true
		}
	}
	atFloor := 0
	for _, s := range r.Servers {
		if s.Verdict == auditor.VerdictAtFloor || s.Verdict == auditor.VerdictAbove {
			atFloor++
		}
	}
	parts := []string{fmt.Sprintf("%d of %d servers at or above %s", atFloor, r.ServersExpected, r.Floor)}
	if n := counts[auditor.ConsumerLeaderBelowFloor]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s led below it", n, plural(n, "consumer")))
	}
	if n := len(followed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d with a follower below it", n))
	}
	for _, k := range auditor.Codes {
		switch k.Code {
		case auditor.ServerBelowFloor, auditor.ConsumerLeaderBelowFloor, auditor.ConsumerReplicaBelowFloor:
			continue // said above
		}
		if n := counts[k.Code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.Code))
		}
	}
	return r.Status.String() + " " + strings.Join(parts, "; ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
