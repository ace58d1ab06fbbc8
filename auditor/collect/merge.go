package collect

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// merger folds the JSZ pages of every server into one view of the assets and
// meta groups. Each replica reports an asset from where it stands; the
// merged asset has the leader's own word on who leads, every peer any
// reporter names, and the largest replica count. It is not safe for
// concurrent use: the collection calls it under its lock.
type merger struct {
	byStream     map[streamKey]*streamAssets
	streamList   []*streamAssets
	consumerList []*mergedConsumer
	meta         map[string]*snapshot.MetaGroup // by JetStream domain
	// consumerSlab and peers are slabs the merged consumers and the peer
	// lists are cut from: an allocation per chunk, not two per asset.
	consumerSlab []mergedConsumer
	peers        []string
	// peerSets are the snapshot's peer lists, one of each set: most
	// assets share their peers with thousands of others, and 100,000
	// lists of their own were a tenth of the snapshot's memory. setKey is
	// the scratch the sets are looked up by.
	peerSets map[string][]string
	setKey   []byte
	lastSet  []string
}

func newMerger() *merger {
	return &merger{byStream: map[streamKey]*streamAssets{}, meta: map[string]*snapshot.MetaGroup{}, peerSets: map[string][]string{}}
}

// streamKey names a stream by its account's id: two accounts may share a name.
type streamKey struct {
	domain, account, stream string
}

// streamAssets is a stream with its consumers: consumers are found through
// their stream, as hashing one name per consumer, not four, is most of what
// merging 30,000 of them costs.
type streamAssets struct {
	// stream holds the stream's names and durable sources; the rest of its
	// Asset is filled from state when the snapshot is listed.
	stream    snapshot.Asset
	state     replicaState
	consumers map[string]*mergedConsumer
}

// mergedConsumer is a consumer being merged: its own name and its
// replicas' state, and its stream for the other names: a fraction of an
// Asset, as one per consumer is alive until the snapshot's Assets are made
// from them, and then beside them.
type mergedConsumer struct {
	stream *streamAssets
	name   string
	state  replicaState
	// pull is the leader's record of who pulls it, for a consumer with a
	// priority policy.
	pull *snapshot.PullState
}

// replicaState is what the replicas' reports of one asset add up to.
type replicaState struct {
	leader   string
	peers    []string
	replicas int
	level    int
	features releases.FeatureSet
	ops      releases.OpSet
	ackNone  bool
	// leaderSelf is set once the leader itself reported the asset: its word
	// on who leads wins over a follower's possibly stale view.
	leaderSelf bool
	// hosts and listed mark peers by their index in peers: the servers
	// that reported the asset (they run it), and those its leader's own
	// report lists as its group, itself included. Masks, not lists: a
	// list per asset was an allocation per asset, and a group has a
	// handful of peers.
	hosts, listed uint32
	// created is when the asset was created, by its leader's report, in
	// Unix nanoseconds: a time.Time is three times the size, in every
	// asset's state.
	created int64
	// behind is the leader's view of the peers it lists as not current:
	// none for most assets, so no room is kept for them.
	behind []snapshot.ReplicaLag
}

// maxMasked is how many peers the masks of a replicaState can mark; a
// peer past it is neither host nor listed, and so never judged missing.
const maxMasked = 32

// mark sets name's bit in mask, where name is a peer.
func (a *replicaState) mark(mask *uint32, name string) {
	if i := slices.Index(a.peers, name); i >= 0 && i < maxMasked {
		*mask |= 1 << i
	}
}

// add merges one JSZ page that reporter, of JetStream domain domain, sent,
// and returns the names of the servers it names: meta peers, and the
// leader and peers of every asset. Each is expected to answer: a server that
// left its routes (a graceful shutdown does so at once) stays in the RAFT
// groups it was in.
func (m *merger) add(reporter, domain string, js *jszData) []string {
	named := nameSet{}
	if mc := js.Meta; mc != nil {
		m.addMeta(reporter, domain, mc, &named)
	}
	for _, acc := range js.AccountDetails {
		for i := range acc.Streams {
			sd := &acc.Streams[i]
			sa := m.stream(streamKey{domain, acc.id(), sd.Name}, acc.name(), len(sd.Consumers))
			m.merge(&sa.state, reporter, sd.Created, sd.Cluster, &sd.Config.configSummary)
			if sa.stream.DurableSources == nil && sa.state.features.Has("durable_sourcing") {
				sa.stream.DurableSources = sd.Config.DurableSources
			}
			named.addCluster(sd.Cluster)
			for j := range sd.Consumers {
				ci := &sd.Consumers[j]
				c := m.consumer(sa, ci.Name)
				m.merge(&c.state, reporter, ci.Created, ci.Cluster, &ci.Config.configSummary)
				if p := ci.Config.pull; p != nil {
					c.keepPull(reporter, ci.Cluster, p)
				}
				named.addCluster(ci.Cluster)
			}
		}
	}
	names := slices.DeleteFunc(named.names, func(n string) bool { return n == reporter })
	slices.Sort(names)
	return names
}

// nameSet collects the server names a page mentions. A page names a few
// servers tens of thousands of times over: a short list, with the last
// name added checked first, beats hashing every mention.
type nameSet struct {
	names []string
	last  string
}

func (s *nameSet) add(name string) {
	if name == "" || name == s.last {
		return
	}
	s.last = name
	if !slices.Contains(s.names, name) {
		s.names = append(s.names, name)
	}
}

// addCluster adds the leader and replicas a RAFT group's report names.
func (s *nameSet) addCluster(ci *clusterInfo) {
	if ci == nil {
		return
	}
	s.add(ci.Leader)
	for _, p := range ci.Replicas {
		if p != nil {
			s.add(p.Name)
		}
	}
}

func (m *merger) addMeta(reporter, domain string, mc *metaClusterInfo, named *nameSet) {
	g := m.meta[domain]
	if g == nil {
		g = &snapshot.MetaGroup{Domain: domain}
		m.meta[domain] = g
	}
	g.Cluster = mc.Name
	// The largest size any member reports: a server that stopped, even
	// gracefully, stays a peer until it is removed from the group.
	g.Size = max(g.Size, mc.Size)
	if mc.Leader != "" && (g.Leader == "" || reporter == mc.Leader) {
		g.Leader = mc.Leader
	}
	if mc.Leader != "" {
		if g.Follows == nil {
			g.Follows = map[string]string{}
		}
		g.Follows[reporter] = mc.Leader
	}
	if reporter == mc.Leader {
		// The leader's own list, kept whole from its last page: each page
		// of a JSZ reply carries meta_cluster again.
		set := &snapshot.MetaPeerSet{Leader: reporter, Size: mc.Size}
		for _, p := range mc.Replicas {
			if p != nil {
				set.Names = append(set.Names, p.Name)
				if p.Peer != "" {
					set.IDs = append(set.IDs, p.Peer)
				}
			}
		}
		if g.Listed == nil {
			g.Listed = map[string]*snapshot.MetaPeerSet{}
		}
		g.Listed[reporter] = set
	}
	peers := []string{reporter, mc.Leader}
	for _, p := range mc.Replicas {
		if p != nil {
			peers = append(peers, p.Name)
		}
	}
	for _, p := range peers {
		if p != "" {
			if !slices.Contains(g.Peers, p) {
				g.Peers = append(g.Peers, p)
			}
			named.add(p)
		}
	}
}

// stream finds or adds a stream; consumers is how many consumers the
// first report of it lists.
func (m *merger) stream(key streamKey, accountName string, consumers int) *streamAssets {
	sa := m.byStream[key]
	if sa == nil {
		sa = &streamAssets{stream: snapshot.Asset{Kind: releases.KindStream, Domain: key.domain, Account: key.account,
			AccountName: accountName, Stream: key.stream},
			consumers: make(map[string]*mergedConsumer, consumers)}
		m.byStream[key] = sa
		m.streamList = append(m.streamList, sa)
	}
	return sa
}

func (m *merger) consumer(sa *streamAssets, name string) *mergedConsumer {
	c := sa.consumers[name]
	if c == nil {
		if len(m.consumerSlab) == 0 {
			m.consumerSlab = make([]mergedConsumer, 256)
		}
		c, m.consumerSlab = &m.consumerSlab[0], m.consumerSlab[1:]
		c.stream, c.name = sa, name
		sa.consumers[name] = c
		m.consumerList = append(m.consumerList, c)
	}
	return c
}

// merge adds one server's report of an asset: its RAFT group as the
// reporter sees it, and what its copy of the config says. Every copy is
// the same config; a union of the features loses nothing if one lags.
func (m *merger) merge(a *replicaState, reporter string, created time.Time, ci *clusterInfo, cfg *configSummary) {
	if a.peers == nil {
		// Room for every peer this report names: most assets have no
		// other reporter, and the rest as many peers as this one lists.
		n := 1
		if ci != nil {
			n += len(ci.Replicas)
		}
		if len(m.peers) < n {
			m.peers = make([]string, max(n, 1024))
		}
		a.peers, m.peers = m.peers[:0:n], m.peers[n:]
	}
	a.addPeer(reporter)
	a.mark(&a.hosts, reporter)
	a.replicas = max(a.replicas, cfg.Replicas)
	a.level = max(a.level, cfg.RequiredLevel)
	a.features |= cfg.Features
	a.ops |= cfg.Ops
	a.ackNone = a.ackNone || cfg.AckNone
	if ci == nil {
		// A server outside any cluster hosts its assets alone and leads them.
		a.leader, a.leaderSelf = reporter, true
		return
	}
	for _, p := range ci.Replicas {
		if p != nil {
			a.addPeer(p.Name)
		}
	}
	switch {
	case ci.Leader == "":
	case ci.Leader == reporter:
		a.leader, a.leaderSelf = reporter, true
		a.leaderView(reporter, created, ci)
	case !a.leaderSelf:
		a.leader = ci.Leader
	}
}

// leaderView keeps what the asset's leader reports of its group: who it
// lists, when the asset was created, and the peers it does not count as
// current. A later page of the same leader replaces an earlier one.
func (a *replicaState) leaderView(leader string, created time.Time, ci *clusterInfo) {
	a.listed, a.created, a.behind = 0, 0, nil
	if !created.IsZero() {
		a.created = created.UnixNano()
	}
	a.mark(&a.listed, leader)
	for _, p := range ci.Replicas {
		if p == nil {
			continue
		}
		a.mark(&a.listed, p.Name)
		if !p.Current && p.Name != "" {
			a.behind = append(a.behind, snapshot.ReplicaLag{Server: p.Name, Active: time.Duration(p.Active)})
		}
	}
}

// keepPull keeps a priority consumer's pull state from the record of its
// leader, the only one that holds its queue of pulls and its pin; of a
// follower's record, the config only, until the leader's comes.
func (c *mergedConsumer) keepPull(reporter string, ci *clusterInfo, p *snapshot.PullState) {
	if ci == nil || ci.Leader == reporter {
		p.FromLeader = true
		c.pull = p
		return
	}
	if c.pull == nil {
		p.ConfigOnly()
		c.pull = p
	}
}

// addPeer adds a peer name once; a RAFT group has a handful of peers, so a
// slice beats a map.
func (a *replicaState) addPeer(name string) {
	if name != "" && !slices.Contains(a.peers, name) {
		a.peers = append(a.peers, name)
	}
}

// fill copies the merged state a into the asset out. Its peers are sorted
// in place, and out shares one list with every asset of the same peers
// (nothing changes an Asset's Peers in place; who needs other peers clones
// them).
func (m *merger) fill(a *replicaState, out *snapshot.Asset) {
	out.Observed = a.observed()
	slices.Sort(a.peers)
	out.Leader, out.Peers = a.leader, m.peerSet(a.peers)
	out.Replicas = max(a.replicas, len(a.peers))
	out.RequiredLevel, out.Features, out.Ops, out.AckNone = a.level, a.features, a.ops, a.ackNone
}

// observed is what the servers showed of the asset beside its config: nil
// where its leader's report lists no peer that did not report the asset
// and none that is behind, as for most assets; and nil without the
// leader's own report, the only one whose list and view count. Called
// before fill sorts the peers, which the masks index.
func (a *replicaState) observed() *snapshot.Observation {
	if !a.leaderSelf || a.listed == 0 {
		return nil
	}
	var absent []string
	for i, p := range a.peers[:min(len(a.peers), maxMasked)] {
		if a.listed&(1<<i) != 0 && a.hosts&(1<<i) == 0 {
			absent = append(absent, p)
		}
	}
	if len(absent) == 0 && len(a.behind) == 0 {
		return nil
	}
	slices.Sort(absent)
	o := &snapshot.Observation{Absent: absent, Behind: a.behind, Listed: bits.OnesCount32(a.listed)}
	if a.created != 0 {
		o.Created = time.Unix(0, a.created).UTC()
	}
	return o
}

// peerSet returns the one list of the sorted peers, made the first time
// they are met.
func (m *merger) peerSet(peers []string) []string {
	if len(peers) == 0 {
		return peers
	}
	// A stream's consumers mostly have its peers: the last set first.
	if slices.Equal(peers, m.lastSet) {
		return m.lastSet
	}
	m.lastSet = m.lookupSet(peers)
	return m.lastSet
}

func (m *merger) lookupSet(peers []string) []string {
	// Each name behind its length: no two lists make the same key.
	key := m.setKey[:0]
	for _, p := range peers {
		key = binary.AppendUvarint(key, uint64(len(p)))
		key = append(key, p...)
	}
	m.setKey = key
	if set, ok := m.peerSets[string(key)]; ok {
		return set
	}
	// Capped at its length: an append to one asset's peers copies them.
	set := slices.Clone(peers)
	set = set[:len(set):len(set)]
	m.peerSets[string(key)] = set
	return set
}

// streams and consumers list the merged assets in the order they were
// first reported. Nothing downstream depends on their order (Evaluate
// sorts its findings), and sorting 30,000 of them cost more than the rest
// of the merge.
func (m *merger) streams() []snapshot.Asset {
	out := make([]snapshot.Asset, len(m.streamList))
	for i, sa := range m.streamList {
		out[i] = sa.stream
		m.fill(&sa.state, &out[i])
	}
	return out
}

func (m *merger) consumers() []snapshot.Asset {
	out := make([]snapshot.Asset, len(m.consumerList))
	for i, c := range m.consumerList {
		s := &c.stream.stream
		out[i] = snapshot.Asset{Kind: releases.KindConsumer, Domain: s.Domain, Account: s.Account, AccountName: s.AccountName,
			Stream: s.Stream, Consumer: c.name, Pull: c.pull}
		m.fill(&c.state, &out[i])
	}
	return out
}

// metaGroups lists the meta groups by domain.
func (m *merger) metaGroups() []snapshot.MetaGroup {
	var out []snapshot.MetaGroup
	for _, d := range slices.Sorted(maps.Keys(m.meta)) {
		g := *m.meta[d]
		g.Peers = slices.Sorted(slices.Values(g.Peers))
		out = append(out, g)
	}
	return out
}

// JSZReply is one server's reply to a JSZ request, as it came: Body is the
// whole reply, {"data": ...} or {"error": ...}.
type JSZReply struct {
	// Server and Domain are the replying server's name and JetStream domain.
	Server, Domain string
	Body           []byte
}

// FromJSZ folds JSZ replies, in the order given, into the streams,
// consumers and meta groups of a snapshot, as Collect folds the replies it
// reads. The rules' tests judge recorded pages through it. The snapshot
// holds no servers; a reply that does not decode is an error naming its
// server.
func FromJSZ(replies ...JSZReply) (*snapshot.Snapshot, error) {
	m := newMerger()
	for _, r := range replies {
		js, err := parseJSZ(r.Body)
		if err != nil {
			return nil, fmt.Errorf("JSZ of %s: %w", r.Server, err)
		}
		m.add(r.Server, r.Domain, js)
	}
	return &snapshot.Snapshot{Streams: m.streams(), Consumers: m.consumers(), Meta: m.metaGroups()}, nil
}
