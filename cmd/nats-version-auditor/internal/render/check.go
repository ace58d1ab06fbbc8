package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Check is the documented JSON of `check --format json`.
type Check struct {
	Status   findings.Severity       `json:"status"`
	Floor    string                  `json:"floor"`
	Findings []findings.Finding      `json:"findings"`
	Servers  []findings.ServerReport `json:"servers"`
	// APILevels and Features say what the system can use now.
	APILevels APILevels `json:"api_levels"`
	Features  []Feature `json:"features"`
	// WhatIf is set under --assume: the report is the would-be one.
	WhatIf *WhatIf `json:"what_if,omitempty"`
	Audit  Audit   `json:"audit"`
	// Error is set when the audit could not run at all (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

// CheckOf is check's document of r, the would-be report of w under --assume.
func CheckOf(r *findings.Report, w *auditor.WhatIf) Check {
	levels, features := capabilityOf(r)
	return Check{Status: r.Status, Floor: r.FloorShown(), Findings: NonNil(r.Findings), Servers: NonNil(r.Servers),
		APILevels: levels, Features: features, WhatIf: whatIfOf(w), Audit: AuditOf(r)}
}

// WriteCheck writes check's document of r (the would-be report of w under
// --assume) in format.
func WriteCheck(out io.Writer, format string, r *findings.Report, w *auditor.WhatIf) error {
	var err error
	switch format {
	case FormatJSON:
		err = writeCheckJSON(out, CheckOf(r, w))
	case FormatNagios:
		err = writeCheckNagios(out, r, w)
	default:
		err = writeCheckText(out, r, w)
	}
	return writeError(err)
}

// WriteCheckFailed writes check's document of an audit that could not run:
// failed is its report (findings.Failed), err what ended it. The text form
// is empty: the one line of the error on stderr says it all.
func WriteCheckFailed(out io.Writer, format string, err error, failed *findings.Report) error {
	switch format {
	case FormatNagios:
		_, werr := fmt.Fprintf(out, "NATS VERSIONS UNKNOWN - %v\n", err)
		return writeError(werr)
	case FormatJSON:
		doc := CheckOf(failed, nil)
		doc.Error = err.Error()
		return writeError(WriteJSON(out, doc))
	}
	return nil
}

func writeCheckJSON(w io.Writer, doc Check) error {
	return writeFindingsByHand(w, &doc, &doc.Findings)
}

func writeCheckText(w io.Writer, r *findings.Report, what *auditor.WhatIf) error {
	ew := &errWriter{w: w}
	ew.printf("%s%s: %s\n", r.Status, assuming(what), summary(r))
	writeFindings(ew, r.Findings)
	writeWhatIfText(ew, what)
	return ew.err
}

func writeCheckNagios(w io.Writer, r *findings.Report, what *auditor.WhatIf) error {
	counts := map[findings.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	msg := fmt.Sprintf("%d %s", len(r.Findings), plural(len(r.Findings), "finding"))
	if what != nil {
		msg = fmt.Sprintf("%s: %s, %d would appear and %d would go", strings.TrimSpace(assuming(what)), msg, len(what.Appear), len(what.Gone))
	}
	if len(r.Findings) > 0 {
		msg += ": " + r.Findings[0].Message
	}
	_, err := fmt.Fprintf(w, "NATS VERSIONS %s - %s | servers=%d;;;0 servers_expected=%d;;;0 critical=%d;;;0 unknown=%d;;;0 warning=%d;;;0 duration=%.3fs;;;0 requests=%d;;;0\n",
		r.Status, msg, len(r.Servers), r.ServersExpected,
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
