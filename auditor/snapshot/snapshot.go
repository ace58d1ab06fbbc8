package snapshot

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Snapshot is everything one audit saw, in plain data: no NATS connection and
// no verdicts. Evaluate turns it into findings.
type Snapshot struct {
	Started  time.Time
	Duration time.Duration
	// Requests counts the requests published during the audit.
	Requests int

	Servers   []Server
	Streams   []Asset
	Consumers []Asset
	Meta      []MetaGroup
	Leafnodes []LeafLink

	// ExpectedCount is the number of servers the audit expected to answer:
	// the largest of Options.Expect and the active server counts servers
	// reported.
	ExpectedCount int
	// ExpectedNames maps the name of every server some server named (as a
	// route, a JetStream meta peer, or the leader or a peer of a stream or
	// consumer it hosts) to the servers that named it.
	ExpectedNames map[string][]string
	// ExpectedClusters maps the name of every cluster some server named as a
	// gateway to the servers that named it.
	ExpectedClusters map[string][]string

	// Problems are requests that failed or replies that could not be used.
	Problems []Problem

	// Counts are the JetStream counts each JetStream server gave the
	// census (JSZ without accounts), by server id: what a later check
	// holds them against to tell whether anything was created, deleted or
	// moved since (collect.Drift).
	Counts map[string]JetStreamCounts

	// Pulls is what the audit heard of who pulls the consumers; nil when
	// it did not listen.
	Pulls *PullSight

	// LastSeen holds, by name, servers that earlier audits saw (serve's
	// memory, cmd/nats-version-auditor/internal/exporter). Collect leaves it empty; Evaluate uses it to say what a
	// missing server last ran.
	LastSeen map[string]Server
}

// Server is one server that answered the audit.
type Server struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Host    string `json:"host,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Domain  string `json:"domain,omitempty"`
	// Version is the version exactly as the server reported it: documents,
	// messages and the server_version label, which joins other exporters'
	// series, show it so.
	Version string `json:"version"`
	// Parsed is Version read once, where the report entered (SetVersion):
	// what the audit compares. It is the zero Version when the report is
	// no version.
	Parsed    version.Version `json:"-"`
	Tags      []string        `json:"tags,omitempty"`
	JetStream bool            `json:"jetstream"`
	// APILevel is the highest JetStream API level the server supports
	// (0 when it does not report one).
	APILevel int `json:"api_level"`
	// Uptime is how long the server had been running when it answered.
	Uptime time.Duration `json:"-"`
	// ActiveServers is how many servers this server counts, itself included.
	ActiveServers int `json:"-"`
	// FeatureFlags are the server's feature flags as it reports them
	// (FeatureFlagsSince on): its version's defaults merged with its
	// config. Nil for a server that reports none.
	FeatureFlags map[string]bool `json:"feature_flags,omitempty"`
}

// JetStreamCounts are the streams and consumers a JetStream server hosts,
// its replicas included, as its JSZ counts them.
type JetStreamCounts struct {
	Streams   int `json:"streams"`
	Consumers int `json:"consumers"`
}

// SetVersion records the version a server reported: the text as it came,
// and the Version it parses as (zero when it is none).
func (s *Server) SetVersion(reported string) {
	s.Version = reported
	s.Parsed, _ = version.ParseVersion(reported)
}

// Asset is a stream or consumer, merged from the reports of every server
// that hosts it. Account is the account's id as the servers report it: its
// name in plain mode, its public key (A...) in operator (JWT) mode.
type Asset struct {
	Kind     releases.AssetKind
	Domain   string
	Account  string
	Stream   string
	Consumer string // empty for streams
	// AccountName is the account's name where it is not Account: in
	// operator mode, the name in the account's JWT, which need not be
	// unique. Empty in plain mode.
	AccountName string
	// Leader is the server name of the RAFT leader, empty when there is none.
	Leader string
	// Peers are the names of every server in the asset's RAFT group,
	// leader included, sorted.
	Peers []string
	// Replicas is the configured replica count.
	Replicas int
	// RequiredLevel is the config's _nats.req.level: the lowest JetStream
	// API level that can run the asset (LevelUnreadable when it is not a
	// number).
	RequiredLevel int
	// Features are the features its config uses (see Features), as any
	// reporting server's copy of the config shows them.
	Features releases.FeatureSet
	// Ops are the replicated operations (see ReplicatedOps) a leader of
	// the asset can propose, as any reporting server's copy of the config
	// admits them.
	Ops releases.OpSet
	// DurableSources are the durable consumers of other streams a stream
	// mirrors or sources through (durable sourcing, 2.14): a 2.14 server
	// leading the stream sends $JS.API.CONSUMER.RESET to each by itself.
	DurableSources []releases.DurableSource
	// AckNone: a consumer with ack_policy none, which has no acks to lose.
	AckNone bool
	// Pull is who pulls a consumer with a priority policy, as its leader
	// reports it (see PullState); nil for a stream and for any other
	// consumer.
	Pull *PullState
	// Observed is what the servers showed of the asset that its config
	// does not tell: a peer its leader lists that did not report it, a
	// peer its leader does not count as current. Nil where there is
	// nothing of that, or no report of its leader's own.
	Observed *Observation
}

// Observation is what the replies showed of one asset's group, beside
// what its config says (see observed.go).
type Observation struct {
	// Created is when the asset was created, by its leader's report.
	Created time.Time
	// Absent are the peers its leader lists that did not report the
	// asset, sorted: each either runs it and its report was not read, or
	// does not run it.
	Absent []string
	// Behind are the peers its leader lists and does not count as
	// current.
	Behind []ReplicaLag
	// Listed is how many peers its leader lists, itself included: the
	// group the counts are of (Asset.Peers also holds what a follower's
	// stale view names).
	Listed int
}

// ReplicaLag is a peer that an asset's leader does not count as current,
// and how long since that leader last heard from it (0: it never has,
// since it became leader).
type ReplicaLag struct {
	Server string
	Active time.Duration
}

// LevelUnreadable is the RequiredLevel of an asset whose _nats.req.level is
// not a number: no server from 2.11 on supports it.
const LevelUnreadable = math.MaxInt32

// MetaGroup is the JetStream meta group of one domain.
type MetaGroup struct {
	Domain  string
	Cluster string
	Leader  string
	Peers   []string
	// Size is the group's cluster size as its members report it: every
	// peer, answering or not, until it is removed from the group.
	Size int
	// Listed holds, by leader, the peer set each meta leader lists in its
	// own JSZ: the only list placement reads. A leader whose own reply is
	// not in the snapshot has none. It is keyed by leader because one
	// domain can hold more than one meta group (a leafnode's own JetStream
	// beside its hub's, both in the empty domain).
	Listed map[string]*MetaPeerSet
	// Follows maps each server of the domain whose JSZ names a meta
	// leader to the leader it names.
	Follows map[string]string
}

// MetaPeerSet is a meta leader's own list of its group's peers: placement
// picks peers for an asset from it alone (selectPeerGroup reads the meta
// RAFT node's peers, jetstream_cluster.go in 2.12.15 to 2.15.3), and the
// leader's meta_cluster.replicas are those peers but itself
// (raftNodeToClusterInfo and clusterInfo). Before 2.15.0 only the leader
// lists them at all; from 2.15.0 every member lists its own view, of which
// only the leader's is placement's.
type MetaPeerSet struct {
	Leader string
	// Names are the replicas' names; a replica the leader cannot name yet
	// is "Server name unknown at this time (peerID: <id>)".
	Names []string
	// IDs are the replicas' RAFT peer ids where the reply has them.
	IDs []string
	// Size is the cluster size the leader reports.
	Size int
}

// Members are the set's servers, the leader first, and the group's
// cluster size. A replica the leader cannot name yet is found among snap's
// servers by its RAFT peer id, or stays a peer of no name ("").
func (s *MetaPeerSet) Members(snap *Snapshot) ([]string, int) {
	out := []string{s.Leader}
	for _, n := range s.Names {
		if id, ok := UnknownPeerID(n); ok {
			n = ""
			for _, srv := range snap.Servers {
				if PeerID(srv.Name) == id {
					n = srv.Name
				}
			}
		}
		if n == "" || !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, max(s.Size, len(out))
}

// CountsOutsiderVote reports whether a member of the set that runs version
// v, as a candidate, counts the vote of a server outside the set: a release
// before nats-server #8353 counts any server's vote (MemberVotesOnly), and
// one after it still does while it knows fewer peers than its cluster size
// (shouldCountVoteFromPeer: 2.12.14 raft.go:3690-3699, 2.15.3
// raft.go:4363-4372). The leader's list stands for each member's.
func (s *MetaPeerSet) CountsOutsiderVote(v version.Version) bool {
	return !releases.MemberVotesOnly(v) || 1+len(s.Names) < s.Size
}

// Groups are the peer sets of the distinct meta groups m holds, by leader:
// one, or two where a leafnode's own JetStream shares its hub's domain. A
// set whose leader another set lists is the same group, answered from
// either side of an election, and only m.Leader's is kept of those. Nil
// without any leader's own list.
func (m MetaGroup) Groups() []*MetaPeerSet {
	var out []*MetaPeerSet
	leaders := slices.Sorted(maps.Keys(m.Listed))
	for _, leader := range leaders {
		if leader != m.Leader && slices.ContainsFunc(leaders, func(o string) bool {
			return o != leader && m.Listed[o].Lists(leader)
		}) {
			continue
		}
		out = append(out, m.Listed[leader])
	}
	return out
}

// MoveLeader makes leader, a member, lead the group in a what-if: it lists
// the peers the old leader did (membership is the group's replicated
// state), and the servers that followed the old leader follow it. The maps
// are copied: the snapshot the what-if started from keeps its own.
func (m *MetaGroup) MoveLeader(leader string) {
	old := m.Leader
	if set := m.Listed[old]; set != nil {
		m.Listed = maps.Clone(m.Listed)
		delete(m.Listed, old)
		m.Listed[leader] = set.ledBy(leader)
	}
	m.Follows = maps.Clone(m.Follows)
	for n, l := range m.Follows {
		if l == old {
			m.Follows[n] = leader
		}
	}
	m.Leader = leader
}

// ledBy is the same peer set as listed by another of its members.
func (s *MetaPeerSet) ledBy(leader string) *MetaPeerSet {
	out := &MetaPeerSet{Leader: leader, Size: s.Size}
	for _, n := range append([]string{s.Leader}, s.Names...) {
		if n != leader {
			out.Names = append(out.Names, n)
		}
	}
	for _, id := range append([]string{PeerID(s.Leader)}, s.IDs...) {
		if id != PeerID(leader) {
			out.IDs = append(out.IDs, id)
		}
	}
	return out
}

// Lists reports whether server name is in the set: the leader, or a replica
// by its name or by its RAFT peer id.
func (s *MetaPeerSet) Lists(name string) bool {
	if name == s.Leader || slices.Contains(s.Names, name) {
		return true
	}
	id := PeerID(name)
	if slices.Contains(s.IDs, id) {
		return true
	}
	for _, n := range s.Names {
		if unknown, ok := UnknownPeerID(n); ok && unknown == id {
			return true
		}
	}
	return false
}

// LeafLink is one leafnode connection as a server's LEAFZ lists it.
type LeafLink struct {
	// Server is the name of the server that reported the link.
	Server  string
	Cluster string
	// Peer is the server name of the other end.
	Peer    string
	Account string
}

// Problem is a request that failed or a reply the audit could not use.
type Problem struct {
	Server  string
	Request string
	Err     string
}

// FlagOn reports whether the named flag is on in server s: as the server
// reported it in STATSZ, else its version's default. A flag a server's
// version does not know is off.
func FlagOn(s Server, name string) bool {
	if on, ok := s.FeatureFlags[name]; ok {
		return on
	}
	f, ok := releases.FlagByName(name)
	if !ok {
		return false
	}
	d, known := f.DefaultBy(s.Parsed)
	return known && d.On
}

// ConfiguredFlags are the flags server s reports with a value other than
// its version's default: those its config sets. A flag set to its default
// cannot be told from one left alone, so a config can hold more than this.
// A what-if keeps these across a version change, and a server before
// FeatureFlagsSince refuses to start with any of them.
func ConfiguredFlags(s Server) map[string]bool {
	var out map[string]bool
	for name, on := range s.FeatureFlags {
		f, ok := releases.FlagByName(name)
		if !ok {
			continue // reported, so known to the server: a release after the table
		}
		if d, known := f.DefaultBy(s.Parsed); !known || d.On != on {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = on
		}
	}
	return out
}

// FlagsAt are the feature flags server s would report at release to: the
// values its config sets (ConfiguredFlags), where that release knows the
// flag, and the release's defaults for the rest; none before
// FeatureFlagsSince, which has no flags. A what-if runs a server on them.
func FlagsAt(s Server, to version.Version) map[string]bool {
	if !to.AtLeast(releases.FeatureFlagsSince) {
		return nil
	}
	configured := ConfiguredFlags(s)
	out := map[string]bool{}
	for _, f := range releases.FeatureFlags {
		d, known := f.DefaultBy(to)
		if !known {
			continue
		}
		on, set := configured[f.Name]
		if !set {
			on = d.On
		}
		out[f.Name] = on
	}
	return out
}

// LevelNeeded is the level the asset needs of a server of version v: its
// _nats.req.level, or that of a feature it uses which the level does not
// record (durable sourcing, 2.14.0 jetstream_versioning.go:46-90), then
// named. A feature v's release runs although its level is lower (2.10
// runs {{left()}} in a stream's own transform, which 2.11.0 to 2.14.6
// refuse) does not count; the zero Version counts every feature.
func (a Asset) LevelNeeded(v version.Version) (level int, unrecorded string) {
	level = a.RequiredLevel
	if level != LevelUnreadable && a.Features != 0 {
		for _, ft := range a.Features.Features() {
			if ft.Level > level && (v.IsZero() || ft.HandlingBy(v).Asset != releases.Supported) {
				level, unrecorded = ft.Level, ft.Title
			}
		}
	}
	return level, unrecorded
}

// Label is how findings name the asset: an account with a name of its own
// (operator mode) by both, as two accounts may share a name.
func (a Asset) Label() string {
	n := AccountLabel(a.Account, a.AccountName) + " > " + a.Stream
	if a.Consumer != "" {
		n += " > " + a.Consumer
	}
	return n
}

// Hosted reports whether server name runs the asset, by the replies: it is
// a peer and not one of those that did not report it.
func (a *Asset) Hosted(name string) bool {
	if a.Observed != nil {
		for _, n := range a.Observed.Absent {
			if n == name {
				return false
			}
		}
	}
	for _, p := range a.Peers {
		if p == name {
			return true
		}
	}
	return false
}

// Without is the observation as a what-if holds it once the changed
// servers restart on other releases: what they showed before is no
// evidence of what they will do, which the tables judge. Nil when nothing
// is left.
func (o *Observation) Without(changed map[string]bool) *Observation {
	if o == nil {
		return nil
	}
	out := &Observation{Created: o.Created}
	for _, n := range o.Absent {
		if !changed[n] {
			out.Absent = append(out.Absent, n)
		}
	}
	for _, b := range o.Behind {
		if !changed[b.Server] {
			out.Behind = append(out.Behind, b)
		}
	}
	if len(out.Absent) == len(o.Absent) && len(out.Behind) == len(o.Behind) {
		return o
	}
	if len(out.Absent) == 0 && len(out.Behind) == 0 {
		return nil
	}
	return out
}
