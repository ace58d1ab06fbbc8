package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// assumeFlags is --assume SERVER=VERSION, repeatable: check and report
// evaluate the audit as if those servers ran those versions.
type assumeFlags struct {
	raw    []string
	parsed []auditor.Assumption
}

func addAssumeFlag(cmd *kingpin.CmdClause, f *assumeFlags) {
	cmd.Flag("assume", "Evaluate the audit as if SERVER (a server name, cluster/NAME or *) ran VERSION (repeatable; a later one wins): print the would-be report with the findings that would appear and go, and exit with its status").
		PlaceHolder("SERVER=VERSION").StringsVar(&f.raw)
}

// parse reads every --assume before the audit runs: a typo fails at once.
func (f *assumeFlags) parse() error {
	f.parsed = nil
	for _, s := range f.raw {
		a, err := auditor.ParseAssumption(s)
		if err != nil {
			return fmt.Errorf("--assume: %w", err)
		}
		f.parsed = append(f.parsed, a)
	}
	return nil
}

// apply returns the report to print: r itself without --assume, else the
// would-be report and the what-if it comes from.
func (f *assumeFlags) apply(r *auditor.Report, pol auditor.Policy) (*auditor.Report, *auditor.WhatIf, error) {
	if len(f.parsed) == 0 {
		return r, nil, nil
	}
	w, err := auditor.Assume(r.Snapshot, pol, f.parsed)
	if err != nil {
		return nil, nil, fmt.Errorf("--assume: %w", err)
	}
	return w.After, w, nil
}

// whatIfOutput is the what_if block of check's and report's JSON.
type whatIfOutput struct {
	Assumptions []string                `json:"assumptions"`
	Assumed     []auditor.AssumedServer `json:"assumed"`
	// StatusNow is the status of the audit as it is.
	StatusNow auditor.Severity       `json:"status_now"`
	Appear    []auditor.Finding      `json:"appear"`
	Gone      []auditor.Finding      `json:"gone"`
	Depend    []auditor.LeaderChoice `json:"depends_on_leader"`
}

func whatIfJSON(w *auditor.WhatIf) *whatIfOutput {
	if w == nil {
		return nil
	}
	out := &whatIfOutput{Assumed: nonNil(w.Assumed), StatusNow: w.Before.Status, Appear: nonNil(w.Appear), Gone: nonNil(w.Gone), Depend: nonNil(w.Depend)}
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
	}
	for _, part := range []struct {
		title string
		fs    []auditor.Finding
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

func levelText(level int) string {
	if level == auditor.LevelUnknown {
		return "unknown"
	}
	return fmt.Sprint(level)
}
