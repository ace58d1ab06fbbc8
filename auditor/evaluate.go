package auditor

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Policy is what Evaluate holds a snapshot against.
type Policy struct {
	// Floor is the oldest acceptable version.
	Floor version.Version
	// Accounts, Streams and Consumers are glob patterns (path.Match syntax)
	// that narrow the asset findings; empty means all. An account pattern
	// matches an account's id or its name. Server, cluster, leafnode and
	// completeness findings are never narrowed.
	Accounts  []string
	Streams   []string
	Consumers []string
	// ShardPolicy says when a priority consumer counts as pulled by nobody.
	ShardPolicy
}

// Evaluate holds a snapshot against a policy. It is pure: the same snapshot
// and policy always give the same report.
func Evaluate(snap *snapshot.Snapshot, p Policy) *findings.Report {
	e := evaluation{p: p, byName: make(map[string]*findings.ServerReport, len(snap.Servers))}
	r := &findings.Report{Floor: p.Floor, Snapshot: snap}

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

	e.servers(r.Servers)
	r.Clusters = e.clusters(r.Servers)
	r.ServersExpected = len(snap.Servers) + e.missing(snap)
	for _, m := range snap.Meta {
		e.meta(m)
	}
	e.releases(snap, r.Servers)
	for i := range snap.Streams {
		e.asset(&snap.Streams[i])
	}
	for i := range snap.Consumers {
		e.asset(&snap.Consumers[i])
	}
	e.shards(snap, p.ShardPolicy)
	e.hazards(snap)
	e.leafnodes(snap.Leafnodes, snapshot.AccountNames(snap))
	for _, f := range unmatched(snap, p) {
		e.add(f)
	}
	for _, pr := range snap.Problems {
		msg := fmt.Sprintf("%s: %s", pr.Request, pr.Err)
		if pr.Server != "" {
			msg = fmt.Sprintf("%s of %s: %s", pr.Request, pr.Server, pr.Err)
		}
		e.add(findings.Finding{Code: findings.AuditIncomplete, Server: pr.Server, Message: msg})
	}
	// An audit that could not run (Failed) has its reason already: "no
	// server answered" would be false of one a server answered before its
	// user was refused a request.
	if len(snap.Servers) == 0 && len(snap.Problems) == 0 {
		e.add(findings.Finding{Code: findings.AuditIncomplete, Message: "no server answered the audit"})
	}

	r.Leafnodes = snap.Leafnodes
	r.Findings = sortedFindings(e.findings)
	r.Status = findings.StatusOf(r.Findings)
	return r
}

type evaluation struct {
	p      Policy
	byName map[string]*findings.ServerReport
	// findings are added in chunks that never move: a growing slice of
	// thousands of findings was copied each time it grew, every pointer of
	// them through the write barrier while the collector ran, which it
	// does as the audit's heap grows. The sort places each finding once,
	// into a slice of the exact size.
	findings [][]findings.Finding
	// seen are the servers that answered, by name; sourcers the origin
	// consumers that mirrors and sources RESET by themselves.
	seen     map[string]snapshot.Server
	sourcers map[ConsumerKey][]Sourcer
	// unread are the servers a request of which failed or whose reply
	// could not be used: what they did not report is no evidence.
	unread map[string]bool
	// snap is the snapshot judged.
	snap *snapshot.Snapshot
	// ackV2 are the servers that answered with js_ack_fc_v2 on: read once
	// per server, not once per consumer's peer (a flag's default is
	// looked up in a table).
	ackV2 map[string]bool
	// lastCode and lastSeverity are the code of the finding added last
	// and its severity.
	lastCode     findings.Code
	lastSeverity findings.Severity
}

// findingChunk is how many findings a chunk holds.
const findingChunk = 512

func (e *evaluation) add(f findings.Finding) {
	// Findings come in runs of one code: its registration is looked up
	// once per run, not once per finding.
	if f.Code != e.lastCode || e.lastCode == "" {
		e.lastCode, e.lastSeverity = f.Code, findings.SeverityOf(f.Code)
	}
	f.Severity = e.lastSeverity
	if n := len(e.findings); n == 0 || len(e.findings[n-1]) == findingChunk {
		e.findings = append(e.findings, make([]findings.Finding, 0, findingChunk))
	}
	last := &e.findings[len(e.findings)-1]
	*last = append(*last, f)
}

func (e *evaluation) servers(servers []findings.ServerReport) {
	for _, s := range servers {
		switch s.Verdict {
		case version.VerdictBelow:
			e.add(findings.Finding{Code: findings.ServerBelowFloor, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
				Message: fmt.Sprintf("server %s runs %s, below the floor %s", s.Name, s.Version, e.p.Floor)})
		case version.VerdictUnparseable:
			e.add(findings.Finding{Code: findings.VersionUnparseable, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
				Message: fmt.Sprintf("server %s reports version %q, which is not a version", s.Name, s.Version)})
		}
	}
}

func (e *evaluation) clusters(servers []findings.ServerReport) []findings.ClusterReport {
	var out []findings.ClusterReport
	for _, s := range servers {
		if s.Cluster == "" {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != s.Cluster {
			out = append(out, findings.ClusterReport{Name: s.Cluster})
		}
		c := &out[len(out)-1]
		c.Servers++
		if !slices.Contains(c.Versions, s.Version) {
			c.Versions = append(c.Versions, s.Version)
		}
	}
	setClusterLevels(out, servers)
	for i := range out {
		c := &out[i]
		slices.Sort(c.Versions)
		if len(c.Versions) > 1 {
			e.add(findings.Finding{Code: findings.ClusterMixedVersions, Cluster: c.Name, Versions: c.Versions,
				Message: fmt.Sprintf("cluster %s runs %d versions: %s", c.Name, len(c.Versions), strings.Join(c.Versions, ", "))})
		}
	}
	return out
}

func (e *evaluation) meta(m snapshot.MetaGroup) {
	e.metaUnlisted(m)
	if m.Leader == "" {
		return
	}
	if s, ok := e.byName[m.Leader]; ok && s.Verdict == version.VerdictBelow {
		e.add(findings.Finding{Code: findings.MetaLeaderBelowFloor, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
			Message: fmt.Sprintf("JetStream meta leader %s runs %s, below the floor %s", s.Name, s.Version, e.p.Floor)})
	}
}

// metaUnlisted finds the servers that follow the meta leader, each by its
// own JSZ, yet are not in the peer set the leader lists: placement picks
// from that set alone, so no asset can be placed on them. It judges from
// the leader's own list, which a what-if that moves the leader does not
// change. Without the leader's reply (no list of it in Listed) it cannot judge and says
// nothing more: a leader that did not answer is SERVER_MISSING, a JSZ
// request of it that failed AUDIT_INCOMPLETE.
func (e *evaluation) metaUnlisted(m snapshot.MetaGroup) {
	for _, name := range sortedKeys(m.Follows) {
		set := m.Listed[m.Follows[name]]
		if set == nil || set.Lists(name) {
			continue
		}
		// A server whose JSZ came without its STATSZ has no version here.
		s, who := e.seen[name], name
		if s.Version != "" {
			who += " (" + s.Version + ")"
		}
		msg := fmt.Sprintf("server %s follows JetStream meta leader %s%s, which does not list it as a peer (it lists %s; cluster size %d): no stream or consumer can be placed on %s",
			who, set.Leader, domainSuffix(m.Domain), listedPeers(set), set.Size, name)
		if voters := e.outsiderVoters(set); len(voters) > 0 {
			msg += fmt.Sprintf("; %s %s its vote, %s: once the meta leader is lost, a leader can be elected with it, %s itself included",
				joinSorted(voters), countVerb(len(voters)), outsiderVoteCite, name)
		}
		e.add(findings.Finding{Code: findings.ServerNotMetaPeer, Server: name, Cluster: s.Cluster, Version: s.Version, Peer: set.Leader, Message: msg})
	}
}

// outsiderVoteCite says which members count the vote of a server outside
// their meta group (MetaPeerSet.CountsOutsiderVote).
const outsiderVoteCite = "as a candidate of a release before 2.12.14, or of 2.14.0 to 2.14.3, does, " +
	"or of any release while it knows fewer peers than its cluster size (nats-server #8353)"

// outsiderVoters names, with their versions, the members of a meta peer
// set but its leader (the one whose loss the finding speaks of) that
// answered and count the vote of a server outside the set.
func (e *evaluation) outsiderVoters(set *snapshot.MetaPeerSet) []string {
	var out []string
	for _, n := range sortedKeys(e.seen) {
		if s := e.seen[n]; n != set.Leader && set.Lists(n) && set.CountsOutsiderVote(s.Parsed) {
			out = append(out, n+" ("+s.Version+")")
		}
	}
	return out
}

// countVerb is "count", or "counts" after one name.
func countVerb(names int) string {
	if names == 1 {
		return "counts"
	}
	return "count"
}

// listedPeers writes a meta peer set's members, the leader first.
func listedPeers(set *snapshot.MetaPeerSet) string {
	names := append([]string{set.Leader}, set.Names...)
	return strings.Join(names, ", ")
}

func (e *evaluation) selected(a snapshot.Asset) bool {
	if !accountSelected(e.p.Accounts, a) || !matchAny(e.p.Streams, a.Stream) {
		return false
	}
	return a.Kind != releases.KindConsumer || matchAny(e.p.Consumers, a.Consumer)
}

// asset judges one stream or consumer: who leads it, who follows it, and
// whether every peer can run it.
func (e *evaluation) asset(a *snapshot.Asset) {
	leader, hasLeader := e.byName[a.Leader]
	if hasLeader {
		if a.Kind == releases.KindConsumer {
			leader.ConsumersLed++
		} else {
			leader.StreamsLed++
		}
	}
	if !e.selected(*a) {
		return
	}
	e.assetLeader(a, leader)
	for _, peer := range a.Peers {
		s, ok := e.byName[peer]
		if !ok {
			continue // a peer that did not answer is a SERVER_MISSING finding
		}
		if a.Kind == releases.KindConsumer && peer != a.Leader {
			e.consumerFollower(a, leader, s)
		}
		required, unrecorded := a.LevelNeeded(s.Parsed)
		e.apiLevel(a, s, required, unrecorded)
	}
	e.peerFindings(a)
	e.ackTakeovers(a)
	e.observed(a)
}

// assetFinding is a finding about a: made only for a finding, as most
// assets have none.
func assetFinding(a *snapshot.Asset) findings.Finding {
	return findings.Finding{Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer}
}

// assetLeader judges an asset's leader (nil when it did not answer or there
// is none): below the floor, or missing where a consumer needs one.
func (e *evaluation) assetLeader(a *snapshot.Asset, leader *findings.ServerReport) {
	// Most assets have no finding: their names are made only for one. A
	// finding can be on a large share of the consumers: its message is one
	// concatenation, not a Sprintf with its boxed arguments.
	switch {
	case leader != nil && leader.Verdict == version.VerdictBelow && a.Kind == releases.KindConsumer:
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version = findings.ConsumerLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		if answersReset(leader.Parsed) {
			f.Message = "consumer " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ", below the floor " + e.p.Floor.String()
		} else {
			f.Message = "consumer " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ": RESET (first in 2.14.0) to it goes unanswered"
		}
		e.add(f)
	case leader != nil && leader.Verdict == version.VerdictBelow:
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version = findings.StreamLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		f.Message = "stream " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ", below the floor " + e.p.Floor.String()
		e.add(f)
	case a.Kind == releases.KindConsumer && a.Leader == "" && a.Replicas > 1:
		f := assetFinding(a)
		f.Code = findings.ConsumerNoLeader
		f.Message = "consumer " + a.Label() + " (R" + strconv.Itoa(a.Replicas) + ") has no leader"
		e.add(f)
	}
}

// consumerFollower judges follower s of a consumer led by leader (nil when
// it did not answer or there is none).
func (e *evaluation) consumerFollower(a *snapshot.Asset, leader, s *findings.ServerReport) {
	// A follower is at risk while its leader would accept a RESET; a leader
	// that does not know RESET never replicates one. A leaderless consumer
	// may get a new leader that does.
	if s.Verdict != version.VerdictBelow || (leader != nil && !answersReset(leader.Parsed)) {
		return
	}
	f := assetFinding(a)
	f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.ConsumerReplicaBelowFloor, s.Name, s.Cluster, s.Version, a.Leader
	if answersReset(s.Parsed) {
		f.Message = "consumer " + a.Label() + " has follower " + s.Name + " running " + s.Version + ", below the floor " + e.p.Floor.String()
	} else {
		f.Message = "consumer " + a.Label() + " has follower " + s.Name + " running " + s.Version + ": a RESET answered by a leader at 2.14.0 or later crashes it"
	}
	e.add(f)
}

// apiLevel judges whether peer s supports the asset's required API level
// (required, and unrecorded, from Asset.LevelNeeded).
func (e *evaluation) apiLevel(a *snapshot.Asset, s *findings.ServerReport, required int, unrecorded string) {
	if !levelSpeaks(required, s.APILevel) {
		return
	}
	name := a.Label()
	if unrecorded != "" {
		name += " (" + unrecorded + ", which its _nats.req.level does not record)"
	}
	level := s.APILevel
	f := assetFinding(a)
	f.Code, f.Server, f.Cluster, f.Version = findings.AssetAPILevelUnsupported, s.Name, s.Cluster, s.Version
	f.RequiredLevel, f.ServerLevel = required, &level
	f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: it holds the %s offline",
		a.Kind, name, required, s.Name, level, a.Kind)
	o, ft := worstFeature(a.Features, s.Parsed)
	switch {
	case o == releases.NotCreated && required != snapshot.LevelUnreadable:
		// Nothing in the config tells the peer its level falls short: it
		// tries to create the asset and fails.
		f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s refuses the config as it creates the %s, logs the error, runs on and never runs the %s",
			a.Kind, name, required, s.Name, level, s.Version, a.Kind, a.Kind)
	case required == snapshot.LevelUnreadable:
		f.Message = fmt.Sprintf("%s %s has a _nats.req.level that is not a number: peer %s, like every server from 2.11 on, holds the %s offline",
			a.Kind, name, s.Name, a.Kind)
	case level == 0:
		f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s runs %s, from before API levels: it runs the %s online, ignoring what it does not know, and its copy diverges",
			a.Kind, name, required, s.Name, s.Version, a.Kind)
	default:
		// The level says the peer falls short; the feature table says
		// what its version does about it, where the two differ: 2.11
		// before 2.11.9 has no unsupported state, and a value a decoder
		// rejects is never loaded.
		switch o {
		case releases.IgnoredOnline:
			f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s decodes it leniently and runs the %s online without %s, ignoring what it does not know, and its copy diverges",
				a.Kind, name, required, s.Name, level, s.Version, a.Kind, ft.Title)
		case releases.NotLoaded:
			f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s cannot decode its %s, logs the failure, runs on and never loads the %s",
				a.Kind, name, required, s.Name, level, s.Version, ft.Title, a.Kind)
		}
	}
	if heldOffline(o, required, level) {
		f.Message += stopsItsStream(a, s.Server)
	}
	e.add(f)
}

// heldOffline reports whether a peer of API level level, whose worst
// outcome of the asset's features is o, holds an asset of the required
// level offline as unsupported: its level says so and no feature makes
// it run, fail to load or fail to create the asset instead.
func heldOffline(o releases.Outcome, required, level int) bool {
	switch {
	case o == releases.HeldOffline:
		return true
	case !levelSpeaks(required, level) || level == 0:
		return false
	}
	return o != releases.IgnoredOnline && o != releases.NotLoaded && o != releases.NotCreated
}

// stopsStreamSince is the first release that, holding a consumer offline
// as unsupported, stops the consumer's stream on that server too, "to
// protect the whole stream" (2.11.9 jetstream_cluster.go:4535-4553;
// 2.12.15 :5738-5762; 2.15.3 :7642-7660; absent in 2.11.8).
var stopsStreamSince = version.Must("2.11.9")

// stopsItsStream is what a finding that peer s holds consumer a offline
// adds: s stops the consumer's stream too, from stopsStreamSince on
// (TestSourcingConsumerStopsItsStream); "" for a stream or an older peer.
func stopsItsStream(a *snapshot.Asset, s snapshot.Server) string {
	if a.Kind != releases.KindConsumer || !s.Parsed.AtLeast(stopsStreamSince) {
		return ""
	}
	return "; and, as every server from 2.11.9 on does for a consumer it holds offline, it stops the consumer's stream " +
		snapshot.AccountLabel(a.Account, a.AccountName) + " > " + a.Stream + " with it: " + s.Name + " runs no copy of the stream either"
}

// levelSpeaks reports whether a peer of API level level falls short of an
// asset's required level: an ASSET_API_LEVEL_UNSUPPORTED finding.
func levelSpeaks(required, level int) bool {
	// A 2.10 server knows no API levels and no level metadata: an
	// unreadable level means nothing to it.
	return required > level && (required != snapshot.LevelUnreadable || level > 0)
}

// leafnodes reports the links whose peer was not audited; names are the
// accounts' names where the audit knows them (AccountNames).
func (e *evaluation) leafnodes(links []snapshot.LeafLink, names map[string]string) {
	seen := map[snapshot.LeafLink]bool{}
	for _, l := range links {
		if _, ok := e.byName[l.Peer]; ok {
			continue
		}
		key := snapshot.LeafLink{Server: l.Server, Peer: l.Peer, Account: l.Account}
		if seen[key] {
			continue
		}
		seen[key] = true
		e.add(findings.Finding{Code: findings.LeafnodeUnaudited, Server: l.Server, Cluster: l.Cluster, Peer: l.Peer, Account: l.Account, AccountName: names[l.Account],
			Message: fmt.Sprintf("leafnode peer %s, linked to %s in account %s, was not audited: it does not share the system account, or it is not answering",
				l.Peer, l.Server, snapshot.AccountLabel(l.Account, names[l.Account]))})
	}
}

func codeIndex(c findings.Code) int {
	return slices.IndexFunc(findings.Codes, func(k findings.CodeInfo) bool { return k.Code == c })
}

// sortFindings orders findings worst first, then by code, asset and server,
// keeping the order of equals.
func sortFindings(fs []findings.Finding) {
	copy(fs, sortedFindings([][]findings.Finding{fs}))
}

// sortedFindings returns the findings of the chunks, in order, as
// sortFindings orders them. It sorts small keys, then copies every finding
// once: a stable sort of the findings themselves (large structs,
// thousands of them) moved them over and over. A key holds what decides
// most comparisons without reading the finding: its rank and code, the
// place of its account and stream among the few distinct ones (a stream's
// findings share them), and the first bytes of its consumer's name.
func sortedFindings(chunks [][]findings.Finding) []findings.Finding {
	type key struct {
		order, account, stream uint32
		consumer               uint64
		i                      int
		f                      *findings.Finding
	}
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	if n == 0 {
		return nil
	}
	keys := make([]key, 0, n)
	accounts, streams := ordinals{}, ordinals{}
	var lastCode findings.Code
	code := -1
	for _, c := range chunks {
		for i := range c {
			f := &c[i]
			if code < 0 || f.Code != lastCode {
				lastCode, code = f.Code, codeIndex(f.Code)
			}
			// Worst first; codes in their registered order (an unregistered
			// one, -1, before the rest, as it was).
			order := uint32(3-f.Severity.Rank())<<16 | uint32(code+1)
			keys = append(keys, key{order, accounts.id(f.Account), streams.id(f.Stream), prefix8(f.Consumer), len(keys), f})
		}
	}
	accountRank, streamRank := accounts.ranks(), streams.ranks()
	for j := range keys {
		keys[j].account, keys[j].stream = accountRank[keys[j].account], streamRank[keys[j].stream]
	}
	slices.SortFunc(keys, func(x, y key) int {
		// One test per field until one differs: cmp.Or would compare
		// every field first.
		switch {
		case x.order != y.order:
			return cmp.Compare(x.order, y.order)
		case x.account != y.account:
			return cmp.Compare(x.account, y.account)
		case x.stream != y.stream:
			return cmp.Compare(x.stream, y.stream)
		case x.consumer != y.consumer:
			return cmp.Compare(x.consumer, y.consumer)
		}
		a, b := x.f, y.f
		return cmp.Or(
			cmp.Compare(a.Consumer, b.Consumer),
			cmp.Compare(a.Cluster, b.Cluster),
			cmp.Compare(a.Server, b.Server),
			cmp.Compare(a.Peer, b.Peer),
			cmp.Compare(x.i, y.i), // stable
		)
	})
	out := make([]findings.Finding, len(keys))
	for j, k := range keys {
		out[j] = *k.f
	}
	return out
}

// ordinals numbers distinct strings in the order they are first met, then
// ranks them in sorted order.
type ordinals struct {
	ids    map[string]uint32
	values []string
	last   string
	lastID uint32
}

// id is the number of s; consecutive findings mostly share the string.
func (o *ordinals) id(s string) uint32 {
	if o.values != nil && s == o.last {
		return o.lastID
	}
	if o.ids == nil {
		o.ids = map[string]uint32{}
	}
	id, ok := o.ids[s]
	if !ok {
		id = uint32(len(o.values))
		o.ids[s] = id
		o.values = append(o.values, s)
	}
	o.last, o.lastID = s, id
	return id
}

// ranks maps each id to the place of its string among all, sorted.
func (o *ordinals) ranks() []uint32 {
	byValue := make([]uint32, len(o.values))
	for i := range byValue {
		byValue[i] = uint32(i)
	}
	slices.SortFunc(byValue, func(a, b uint32) int { return cmp.Compare(o.values[a], o.values[b]) })
	rank := make([]uint32, len(o.values))
	for r, id := range byValue {
		rank[id] = uint32(r)
	}
	return rank
}

// prefix8 is the first eight bytes of s as a big-endian number, zero
// padded: numbers that differ order as their strings do; equal ones leave
// the strings to compare.
func prefix8(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}

func joinSorted(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return strings.Join(slices.Compact(ss), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
