package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Check is the documented JSON of `check --format json`.
type Check struct {
	Status   findings.Severity       `json:"status"`
	Floor    string                  `json:"floor"`
	Findings []findings.Finding      `json:"findings"`
	Servers  []findings.ServerReport `json:"servers"`
	// APILevels and Features say what the system can use now; both are
	// left out when the audit saw no JetStream server (one that could not
	// run saw none).
	APILevels APILevels `json:"api_levels,omitzero"`
	Features  []Feature `json:"features,omitempty"`
	// Pulls says whose pulls the audit heard, and for how long; left out
	// when it did not listen.
	Pulls *PullSight `json:"pulls,omitempty"`
	// WhatIf is set under --assume: the report is the would-be one.
	WhatIf *WhatIf `json:"what_if,omitempty"`
	// Notes are the citations the messages of Findings and WhatIf refer to
	// as [ID], each written once.
	Notes []Note `json:"notes,omitempty"`
	// Waited and Interrupted say how `check --wait` ended: how long it
	// waited and how many audits it ran, and whether SIGINT or SIGTERM
	// ended it (the document is then of the last audit it saw). Both are
	// left out of a check that did not wait.
	Waited      *Waited `json:"waited,omitempty"`
	Interrupted bool    `json:"interrupted,omitempty"`
	Audit       Audit   `json:"audit"`
	// Error is set when the audit could not run at all (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

// Waited is how long `check --wait` waited, and how many audits it ran.
type Waited struct {
	Seconds float64 `json:"seconds"`
	Audits  int     `json:"audits"`
}

// Wait is how a `check --wait` ended, as its document says: how long it
// waited from its start to its end, how many audits it ran (those that
// could not run included), and whether SIGINT or SIGTERM ended it. The
// zero Wait is a check that did not wait.
type Wait struct {
	Took        time.Duration
	Audits      int
	Interrupted bool
}

// waited is w's block of check's JSON: nil for a check that did not wait.
func (w Wait) waited() *Waited {
	if w.Took <= 0 && w.Audits == 0 {
		return nil
	}
	return &Waited{Seconds: w.Took.Seconds(), Audits: w.Audits}
}

// said is how the text and the Nagios line say w: empty for a check that
// did not wait.
func (w Wait) said() string {
	var parts []string
	if ww := w.waited(); ww != nil {
		parts = append(parts, fmt.Sprintf("waited %s, %d %s", w.Took.Round(100*time.Millisecond), ww.Audits, plural(ww.Audits, "audit")))
	}
	if w.Interrupted {
		parts = append(parts, "interrupted")
	}
	return strings.Join(parts, ", ")
}

// CheckOf is check's document of r, the would-be report of w under --assume.
func CheckOf(r *findings.Report, w *auditor.WhatIf) Check {
	return CheckWaitedOf(r, w, Wait{})
}

// CheckWaitedOf is check's document of r, the last audit of a `check
// --wait` that ended as wait says (the would-be report of w under
// --assume).
func CheckWaitedOf(r *findings.Report, w *auditor.WhatIf, wait Wait) Check {
	levels, features := capabilityOf(r)
	n := &notes{}
	return Check{Status: r.Status, Floor: r.FloorShown(), Findings: NonNil(n.cite(r.Findings)), Servers: NonNil(r.Servers),
		APILevels: levels, Features: features, Pulls: PullSightOf(r.Snapshot), WhatIf: whatIfOf(w, n), Notes: n.list,
		Waited: wait.waited(), Interrupted: wait.Interrupted, Audit: AuditOf(r)}
}

// WriteCheck writes check's document of r (the would-be report of w under
// --assume) in format.
func WriteCheck(out io.Writer, format string, r *findings.Report, w *auditor.WhatIf) error {
	return WriteCheckWaited(out, format, r, w, Wait{})
}

// WriteCheckWaited writes check's document of r, the last audit of a
// `check --wait` that ended as wait says (the would-be report of w under
// --assume), in format.
func WriteCheckWaited(out io.Writer, format string, r *findings.Report, w *auditor.WhatIf, wait Wait) error {
	var err error
	switch format {
	case FormatJSON:
		err = writeCheckJSON(out, CheckWaitedOf(r, w, wait))
	case FormatNagios:
		err = writeCheckNagios(out, r, w, wait)
	default:
		err = writeCheckText(out, r, w, wait)
	}
	return writeError(err)
}

// WriteCheckFailed writes check's document of an audit that could not run:
// failed is its report (findings.Failed), err what ended it. The text form
// is empty: the one line of the error on stderr says it all.
func WriteCheckFailed(out io.Writer, format string, err error, failed *findings.Report) error {
	return WriteCheckFailedWaited(out, format, err, failed, Wait{})
}

// WriteCheckFailedWaited writes check's document of a `check --wait` that
// ended as wait says with an audit that could not run, or before any audit
// ran: failed is that audit's report (findings.Failed), err what ended it.
// The text form is empty, as WriteCheckFailed's.
func WriteCheckFailedWaited(out io.Writer, format string, err error, failed *findings.Report, wait Wait) error {
	switch format {
	case FormatNagios:
		// The error whole, however long: it is all the line has to say.
		said := err.Error()
		if w := wait.said(); w != "" {
			said += "; " + w
		}
		_, werr := fmt.Fprintf(out, "NATS VERSIONS %s - %s\n", findings.Unknown, said)
		return writeError(werr)
	case FormatJSON:
		doc := CheckWaitedOf(failed, nil, wait)
		doc.Error = err.Error()
		return writeError(WriteJSON(out, doc))
	}
	return nil
}

func writeCheckJSON(w io.Writer, doc Check) error {
	return writeFindingsByHand(w, &doc, &doc.Findings)
}

// writeCheckText writes what was checked (the first line, then each
// cluster's versions), then the findings: under --assume only what would
// change, the would-be report's first line counting them all.
func writeCheckText(w io.Writer, r *findings.Report, what *auditor.WhatIf, wait Wait) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", firstLine(r, what))
	lines := clusterVersions(r.Servers)
	for i, l := range lines {
		if i == listed {
			ew.printf("... and %d more clusters (report lists them)\n", len(lines)-listed)
			break
		}
		ew.printf("%s\n", l)
	}
	if s := wait.said(); s != "" {
		ew.printf("%s\n", s)
	}
	if s := pullsSaid(r.Snapshot); s != "" {
		ew.printf("%s\n", s)
	}
	n := &notes{}
	writeFindingsOrWhatIf(ew, n, r.Findings, what)
	writeNotes(ew, n)
	return ew.err
}

// pullsSaid is check's line on who pulls: how long it listened and to
// which accounts' pulls; "" when it did not listen.
func pullsSaid(snap *snapshot.Snapshot) string {
	s := snap.Pulls
	if s == nil {
		return ""
	}
	names := snapshot.AccountNames(snap)
	var heard, not []string
	for _, a := range slices.Sorted(maps.Keys(s.Visible)) {
		if s.Visible[a] {
			heard = append(heard, snapshot.AccountLabel(a, names[a]))
		} else {
			not = append(not, snapshot.AccountLabel(a, names[a]))
		}
	}
	line := fmt.Sprintf("pulls heard for %s", seconds(s.Watched.Seconds()))
	if len(heard) > 0 {
		line += " in " + strings.Join(heard, ", ")
	}
	if len(not) > 0 {
		line += "; not heard in " + strings.Join(not, ", ") + " (docs/pulls.md)"
	}
	if s.Dropped > 0 {
		line += fmt.Sprintf("; %d not kept", s.Dropped)
	}
	return line
}

// writeFindingsOrWhatIf lists the findings, or under --assume what would
// change: check's and report's text end the same way.
func writeFindingsOrWhatIf(ew *errWriter, n *notes, fs []findings.Finding, what *auditor.WhatIf) {
	if what == nil {
		writeFindings(ew, n, fs)
		return
	}
	writeWhatIfText(ew, n, what)
}

// nagiosLine is check's Nagios status text, between its status and its
// perfdata: what was checked and what was found (under --assume, what
// would change), and how a wait ended. The worst finding is said in its own
// words, as far as the line has room: on-call reads this line alone.
func nagiosLine(r *findings.Report, what *auditor.WhatIf, wait Wait) string {
	said := "no findings"
	if n := len(r.Findings); n > 0 {
		said = fmt.Sprintf("%d %s, worst: %s", n, plural(n, "finding"), uncited(r.Findings[0]))
	}
	head := ""
	if what != nil {
		head = strings.TrimSpace(assuming(what)) + ": "
		said = fmt.Sprintf("%d %s, %d would appear, %d would go", len(r.Findings), plural(len(r.Findings), "finding"), len(what.Appear), len(what.Gone))
	}
	if w := wait.said(); w != "" {
		// Before the worst finding, which the line's end may cut.
		return head + checked(r) + "; " + w + "; " + said
	}
	return head + checked(r) + "; " + said
}

func writeCheckNagios(w io.Writer, r *findings.Report, what *auditor.WhatIf, wait Wait) error {
	counts := severityCounts(r.Findings)
	head := "NATS VERSIONS " + r.Status.String() + " - "
	_, err := fmt.Fprintf(w, "%s%s | servers=%d;;;0 servers_expected=%d;;;0 critical=%d;;;0 unknown=%d;;;0 warning=%d;;;0 duration=%.3fs;;;0 requests=%d;;;0\n",
		head, shortened(nagiosLine(r, what, wait), firstLineMax-1-len(head)), len(r.Servers), r.ServersExpected,
		counts[findings.Critical], counts[findings.Unknown], counts[findings.Warning], r.Snapshot.Duration.Seconds(), r.Snapshot.Requests)
	return err
}

// Progress sums up an audit of `check --wait` in one line: the status, how
// many servers are at or above the floor, the consumers whose leader or a
// follower is below it, and a count of every other kind of finding.
func Progress(r *findings.Report, err error) string {
	if err != nil {
		return fmt.Sprintf("%s %v; still waiting", findings.Unknown, err)
	}
	counts := map[findings.Code]int{}
	followed := map[[3]string]bool{}
	for _, f := range r.Findings {
		counts[f.Code]++
		if f.Code == findings.ConsumerReplicaBelowFloor {
			followed[[3]string{f.Account, f.Stream, f.Consumer}] = true
		}
	}
	atFloor := 0
	for _, s := range r.Servers {
		if s.Verdict == version.VerdictAtFloor || s.Verdict == version.VerdictAbove {
			atFloor++
		}
	}
	parts := []string{fmt.Sprintf("%d of %d servers at or above %s", atFloor, r.ServersExpected, r.Floor)}
	if n := counts[findings.ConsumerLeaderBelowFloor]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s led below it", n, plural(n, "consumer")))
	}
	if n := len(followed); n > 0 {
		parts = append(parts, fmt.Sprintf("%d with a follower below it", n))
	}
	for _, k := range findings.Codes {
		switch k.Code {
		case findings.ServerBelowFloor, findings.ConsumerLeaderBelowFloor, findings.ConsumerReplicaBelowFloor:
			continue // said above
		}
		if n := counts[k.Code]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.Code))
		}
	}
	return r.Status.String() + " " + strings.Join(parts, "; ")
}
