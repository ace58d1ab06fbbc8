package auditor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// The findings both axes of the table give an asset's peers: what a peer
// does with the asset's config (Features), and what a follower does with
// the replicated operations its leader proposes (ReplicatedOps).

// opFindings are the findings of the ops a leader of the asset proposes
// that a peer cannot apply as its follower. Every peer that would propose
// the op if it led counts, not only the current leader: a leader change is
// ordinary, and the audit takes the worse outcome. A peer that does not
// run the replica (the first axis) never applies an entry and is left to
// peerFindings. The consumer RESET is judged by its own rules, an
// application's (consumerFollower) and durable sourcing's
// (sourcingFindings), which this adds nothing to. A follower that several
// ops crash (an atomic batch's message and commit) is named once, for the
// first. A peer that did not answer and that an earlier audit of serve saw
// (lastSeen) is judged as a follower on the version it last ran: the op
// that crashed it is in the group's log, and crashes it again on every
// restart on that release, so its finding must outlive its process.
func opFindings(a *snapshot.Asset, byName, lastSeen map[string]snapshot.Server, sourced bool) []findings.Finding {
	if a.Ops == 0 || a.Replicas < 2 {
		return nil
	}
	var peers, missing []snapshot.Server
	collected := false
	var out []findings.Finding
	var named []string
	for i, o := range releases.ReplicatedOps {
		if o.Kind != a.Kind || o.Op == releases.OpResetSeq || a.Ops&(1<<i) == 0 {
			continue
		}
		// Made for the few assets with such an op: every consumer admits
		// a RESET, and Evaluate meets each of them.
		if !collected {
			collected = true
			for _, p := range a.Peers {
				if s, ok := byName[p]; ok {
					peers = append(peers, s)
				} else if s, ok := lastSeen[p]; ok {
					missing = append(missing, s)
				}
			}
		}
		proposers, how := Proposers(o, peers, a.Ops, a.Replicas, sourced)
		if how == releases.NotProposed {
			continue
		}
		for i, s := range append(slices.Clone(peers), missing...) {
			outcome, _ := o.FollowerOutcome(s.Parsed, a.Features)
			if (outcome != releases.CrashesOnApply && outcome != releases.HaltsReplica && outcome != releases.ResetsReplica) || slices.Contains(named, s.Name) {
				continue
			}
			// A peer proposes nothing to itself: the others must.
			others := slices.DeleteFunc(slices.Clone(proposers), func(n string) bool { return n == s.Name })
			if len(others) == 0 {
				continue
			}
			named = append(named, s.Name)
			out = append(out, opFinding(a, o, s, outcome, others, byName, sourced, i >= len(peers)))
		}
	}
	return out
}

// opFinding is the finding of follower s, whose outcome for the op is
// CrashesOnApply, HaltsReplica or ResetsReplica, of an asset that the
// proposers (s not among them) propose the op to when they lead it. missing
// is set for a follower that did not answer, s being what an earlier audit
// saw of it.
func opFinding(a *snapshot.Asset, o releases.ReplicatedOp, s snapshot.Server, outcome releases.Outcome, proposers []string, byName map[string]snapshot.Server, sourced, missing bool) findings.Finding {
	f := assetFinding(a)
	f.Server, f.Cluster, f.Version, f.Op = s.Name, s.Cluster, s.Version, o.Name
	if a.Leader != s.Name {
		f.Peer = a.Leader
	}
	// The leader that proposes it now, or the first peer that would.
	now := slices.Contains(proposers, a.Leader)
	who := byName[proposers[0]]
	if now {
		who = byName[a.Leader]
	}
	which := opProposedBy(o, who, sourced)
	follower := s.Name + " (" + s.Version + ")"
	if missing {
		follower = s.Name + ", not answering and last seen running " + s.Version + ","
	}
	if now {
		follower = "follower " + follower
	} else {
		follower = "if " + orList(proposers) + " becomes its leader, " + follower + " as its follower"
	}
	if outcome == releases.CrashesOnApply {
		f.Code = findings.AssetOpCrashesFollower
		f.Message = fmt.Sprintf("%s %s: %s panics on %s (Unknown group entry op type: %d), which %s, and again on every restart",
			a.Kind, a.Label(), follower, o.GoName, o.Op, which)
		if missing {
			f.Message += " on that release as it replays the entry: if that is why it is down, it stays down until it is upgraded"
		}
		return f
	}
	f.Code = findings.AssetOpHaltsReplica
	if outcome == releases.ResetsReplica {
		f.Message = fmt.Sprintf("%s %s: %s cannot apply %s, which %s: it logs the error and runs on without it, and at the next message resets its replica and is caught up from the same snapshot again, in a loop, so its copy never catches up and the group runs on one peer fewer",
			a.Kind, a.Label(), follower, opEntry(o), which)
		return f
	}
	f.Message = fmt.Sprintf("%s %s: %s cannot apply %s, which %s: it logs a critical write error and its replica stops voting, so the group runs on one voting peer fewer",
		a.Kind, a.Label(), follower, opEntry(o), which)
	return f
}

// opEntry names what the leader sends, as a finding writes it.
func opEntry(o releases.ReplicatedOp) string {
	if o.Snapshot != 0 {
		return fmt.Sprintf("the %s (stream state encoding %d, %s)", o.Title, o.Snapshot, o.GoName)
	}
	return fmt.Sprintf("%s (entry op %d)", o.GoName, o.Op)
}

// opProposedBy says who proposes the op, how and when: "n2 (2.15.3)
// proposes as the mirror's leader whenever ...".
func opProposedBy(o releases.ReplicatedOp, leader snapshot.Server, sourced bool) string {
	if p, ok := opProposal(o, leader, sourced); ok {
		return fmt.Sprintf("%s (%s) %s %s", leader.Name, leader.Version, o.Verb(), proposalWhen(p, leader))
	}
	// A version that is not one: Proposes takes the worst.
	return fmt.Sprintf("%s, whose version %q is not a version, may %s as its leader", leader.Name, leader.Version, strings.TrimSuffix(o.Verb(), "s"))
}

// peerOutcome is what one peer does with an asset's config: the worst
// outcome of the features it uses, and that feature.
type peerOutcome struct {
	server  snapshot.Server
	outcome releases.Outcome
	feature releases.Feature
}

// peerFindings are the findings of the peers that do not run the asset as
// the others do: one that holds it offline or never loads it (the group
// runs on fewer peers than it has), and one that runs it online without
// what it does not know (its copy diverges). A peer whose API level the
// asset's required level is above has its ASSET_API_LEVEL_UNSUPPORTED
// finding instead (levelSpeaks), which says the same of the same server
// and asset, and one that crashes on the config its ASSET_CRASHES_SERVER
// finding; both still count among the peers that do not run it.
func (e *evaluation) peerFindings(a *snapshot.Asset) {
	if a.Features == 0 {
		return
	}
	var odd []peerOutcome
	down, answered := 0, 0
	for _, p := range a.Peers {
		s, ok := e.seen[p]
		if !ok {
			continue
		}
		answered++
		o, ft := worstFeature(a.Features, s.Parsed)
		if o == releases.Supported {
			continue
		}
		if !releases.RunsReplica(o) {
			down++
		}
		if required, _ := a.LevelNeeded(s.Parsed); !levelSpeaks(required, s.APILevel) && (o == releases.NotLoaded || o == releases.NotCreated || o == releases.HeldOffline || o == releases.IgnoredOnline) {
			odd = append(odd, peerOutcome{s, o, ft})
		}
	}
	if len(odd) == 0 {
		return
	}
	n := len(a.Peers)
	runs := runsOn(n-down, n, answered < n)
	for _, po := range odd {
		s, ft := po.server, po.feature
		f := assetFinding(a)
		f.Server, f.Cluster, f.Version, f.Feature = s.Name, s.Cluster, s.Version, ft.Name
		what := fmt.Sprintf("%s, new in %s", ft.Title, ft.Since)
		switch po.outcome {
		case releases.NotLoaded:
			f.Code = findings.AssetPeerNotRunning
			f.Message = fmt.Sprintf("%s %s %s: %s (%s) does not load it (%s): it cannot decode its config, logs the failure and runs on without it",
				a.Kind, a.Label(), runs, s.Name, s.Version, what)
		case releases.NotCreated:
			f.Code = findings.AssetPeerNotRunning
			f.Message = fmt.Sprintf("%s %s %s: %s (%s) does not create it (%s): it refuses the config as it creates the %s, logs the error and runs on without it",
				a.Kind, a.Label(), runs, s.Name, s.Version, what, a.Kind)
		case releases.HeldOffline:
			f.Code = findings.AssetPeerNotRunning
			f.Message = fmt.Sprintf("%s %s %s: %s (%s) holds it offline as unsupported (%s)",
				a.Kind, a.Label(), runs, s.Name, s.Version, what) + stopsItsStream(a, s)
		default:
			f.Code = findings.AssetPeerDiverges
			f.Message = fmt.Sprintf("%s %s uses %s: peer %s (%s) runs it online without it, ignoring what it does not know, and its copy diverges from the others'",
				a.Kind, a.Label(), what, s.Name, s.Version)
		}
		e.add(f)
	}
}

// opHazards adds the findings of the ops leaders propose to followers
// that cannot apply them, for every asset: like a crash on decode, they
// hold whatever the floor and are not narrowed by the policy's patterns,
// as the server that goes down takes every asset it hosts with it.
func (e *evaluation) opHazards(snap *snapshot.Snapshot) {
	for i := range snap.Streams {
		for _, f := range opFindings(&snap.Streams[i], e.seen, snap.LastSeen, false) {
			e.add(f)
		}
	}
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		sourced := len(e.sourcers[ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}]) > 0
		for _, f := range opFindings(a, e.seen, snap.LastSeen, sourced) {
			e.add(f)
		}
	}
}

// Proposes reports whether a leader, with the feature flags its server has
// (see FlagOn), proposes the op o for an asset with replicas replicas whose
// config admits the ops in ops (DetectOps), and how. sourced is whether a
// stream reads through the asset (a consumer) by durable sourcing. A single
// replica has no RAFT group and no followers. The reason names the leader,
// its version and what makes it propose.
func Proposes(o releases.ReplicatedOp, leader snapshot.Server, ops releases.OpSet, replicas int, sourced bool) (releases.Proposing, string) {
	if replicas < 2 {
		return releases.NotProposed, "a single replica has no followers"
	}
	if !ops.Holds(o) {
		return releases.NotProposed, fmt.Sprintf("its config admits no %s", o.GoName)
	}
	v := leader.Parsed
	if v.IsZero() {
		return releases.ProposedByItself, fmt.Sprintf("%s reports version %q, which is not a version: it may %s %s", leader.Name, leader.Version, strings.TrimSuffix(o.Verb(), "s"), o.GoName)
	}
	p, ok := opProposal(o, leader, sourced)
	if !ok {
		return releases.NotProposed, fmt.Sprintf("%s (%s) does not %s %s for it", leader.Name, leader.Version, strings.TrimSuffix(o.Verb(), "s"), o.GoName)
	}
	return p.How, fmt.Sprintf("%s (%s) %s %s %s", leader.Name, leader.Version, o.Verb(), o.GoName, proposalWhen(p, leader))
}

// opProposal is the worst way a leader of a parsed version proposes the op,
// by itself before on request; false when it does not.
func opProposal(o releases.ReplicatedOp, leader snapshot.Server, sourced bool) (releases.Proposal, bool) {
	var best releases.Proposal
	found := false
	for _, p := range o.Proposed {
		if leader.Parsed.Before(p.Since) || (p.Sourced && !sourced) {
			continue
		}
		if p.Flag != "" && !snapshot.FlagOn(leader, p.Flag) {
			continue
		}
		if !found || p.How == releases.ProposedByItself {
			best, found = p, true
		}
	}
	return best, found
}

// proposalWhen says when the leader proposes it, and which of its server's flags
// makes it.
func proposalWhen(p releases.Proposal, leader snapshot.Server) string {
	if p.Flag == "" {
		return p.When
	}
	return fmt.Sprintf("%s (%s: %s)", p.When, p.Flag, flagOrigin(leader, p.Flag))
}

// Proposers lists the peers that would propose o if they led the
// asset: where the outcome depends on which peer leads, the audit takes the
// worst of them. how is the worst way any of them proposes it.
func Proposers(o releases.ReplicatedOp, peers []snapshot.Server, ops releases.OpSet, replicas int, sourced bool) (names []string, how releases.Proposing) {
	how = releases.NotProposed
	for _, p := range peers {
		got, _ := Proposes(o, p, ops, replicas, sourced)
		if got == releases.NotProposed {
			continue
		}
		names = append(names, p.Name)
		if how == releases.NotProposed || got == releases.ProposedByItself {
			how = got
		}
	}
	return names, how
}

// flagOrigin says where FlagOn took the flag's value from.
func flagOrigin(s snapshot.Server, name string) string {
	if on, ok := s.FeatureFlags[name]; ok {
		return fmt.Sprintf("%t as the server reports it", on)
	}
	f, _ := releases.FlagByName(name)
	d, _ := f.DefaultBy(s.Parsed)
	return fmt.Sprintf("%t by default in %s", d.On, s.Version)
}
