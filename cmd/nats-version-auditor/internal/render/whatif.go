package render

import (
	"fmt"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// WhatIf is the what_if block of check's and report's JSON under --assume.
type WhatIf struct {
	Assumptions []string                `json:"assumptions"`
	Assumed     []auditor.AssumedServer `json:"assumed"`
	// StatusNow is the status of the audit as it is.
	StatusNow findings.Severity      `json:"status_now"`
	Appear    []findings.Finding     `json:"appear"`
	Gone      []findings.Finding     `json:"gone"`
	Depend    []auditor.LeaderChoice `json:"depends_on_leader"`
}

func whatIfOf(w *auditor.WhatIf, n *notes) *WhatIf {
	if w == nil {
		return nil
	}
	out := &WhatIf{Assumed: NonNil(w.Assumed), StatusNow: w.Before.Status, Appear: NonNil(n.cite(w.Appear)), Gone: NonNil(n.cite(w.Gone)), Depend: NonNil(w.Depend)}
	for _, a := range w.Assumptions {
		out.Assumptions = append(out.Assumptions, a.String())
	}
	return out
}

// assumedShown is how many characters of --assume's assumptions a first
// line names before it counts the rest.
const assumedShown = 40

// assuming is the words the first line of a would-be report carries: the
// assumptions, as many as fit in assumedShown characters, and how many
// more there are (the servers each changes are listed below it).
func assuming(w *auditor.WhatIf) string {
	if w == nil {
		return ""
	}
	var said string
	for i, a := range w.Assumptions {
		next := a.String()
		if i > 0 {
			next = said + ", " + next
		}
		if i > 0 && len(next) > assumedShown {
			return fmt.Sprintf(" assuming %s and %d more", said, len(w.Assumptions)-i)
		}
		said = next
	}
	return " assuming " + said
}

// writeWhatIfText prints what an --assume changes: the servers it changes,
// the findings that would appear and go, a count by code of those that
// would stay, and where the leader decides. It stands in for the would-be
// report's list of findings: every one of them would appear or stay.
func writeWhatIfText(ew *errWriter, n *notes, w *auditor.WhatIf) {
	ew.printf("\nWHAT IF%s (the audit as it is: %s)\n", assuming(w), w.Before.Status)
	if len(w.Assumed) == 0 {
		ew.printf("  no server would change: each already runs what is assumed\n")
	}
	for _, s := range w.Assumed {
		ew.printf("  %s: %s (API level %s) → %s (API level %s: %s)\n", s.Name, s.From, levelText(s.FromLevel), s.To, levelText(s.ToLevel), s.LevelSource)
		if len(s.FeatureFlags) > 0 {
			at := snapshot.Server{Version: s.To.String(), Parsed: s.To, FeatureFlags: s.FeatureFlags}
			ew.printf("    feature flags it would run with (its config's, %s's defaults for the rest): %s\n", s.To, dashList(flagsShown(at)))
		}
		if s.PinnedLeadersMoved > 0 {
			ew.printf("    it leads %d pinned consumers: its restart moves their leadership and drops their pins; whoever pulls next takes each\n", s.PinnedLeadersMoved)
		}
	}
	for _, part := range []struct {
		title string
		fs    []findings.Finding
	}{{"WOULD APPEAR", w.Appear}, {"WOULD GO", w.Gone}} {
		ew.printf("\n%s (%d)\n", part.title, len(part.fs))
		for _, f := range part.fs {
			ew.printf("  %s %s: %s\n", f.Severity, f.Code, n.message(f))
		}
	}
	if stay := staying(w); len(stay) > 0 {
		var total int
		var parts []string
		for _, c := range stay {
			total += c.n
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.code))
		}
		ew.printf("\nWOULD STAY (%d): %s (check without --assume lists them)\n", total, strings.Join(parts, ", "))
	}
	if len(w.Depend) > 0 {
		ew.printf("\nDEPENDS ON THE LEADER (%d)\n", len(w.Depend))
		for _, d := range w.Depend {
			ew.printf("  %s\n", d.Message)
		}
	}
}

// codeCount is how many findings of a code.
type codeCount struct {
	code findings.Code
	n    int
}

// staying counts, by code in the would-be report's order, its findings
// that are not among those that would appear: the findings the audit as it
// is has too, though a message may say more under the what-if.
func staying(w *auditor.WhatIf) []codeCount {
	if w.After == nil {
		return nil
	}
	type key struct {
		code findings.Code
		msg  string
	}
	appear := map[key]int{}
	for _, f := range w.Appear {
		appear[key{f.Code, f.Message}]++
	}
	var out []codeCount
	at := map[findings.Code]int{}
	for _, f := range w.After.Findings {
		if k := (key{f.Code, f.Message}); appear[k] > 0 {
			appear[k]--
			continue
		}
		i, ok := at[f.Code]
		if !ok {
			i = len(out)
			at[f.Code] = i
			out = append(out, codeCount{code: f.Code})
		}
		out[i].n++
	}
	return out
}
