package auditor

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Evaluate holds a snapshot against a policy. It is pure: the same snapshot
// and policy always give the same report.
func Evaluate(snap *snapshot.Snapshot, p Policy) *findings.Report {
	r := &findings.Report{Floor: p.Floor, Snapshot: snap, Leafnodes: snap.Leafnodes}
	e := newEvaluation(snap, p, r)
	for i := range rules {
		e.rule = &rules[i]
		rules[i].judge(e, r)
	}
	r.Findings = sortedFindings(e.findings)
	r.Status = findings.StatusOf(r.Findings)
	return r
}

// rules are Evaluate's rules, in the order it runs them. A new rule is one
// entry here, its judge in the file of its job. The order decides only what
// the report holds when a rule runs: r.Clusters and r.ServersExpected are
// filled by the rules that name them.
var rules = []rule{
	{"servers against the floor", []findings.Code{findings.ServerBelowFloor, findings.VersionUnparseable},
		func(e *evaluation, r *findings.Report) { e.servers(r.Servers) }},
	{"clusters of mixed versions", []findings.Code{findings.ClusterMixedVersions},
		func(e *evaluation, r *findings.Report) { r.Clusters = e.clusters(r.Servers) }},
	{"servers expected that did not answer", []findings.Code{findings.ServerMissing},
		func(e *evaluation, r *findings.Report) { r.ServersExpected = len(e.snap.Servers) + e.missing(e.snap) }},
	{"meta groups", []findings.Code{findings.MetaLeaderBelowFloor, findings.ServerNotMetaPeer},
		func(e *evaluation, _ *findings.Report) {
			for _, m := range e.snap.Meta {
				e.meta(m)
			}
		}},
	{"releases: known bad, and upgrade paths within a meta group", []findings.Code{findings.KnownBadRelease, findings.UpgradePathMixed},
		func(e *evaluation, r *findings.Report) { e.releases(e.snap, r.Servers) }},
	{"each stream and consumer: its leader, peers and levels", []findings.Code{
		findings.StreamLeaderBelowFloor, findings.ConsumerLeaderBelowFloor, findings.ConsumerNoLeader, findings.ConsumerReplicaBelowFloor,
		findings.AssetAPILevelUnsupported, findings.ConsumerAcksLostOnTakeover, findings.AssetPeerMissing, findings.AssetPeerBehind,
		findings.AssetPeerNotRunning, findings.AssetPeerDiverges, findings.AssetOpCrashesFollower, findings.AssetOpHaltsReplica},
		func(e *evaluation, _ *findings.Report) {
			for i := range e.snap.Streams {
				e.asset(&e.snap.Streams[i])
			}
			for i := range e.snap.Consumers {
				e.asset(&e.snap.Consumers[i])
			}
		}},
	{"who pulls each consumer with a priority policy", []findings.Code{findings.ConsumerPulledByNobody, findings.ConsumerStalePin, findings.ConsumerPulledByTwo},
		func(e *evaluation, _ *findings.Report) { e.shards(e.snap, e.p.ShardPolicy) }},
	{"what no application asks for: decoding, sourcing RESETs, replicated operations", []findings.Code{
		findings.AssetCrashesServer, findings.AssetHaltsMeta, findings.SourcingResetUnanswered, findings.SourcingResetCrashesFollower,
		findings.AssetOpCrashesFollower, findings.AssetOpHaltsReplica},
		func(e *evaluation, _ *findings.Report) { e.hazards(e.snap) }},
	{"leafnode links to servers not audited", []findings.Code{findings.LeafnodeUnaudited},
		func(e *evaluation, _ *findings.Report) { e.leafnodes(e.snap.Leafnodes, snapshot.AccountNames(e.snap)) }},
	{"asset patterns that select nothing", []findings.Code{findings.AuditIncomplete},
		func(e *evaluation, _ *findings.Report) {
			for _, f := range unmatched(e.snap, e.p) {
				e.add(f)
			}
		}},
	{"requests that failed, and an audit nobody answered", []findings.Code{findings.AuditIncomplete},
		func(e *evaluation, _ *findings.Report) { e.problems() }},
}

// problems reports each request that failed; an audit nobody answered is
// incomplete too.
func (e *evaluation) problems() {
	for _, pr := range e.snap.Problems {
		msg := fmt.Sprintf("%s: %s", pr.Request, pr.Err)
		if pr.Server != "" {
			msg = fmt.Sprintf("%s of %s: %s", pr.Request, pr.Server, pr.Err)
		}
		e.add(findings.Finding{Code: findings.AuditIncomplete, Server: pr.Server, Message: msg})
	}
	// An audit that could not run (Failed) has its reason already: "no
	// server answered" would be false of one a server answered before its
	// user was refused a request.
	if len(e.snap.Servers) == 0 && len(e.snap.Problems) == 0 {
		e.add(findings.Finding{Code: findings.AuditIncomplete, Message: "no server answered the audit"})
	}
}

// newEvaluation is the evaluation of snap under p, with r's server reports
// made and sorted, and what several rules read of the snapshot indexed once.
func newEvaluation(snap *snapshot.Snapshot, p Policy, r *findings.Report) *evaluation {
	e := &evaluation{p: p, byName: make(map[string]*findings.ServerReport, len(snap.Servers))}
	r.Servers = make([]findings.ServerReport, len(snap.Servers))
	for i, s := range snap.Servers {
		r.Servers[i] = findings.ServerReport{Server: s, Verdict: version.CompareToFloor(s.Parsed, p.Floor)}
		e.byName[s.Name] = &r.Servers[i]
	}
	slices.SortFunc(r.Servers, func(a, b findings.ServerReport) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	// Sorting moved the reports: point the index at their new places.
	for i := range r.Servers {
		e.byName[r.Servers[i].Name] = &r.Servers[i]
	}

	e.seen = make(map[string]snapshot.Server, len(snap.Servers))
	for _, s := range snap.Servers {
		e.seen[s.Name] = s
	}
	e.snap = snap
	for _, s := range snap.Servers {
		if snapshot.FlagOn(s, releases.FlagAckFormatV2) {
			if e.ackV2 == nil {
				e.ackV2 = map[string]bool{}
			}
			e.ackV2[s.Name] = true
		}
	}
	for _, pr := range snap.Problems {
		if pr.Server != "" {
			if e.unread == nil {
				e.unread = map[string]bool{}
			}
			e.unread[pr.Server] = true
		}
	}
	e.sourcers = Sourcers(snap)

	return e
}
