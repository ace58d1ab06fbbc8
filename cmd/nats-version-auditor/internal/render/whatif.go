package render

import (
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

func whatIfOf(w *auditor.WhatIf) *WhatIf {
	if w == nil {
		return nil
	}
	out := &WhatIf{Assumed: NonNil(w.Assumed), StatusNow: w.Before.Status, Appear: NonNil(w.Appear), Gone: NonNil(w.Gone), Depend: NonNil(w.Depend)}
	for _, a := range w.Assumptions {
		out.Assumptions = append(out.Assumptions, a.String())
	}
	return out
}

// assuming is the words the first line of a would-be report carries.
func assuming(w *auditor.WhatIf) string {
	if w == nil {
		return ""
	}
	var as []string
	for _, a := range w.Assumptions {
		as = append(as, a.String())
	}
	return " assuming " + strings.Join(as, ", ")
}

// writeWhatIfText prints what an --assume changed: the servers it changed,
// the findings that would appear and go, and where the leader decides.
func writeWhatIfText(ew *errWriter, w *auditor.WhatIf) {
	if w == nil {
		return
	}
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
			ew.printf("  %s %s: %s\n", f.Severity, f.Code, f.Message)
		}
	}
	if len(w.Depend) > 0 {
		ew.printf("\nDEPENDS ON THE LEADER (%d)\n", len(w.Depend))
		for _, d := range w.Depend {
			ew.printf("  %s\n", d.Message)
		}
	}
}
