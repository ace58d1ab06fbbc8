package auditor

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/statefulset"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// PlanScope narrows a plan to some servers: each list that is not empty
// must match (a server in one of its clusters, domains, names).
type PlanScope struct {
	Clusters, Domains, Servers []string
}

// Plan is the order in which to restart, one at a time, the servers of a
// scope that do not run To, with what each step does, judged on the
// placement the audit saw.
type Plan struct {
	To version.Version `json:"to"`
	// ToLevel is To's API level (LevelUnknown when it is not known).
	ToLevel     int             `json:"to_api_level"`
	LevelSource string          `json:"level_source"`
	Floor       version.Version `json:"floor"`
	// Status is the worst step's.
	Status findings.Severity `json:"status"`
	Steps  []PlanStep        `json:"steps"`
	// FloorMetAt is the step after which every server that answered runs
	// the floor or later: 0 before the first step, nil never (a server
	// outside the scope stays below it, or To is).
	FloorMetAt *int `json:"floor_met_at_step"`
	// Unchanged are the servers of the scope that already run To.
	Unchanged []string `json:"unchanged"`
	// First is the release to move the servers to before To, where a step's
	// path breaks a rule that names one (PathRule.First): to 2.15 from
	// before 2.14.7, the newest 2.14 release the level table knows. Zero
	// when no step needs one.
	First version.Version `json:"first,omitzero"`
	// StatefulSets say how each StatefulSet whose pods the steps name can
	// follow the plan's order.
	StatefulSets []statefulset.Rollout `json:"statefulsets,omitempty"`
	// Before is the audit as it is.
	Before *findings.Report `json:"-"`
}

// PlanStep is one server's restart on To.
type PlanStep struct {
	Step    int    `json:"step"`
	Server  string `json:"server"`
	Cluster string `json:"cluster,omitempty"`
	Domain  string `json:"domain,omitempty"`
	// Pod is the StatefulSet pod the server runs in, where its cluster's
	// server names say so.
	Pod *statefulset.Pod `json:"pod,omitempty"`
	// From is the version as the server reported it.
	From      string          `json:"from"`
	To        version.Version `json:"to"`
	Direction string          `json:"direction"`
	// Why says why the server comes at this place in the order.
	Why string `json:"why"`
	// Status is the worst of the report after the step and of what the
	// restart itself takes down: an R1 asset (WARNING), a replicated group
	// or meta group below quorum (CRITICAL).
	Status findings.Severity `json:"status"`
	// StillOld are the servers that do not run To after this step.
	StillOld []string `json:"still_old"`
	// Unavailable are the groups the server's restart takes down: its R1
	// assets, and groups left below quorum while it is away.
	Unavailable []GroupImpact `json:"unavailable"`
	// BareQuorum are the replicated groups left with just a quorum while it
	// is away: one more failure takes them down.
	BareQuorum []GroupImpact `json:"bare_quorum"`
	// NoReset are the consumers that cannot take a RESET after the step,
	// with why (the worst leader assumed where leadership decides).
	NoReset []ResetRisk `json:"no_reset"`
	// Path are the findings of the rules of PathRules the server's move
	// breaks, from the release it runs to To (releases.go).
	Path []findings.Finding `json:"path"`
	// First is the release to move the server to before To, where a rule
	// it breaks names one.
	First version.Version `json:"first,omitzero"`
	// LevelFindings are the assets held offline, run online and diverging,
	// or of unknown fate, by their peers' API levels after the step.
	LevelFindings []findings.Finding `json:"level_findings"`
	// Appear and Gone compare the report after this step with the one
	// before it (the audit itself for the first step).
	Appear   []findings.Finding `json:"appear"`
	Gone     []findings.Finding `json:"gone"`
	Depend   []LeaderChoice     `json:"depends_on_leader"`
	FloorMet bool               `json:"floor_met"`
	// PinnedLeadersMoved counts the pinned_client consumers the server
	// leads when its turn comes (PinnedLedBy): the restart drops their pins.
	PinnedLeadersMoved int `json:"pinned_leaders_moved,omitempty"`
	// After is the report as it would be after the step.
	After *findings.Report `json:"-"`
}

// GroupImpact is a RAFT group a restart weakens or takes down.
type GroupImpact struct {
	GroupRef
	Peers int `json:"peers"`
	// Up is how many peers stay up (answered the audit, and are not the
	// server restarting); Quorum how many the group needs.
	Up     int    `json:"up"`
	Quorum int    `json:"quorum"`
	Reason string `json:"reason"`
}

// ResetRisk is a consumer that cannot take a RESET, and why.
type ResetRisk struct {
	ConsumerKey
	AccountName string                `json:"account_name,omitempty"`
	Reset       findings.ResetVerdict `json:"reset"`
	Reason      string                `json:"reason"`
}

// MakePlan plans the restart on version to of every server of the scope
// that does not run it, one at a time, in the order the NATS upgrade docs
// advise: servers that lead nothing first, then by how much they lead, the
// JetStream meta leader of each domain last. Each step is Assume of every
// step so far. It fails when the scope names a server or cluster or domain
// that did not answer.
//
// before is Evaluate's report of the audit's snapshot under p, as the
// caller has it.
func MakePlan(before *findings.Report, p Policy, v version.Version, scope PlanScope) (*Plan, error) {
	snap := before.Snapshot
	if v.IsZero() {
		return nil, errors.New("no version to plan to")
	}
	if err := scope.check(snap); err != nil {
		return nil, err
	}
	level, source := LevelFor(snap, v)
	plan := &Plan{To: v, ToLevel: level, LevelSource: source, Floor: before.Floor, Before: before,
		Steps: []PlanStep{}, Unchanged: []string{}}

	metaLeaders := map[string]bool{}
	for _, m := range snap.Meta {
		metaLeaders[m.Leader] = true
	}
	led := map[string]int{}
	for _, s := range before.Servers {
		led[s.Name] = s.StreamsLed + s.ConsumersLed
	}
	var order []snapshot.Server
	for _, s := range snap.Servers {
		if !scope.has(s) {
			continue
		}
		if s.Parsed == v {
			plan.Unchanged = append(plan.Unchanged, s.Name)
			continue
		}
		order = append(order, s)
	}
	slices.Sort(plan.Unchanged)
	slices.SortFunc(order, func(a, b snapshot.Server) int {
		return cmp.Or(cmp.Compare(b2i(metaLeaders[a.Name]), b2i(metaLeaders[b.Name])),
			cmp.Compare(led[a.Name], led[b.Name]), cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name))
	})

	if floorMet(before) {
		zero := 0
		plan.FloorMetAt = &zero
	}
	var assumed []Assumption
	prev, state := before, snap
	for i, s := range order {
		assumed = append(assumed, Assumption{Target: s.Name, Version: v})
		w, err := Assume(before, p, assumed)
		if err != nil {
			return nil, err
		}
		st := PlanStep{Step: i + 1, Server: s.Name, Cluster: s.Cluster, Domain: s.Domain, From: s.Version, To: v,
			Direction: direction(s.Parsed, v), Why: why(s, metaLeaders[s.Name], led[s.Name]), After: w.After,
			Depend: w.Depend, StillOld: []string{}}
		for _, o := range w.After.Servers {
			if o.Parsed != v {
				st.StillOld = append(st.StillOld, o.Name)
			}
		}
		st.Unavailable, st.BareQuorum = restartImpact(state, p, s.Name)
		st.PinnedLeadersMoved = PinnedLedBy(state, s.Name)
		st.NoReset = noReset(w.After.Snapshot, p)
		st.LevelFindings, st.Path = []findings.Finding{}, []findings.Finding{}
		for _, f := range w.After.Findings {
			if k, _ := findings.Info(f.Code); k.Level {
				st.LevelFindings = append(st.LevelFindings, f)
			}
			if f.Server == s.Name && slices.Contains(pathCodes, f.Code) {
				st.Path = append(st.Path, f)
			}
		}
		st.First = releases.FirstBefore(s.Parsed, v)
		if plan.First.IsZero() {
			plan.First = st.First
		}
		st.Appear, st.Gone = diffFindings(prev.Findings, w.After.Findings), diffFindings(w.After.Findings, prev.Findings)
		st.FloorMet = floorMet(w.After)
		if st.FloorMet && plan.FloorMetAt == nil {
			n := st.Step
			plan.FloorMetAt = &n
		}
		st.Status = w.After.Status
		for _, g := range st.Unavailable {
			sev := findings.Warning
			if g.Peers > 1 {
				sev = findings.Critical
			}
			st.Status = st.Status.Worst(sev)
		}
		plan.Status = plan.Status.Worst(st.Status)
		plan.Steps = append(plan.Steps, st)
		prev, state = w.After, w.After.Snapshot
	}
	clusterOf := make(map[string]string, len(snap.Servers))
	for _, s := range snap.Servers {
		clusterOf[s.Name] = s.Cluster
	}
	restarted := make([]string, len(plan.Steps))
	for i, st := range plan.Steps {
		restarted[i] = st.Server
	}
	pods, rollouts := statefulset.Place(restarted, clusterOf)
	for i := range plan.Steps {
		if pod, ok := pods[plan.Steps[i].Server]; ok {
			plan.Steps[i].Pod = &pod
		}
	}
	plan.StatefulSets = rollouts
	if len(plan.Steps) == 0 {
		plan.Status = before.Status
	} else if !plan.Steps[len(plan.Steps)-1].FloorMet {
		// Met on the way, or before, and lost again: a downgrade.
		plan.FloorMetAt = nil
	}
	return plan, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func direction(from, to version.Version) string {
	if from.IsZero() {
		return "unknown"
	}
	if from.Before(to) {
		return "upgrade"
	}
	return "downgrade"
}

func why(s snapshot.Server, metaLeader bool, led int) string {
	switch {
	case metaLeader:
		return "JetStream meta leader" + domainSuffix(s.Domain) + ": last"
	case led == 0:
		return "leads no stream or consumer"
	}
	if led == 1 {
		return "leads 1 stream or consumer"
	}
	return fmt.Sprintf("leads %d streams and consumers", led)
}

// floorMet reports whether every server of the report runs the floor or later.
func floorMet(r *findings.Report) bool {
	for _, s := range r.Servers {
		if s.Verdict == version.VerdictBelow || s.Verdict == version.VerdictUnparseable {
			return false
		}
	}
	return len(r.Servers) > 0
}

func (sc PlanScope) has(s snapshot.Server) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	return in(sc.Clusters, s.Cluster) && in(sc.Domains, s.Domain) && in(sc.Servers, s.Name)
}

// check fails on a name of the scope that matches no server that answered.
func (sc PlanScope) check(snap *snapshot.Snapshot) error {
	for _, l := range []struct {
		what  string
		names []string
		field func(snapshot.Server) string
	}{
		{"of cluster", sc.Clusters, func(s snapshot.Server) string { return s.Cluster }},
		{"of domain", sc.Domains, func(s snapshot.Server) string { return s.Domain }},
		{"named", sc.Servers, func(s snapshot.Server) string { return s.Name }},
	} {
		for _, n := range l.names {
			if !slices.ContainsFunc(snap.Servers, func(s snapshot.Server) bool { return l.field(s) == n }) {
				return fmt.Errorf("no server %s %q answered the audit", l.what, n)
			}
		}
	}
	return nil
}

// restartImpact lists the groups that server's restart takes down, and
// those it leaves with a bare quorum. A peer that did not answer the audit
// counts as down already.
func restartImpact(snap *snapshot.Snapshot, p Policy, server string) (down, bare []GroupImpact) {
	up := map[string]bool{}
	for _, s := range snap.Servers {
		up[s.Name] = s.Name != server
	}
	down, bare = []GroupImpact{}, []GroupImpact{}
	// note, where given, adds to the reason of a group below its quorum.
	judge := func(g GroupImpact, peers []string, label string, note func(GroupImpact) string) {
		if !slices.Contains(peers, server) {
			return
		}
		g.Peers = len(peers)
		for _, n := range peers {
			if up[n] {
				g.Up++
			}
		}
		g.Quorum = len(peers)/2 + 1
		switch {
		case g.Peers == 1:
			g.Reason = fmt.Sprintf("R1 on %s: unavailable while it restarts", server)
			down = append(down, g)
		case g.Up < g.Quorum:
			g.Reason = label + fmt.Sprintf("%d of %d peers up while %s restarts, below the quorum of %d: unavailable", g.Up, g.Peers, server, g.Quorum)
			if note != nil {
				g.Reason += note(g)
			}
			down = append(down, g)
		case g.Up == g.Quorum:
			g.Reason = label + fmt.Sprintf("%d of %d peers up while %s restarts: a bare quorum, one more failure takes it down", g.Up, g.Peers, server)
			bare = append(bare, g)
		}
	}
	e := evaluation{p: p}
	for _, assets := range [][]snapshot.Asset{snap.Streams, snap.Consumers} {
		for _, a := range assets {
			if !e.selected(&a) {
				continue
			}
			peers := a.Peers
			if a.Replicas > len(peers) {
				// Peers the audit did not see are down for all it knows.
				peers = append(slices.Clone(peers), make([]string, a.Replicas-len(peers))...)
			}
			judge(GroupImpact{GroupRef: groupOf(a)}, peers, "", nil)
		}
	}
	pad := func(peers []string, size int) []string {
		if size > len(peers) {
			return append(slices.Clone(peers), make([]string, size-len(peers))...)
		}
		return peers
	}
	for _, m := range snap.Meta {
		ref := GroupRef{Kind: "meta", Domain: m.Domain}
		sets := m.Groups()
		if len(sets) == 0 {
			peers, size := metaPeers(snap, m)
			judge(GroupImpact{GroupRef: ref}, pad(peers, size), "", nil)
			continue
		}
		for _, set := range sets {
			members, size := set.Members(snap)
			label := ""
			if len(sets) > 1 {
				// A leafnode's own JetStream beside its hub's, in one domain.
				label = "led by " + set.Leader + ", "
			}
			judge(GroupImpact{GroupRef: ref}, pad(members, size), label, func(g GroupImpact) string {
				return outsiderVotes(snap, m, set, members, up, g)
			})
		}
	}
	return down, bare
}

// outsiderVotes says, of a meta group below its quorum, which of its
// members that stay up count the vote of a server outside it that follows
// it (MetaPeerSet.countsOutsiderVote), where those votes make up the
// quorum: with them a leader can be elected. Empty otherwise.
func outsiderVotes(snap *snapshot.Snapshot, m snapshot.MetaGroup, set *snapshot.MetaPeerSet, members []string, up map[string]bool, g GroupImpact) string {
	var outside, voters []string
	for _, n := range sortedKeys(m.Follows) {
		if up[n] && !slices.Contains(members, n) && slices.Contains(members, m.Follows[n]) {
			outside = append(outside, n)
		}
	}
	for _, s := range snap.Servers {
		if up[s.Name] && slices.Contains(members, s.Name) && set.CountsOutsiderVote(s.Parsed) {
			voters = append(voters, s.Name+" ("+s.Version+")")
		}
	}
	if len(outside) == 0 || len(voters) == 0 || g.Up+len(outside) < g.Quorum {
		return ""
	}
	return fmt.Sprintf("; but %s %s the vote of %s, no member, %s: with it a leader can be elected",
		joinSorted(voters), countVerb(len(voters)), joinSorted(outside), outsiderVoteCite)
}

// noReset lists the consumers of snap that cannot take a RESET.
func noReset(snap *snapshot.Snapshot, p Policy) []ResetRisk {
	x := NewIndex(snap)
	e := evaluation{p: p}
	out := []ResetRisk{}
	for i, a := range snap.Consumers {
		if !e.selected(&a) {
			continue
		}
		k := ConsumerKey{Domain: a.Domain, Account: a.Account, Stream: a.Stream, Consumer: a.Consumer}
		if v := x.view(i, k); v.Reset != findings.ResetSafe {
			out = append(out, ResetRisk{ConsumerKey: v.ConsumerKey, AccountName: v.AccountName, Reset: v.Reset, Reason: v.Reason})
		}
	}
	slices.SortFunc(out, func(a, b ResetRisk) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Account, b.Account), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Consumer, b.Consumer))
	})
	return out
}

// String is the step in a line.
func (st PlanStep) String() string {
	return fmt.Sprintf("%d. %s %s %s → %s (%s)", st.Step, st.Direction, st.Server, st.From, st.To, strings.TrimSpace(st.Why))
}

// GateFloor is the floor to gate each step with: the oldest version any
// server runs before the plan or after it. Held at it, a gate passes a
// system that runs two versions (CLUSTER_MIXED_VERSIONS is a warning) and
// stops at what a restart breaks: a server missing, an asset it holds
// offline, a crash.
func (p *Plan) GateFloor() version.Version {
	oldest := p.To
	if p.Before == nil {
		return oldest
	}
	for _, s := range p.Before.Servers {
		if !s.Parsed.IsZero() && s.Parsed.Before(oldest) {
			oldest = s.Parsed
		}
	}
	return oldest
}
