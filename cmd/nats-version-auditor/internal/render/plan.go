package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/statefulset"
)

// Plan is the documented JSON of `plan --format json`. Its head is the
// plan's own, with --to and the floor as text: a plan that could not be
// made shows them as they were given.
type Plan struct {
	To          string `json:"to"`
	ToLevel     int    `json:"to_api_level"`
	LevelSource string `json:"level_source"`
	Floor       string `json:"floor"`
	*auditor.Plan
	// Notes are the citations the messages of the steps' findings refer to
	// as [ID], each written once.
	Notes []Note `json:"notes,omitempty"`
	Audit Audit  `json:"audit"`
	// Error is set when no plan could be made (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

// WritePlan writes plan's document of p, made of the audit r, in format,
// text or JSON.
func WritePlan(out io.Writer, format string, p *auditor.Plan, r *findings.Report) error {
	if format == FormatJSON {
		n := &notes{}
		cited := citePlan(p, n)
		return writeError(WriteJSON(out, Plan{To: p.To.String(), ToLevel: p.ToLevel, LevelSource: p.LevelSource, Floor: p.Floor.String(),
			Plan: cited, Notes: n.list, Audit: AuditOf(r)}))
	}
	return writeError(writePlanText(out, p))
}

// citePlan is p with its steps' findings citing n's notes, in the order of
// the JSON: p itself when none quotes a citation, else a copy (p is the
// caller's).
func citePlan(p *auditor.Plan, n *notes) *auditor.Plan {
	steps := slices.Clone(p.Steps)
	for i, st := range steps {
		steps[i].Path, steps[i].LevelFindings, steps[i].Appear, steps[i].Gone = n.cite(st.Path), n.cite(st.LevelFindings), n.cite(st.Appear), n.cite(st.Gone)
	}
	if len(n.list) == 0 {
		return p
	}
	out := *p
	out.Steps = steps
	return &out
}

// WritePlanFailed writes plan's document when no plan could be made: r is
// the audit it was to be made of (findings.Failed when none ran), to is --to
// as given and err what ended it. The text form is empty: the one line of
// the error on stderr says it all.
func WritePlanFailed(out io.Writer, format string, err error, to string, r *findings.Report) error {
	if format != FormatJSON {
		return nil
	}
	doc := Plan{To: to, ToLevel: releases.LevelUnknown, Floor: r.FloorShown(),
		Plan: &auditor.Plan{Status: findings.Unknown, Steps: []auditor.PlanStep{}, Unchanged: []string{}}, Audit: AuditOf(r), Error: err.Error()}
	return writeError(WriteJSON(out, doc))
}

func writePlanText(w io.Writer, p *auditor.Plan) error {
	ew := &errWriter{w: w}
	n := &notes{}
	level := fmt.Sprint(p.ToLevel)
	if p.ToLevel == releases.LevelUnknown {
		level = "unknown: " + p.LevelSource
	}
	met := "the floor " + p.Floor.String() + " is never met"
	switch {
	case p.FloorMetAt == nil:
	case *p.FloorMetAt == 0:
		met = "every server already runs the floor " + p.Floor.String() + " or later"
	default:
		met = fmt.Sprintf("the floor %s is first met after step %d", p.Floor, *p.FloorMetAt)
	}
	ew.printf("%s: plan to %s (JetStream API level %s): %s; %s\n", p.Status, p.To, level, fmt.Sprintf("%d %s", len(p.Steps), plural(len(p.Steps), "step")), met)
	if len(p.Unchanged) > 0 {
		ew.printf("already on %s: %s\n", p.To, strings.Join(p.Unchanged, ", "))
	}
	if !p.First.IsZero() {
		ew.printf("The path to %s is not supported from where some servers are (each step says why): move them to %s first\n"+
			"(`nats-version-auditor plan --to %s`), then plan to %s again.\n", p.To, p.First, p.First, p.To)
	}
	if len(p.Steps) > 0 {
		// /healthz skips the assets a server holds offline as unsupported
		// (2.12.15 monitor.go:4050-4053, 2.15.3 :4148-4151): it says 200
		// while the server runs less than its peers think it does.
		ew.printf("Restart one server at a time: lame duck mode first; before the next, wait for\n"+
			"`nats-version-auditor check --wait 10m --accept warning --floor %s`, not /healthz alone:\n"+
			"it passes while a server holds assets offline as unsupported.\n", p.GateFloor())
	}
	strategy := map[string]statefulset.Strategy{}
	for _, r := range p.StatefulSets {
		strategy[r.StatefulSet] = r.Strategy
		ew.printf("StatefulSet %s: %s, as the plan restarts %s\n", r.StatefulSet, r.Strategy, r.Why)
	}
	for _, st := range p.Steps {
		ew.printf("\n%s: %s\n", st, st.Status)
		if pod := st.Pod; pod != nil {
			switch strategy[pod.StatefulSet] {
			case statefulset.Partition:
				ew.printf("  pod %s: kubectl patch statefulset %s -p '{\"spec\":{\"updateStrategy\":{\"rollingUpdate\":{\"partition\":%d}}}}', then kubectl rollout status statefulset %s\n", pod.Name, pod.StatefulSet, pod.Ordinal, pod.StatefulSet)
			default:
				ew.printf("  pod %s: kubectl delete pod %s (updateStrategy OnDelete)\n", pod.Name, pod.Name)
			}
		}
		ew.printf("  still not on %s: %s\n", p.To, orNone(st.StillOld))
		groups := func(title string, gs []auditor.GroupImpact) {
			ew.printf("  %s: %d\n", title, len(gs))
			for i, g := range gs {
				if i == listed {
					ew.printf("    ... and %d more\n", len(gs)-listed)
					break
				}
				ew.printf("    %s: %s\n", groupName(g.Kind, g.Account, g.AccountName, g.Stream, g.Consumer, g.Domain), g.Reason)
			}
		}
		if st.PinnedLeadersMoved > 0 {
			ew.printf("  pinned consumers it leads: %d (the restart moves their leadership and drops their pins; whoever pulls next takes each)\n", st.PinnedLeadersMoved)
		}
		groups("unavailable while "+st.Server+" restarts", st.Unavailable)
		groups("left with a bare quorum while "+st.Server+" restarts", st.BareQuorum)
		ew.printf("  consumers that cannot take a RESET after the step: %d\n", len(st.NoReset))
		for i, r := range st.NoReset {
			if i == listed {
				ew.printf("    ... and %d more\n", len(st.NoReset)-listed)
				break
			}
			ew.printf("    %s: %s: %s\n", groupName("consumer", r.Account, r.AccountName, r.Stream, r.Consumer, r.Domain), r.Reset, r.Reason)
		}
		findings := func(title string, fs []findings.Finding) {
			ew.printf("  %s: %d\n", title, len(fs))
			for i, f := range fs {
				if i == listed {
					ew.printf("    ... and %d more\n", len(fs)-listed)
					break
				}
				ew.printf("    %s %s\n", f.Code, n.message(f))
			}
		}
		// The step's path findings are among those that appear, below.
		if !st.First.IsZero() {
			ew.printf("  move %s to %s first: UPGRADE_PATH_UNSUPPORTED below says why\n", st.Server, st.First)
		}
		findings("assets held offline, diverging or of unknown fate after the step", st.LevelFindings)
		findings("findings that appear", st.Appear)
		findings("findings that go", st.Gone)
		for _, d := range st.Depend {
			ew.printf("  depends on the leader: %s\n", d.Message)
		}
	}
	writeNotes(ew, n)
	return ew.err
}

func groupName(kind, account, accountName, stream, consumer, domain string) string {
	n := kind
	if kind == "meta" {
		n = "the JetStream meta group"
	} else {
		n += " " + snapshot.AccountLabel(account, accountName) + " > " + stream
		if consumer != "" {
			n += " > " + consumer
		}
	}
	if domain != "" {
		n += " (domain " + domain + ")"
	}
	return n
}
