package auditor

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Policy is what Evaluate holds a snapshot against.
type Policy struct {
	// Floor is the oldest acceptable version, normalised by ParseVersion.
	Floor string
	// Accounts, Streams and Consumers are glob patterns (path.Match syntax)
	// that narrow the asset findings; empty means all. Server, cluster,
	// leafnode and completeness findings are never narrowed.
	Accounts  []string
	Streams   []string
	Consumers []string
}

// Report is the outcome of Evaluate.
type Report struct {
	Status Severity
	// Floor is the policy's floor as operators write it ("2.14.0").
	Floor string
	// ServersExpected is how many servers the audit expected: at least those
	// that answered plus every missing one it could name.
	ServersExpected int
	Findings        []Finding
	Servers         []ServerReport
	Clusters        []ClusterReport
	Leafnodes       []LeafLink
	Snapshot        *Snapshot
}

// ServerReport is a server with its verdict and what it leads.
type ServerReport struct {
	Server
	Verdict      Verdict `json:"verdict"`
	StreamsLed   int     `json:"streams_led"`
	ConsumersLed int     `json:"consumers_led"`
}

// ClusterReport is one cluster and the versions its servers run.
type ClusterReport struct {
	Name     string   `json:"name"`
	Servers  int      `json:"servers"`
	Versions []string `json:"versions"`
}

// Evaluate holds a snapshot against a policy. It is pure: the same snapshot
// and policy always give the same report.
func Evaluate(snap *Snapshot, p Policy) *Report {
	e := evaluation{p: p, byName: make(map[string]*ServerReport, len(snap.Servers))}
	r := &Report{Floor: Display(p.Floor), Snapshot: snap}

	r.Servers = make([]ServerReport, len(snap.Servers))
	for i, s := range snap.Servers {
		r.Servers[i] = ServerReport{Server: s, Verdict: CompareToFloor(s.Version, p.Floor)}
		e.byName[s.Name] = &r.Servers[i]
	}
	slices.SortFunc(r.Servers, func(a, b ServerReport) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	// Sorting moved the reports: point the index at their new places.
	for i := range r.Servers {
		e.byName[r.Servers[i].Name] = &r.Servers[i]
	}

	e.servers(r.Servers)
	r.Clusters = e.clusters(r.Servers)
	r.ServersExpected = len(snap.Servers) + e.missing(snap)
	for _, m := range snap.Meta {
		e.meta(m)
	}
	for _, a := range snap.Streams {
		e.asset(a)
	}
	for _, a := range snap.Consumers {
		e.asset(a)
	}
	e.leafnodes(snap.Leafnodes)
	for _, pr := range snap.Problems {
		e.add(Finding{Code: AuditIncomplete, Server: pr.Server,
			Message: fmt.Sprintf("%s: %s", pr.Request, pr.Err)})
	}
	if len(snap.Servers) == 0 {
		e.add(Finding{Code: AuditIncomplete, Message: "no server answered the audit"})
	}

	r.Leafnodes = snap.Leafnodes
	r.Findings = e.findings
	sortFindings(r.Findings)
	for _, f := range r.Findings {
		if f.Severity.Worse(r.Status) {
			r.Status = f.Severity
		}
	}
	return r
}

type evaluation struct {
	p        Policy
	byName   map[string]*ServerReport
	findings []Finding
}

func (e *evaluation) floor() string { return Display(e.p.Floor) }

func (e *evaluation) add(f Finding) {
	f.Severity = SeverityOf(f.Code)
	e.findings = append(e.findings, f)
}

func (e *evaluation) servers(servers []ServerReport) {
	for _, s := range servers {
		switch s.Verdict {
		case VerdictBelow:
			e.add(Finding{Code: ServerBelowFloor, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
				Message: fmt.Sprintf("server %s runs %s, below the floor %s", s.Name, s.Version, e.floor())})
		case VerdictUnparseable:
			e.add(Finding{Code: VersionUnparseable, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
				Message: fmt.Sprintf("server %s reports version %q, which is not a version", s.Name, s.Version)})
		}
	}
}

func (e *evaluation) clusters(servers []ServerReport) []ClusterReport {
	var out []ClusterReport
	for _, s := range servers {
		if s.Cluster == "" {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != s.Cluster {
			out = append(out, ClusterReport{Name: s.Cluster})
		}
		c := &out[len(out)-1]
		c.Servers++
		if !slices.Contains(c.Versions, s.Version) {
			c.Versions = append(c.Versions, s.Version)
		}
	}
	for i := range out {
		c := &out[i]
		slices.Sort(c.Versions)
		if len(c.Versions) > 1 {
			e.add(Finding{Code: ClusterMixedVersions, Cluster: c.Name, Versions: c.Versions,
				Message: fmt.Sprintf("cluster %s runs %d versions: %s", c.Name, len(c.Versions), strings.Join(c.Versions, ", "))})
		}
	}
	return out
}

// missing adds a finding for every expected server that did not answer and
// returns how many there are.
func (e *evaluation) missing(snap *Snapshot) int {
	namedMissing := 0
	known := knownPeerIDs(snap)
	for _, name := range sortedKeys(snap.ExpectedNames) {
		if _, ok := e.byName[name]; ok {
			continue
		}
		if id, ok := unknownPeerID(name); ok {
			if known[id] {
				continue // the same server, answering or named elsewhere
			}
			namedMissing++
			e.add(Finding{Code: ServerMissing, Count: 1,
				Message: fmt.Sprintf("a server known only by its RAFT peer id %s did not answer; %s named it as a peer", id, joinSorted(snap.ExpectedNames[name]))})
			continue
		}
		namedMissing++
		f := Finding{Code: ServerMissing, Server: name, Count: 1,
			Message: fmt.Sprintf("server %s did not answer; %s named it as a peer", name, joinSorted(snap.ExpectedNames[name]))}
		if last, ok := snap.LastSeen[name]; ok {
			level := last.APILevel
			f.Cluster, f.Version, f.ServerLevel = last.Cluster, last.Version, &level
			f.Message += fmt.Sprintf("; last seen running %s (JetStream API level %d)", last.Version, last.APILevel)
		}
		e.add(f)
	}
	clusters := map[string]bool{}
	for _, s := range snap.Servers {
		clusters[s.Cluster] = true
	}
	// A cluster nobody of which answered stands for at least one server, but
	// the servers named above may be that one (a name says nothing of its
	// cluster): count it only when no server could be named.
	serversNamed := namedMissing
	for _, name := range sortedKeys(snap.ExpectedClusters) {
		if clusters[name] {
			continue
		}
		count := 0
		if serversNamed == 0 {
			count = 1
		}
		namedMissing += count
		e.add(Finding{Code: ServerMissing, Cluster: name, Count: count,
			Message: fmt.Sprintf("no server of cluster %s answered; %s named it as a gateway", name, joinSorted(snap.ExpectedClusters[name]))})
	}

	unnamed := snap.ExpectedCount - len(snap.Servers) - namedMissing
	if unnamed > 0 && namedMissing == 0 && staleCount(snap.Servers) {
		// Only the servers' own counts can hold a stale id; a shortfall
		// against the caller's Expect stays.
		unnamed -= min(unnamed, maxActive(snap.Servers)-len(snap.Servers))
	}
	message := fmt.Sprintf("%d of %d expected servers answered; %d missing servers were never named",
		len(snap.Servers), snap.ExpectedCount, unnamed)
	// The meta group keeps every peer, gracefully stopped or long dead, until
	// it is removed: the one count that neither a clean shutdown nor the
	// servers' forgetting a silent peer lowers.
	for _, m := range snap.Meta {
		short := m.Size - answeredIn(snap.Servers, m.Domain) - namedMissing
		if short > unnamed {
			unnamed = short
			message = fmt.Sprintf("the JetStream meta group%s has %d peers and %d of its servers answered; %d missing servers were never named",
				domainSuffix(m.Domain), m.Size, m.Size-namedMissing-short, short)
		}
	}
	if unnamed > 0 {
		e.add(Finding{Code: ServerMissing, Count: unnamed, Message: message})
		return namedMissing + unnamed
	}
	return namedMissing
}

// knownPeerIDs are the RAFT peer ids of every server the audit can name.
func knownPeerIDs(snap *Snapshot) map[string]bool {
	ids := map[string]bool{}
	for _, s := range snap.Servers {
		ids[peerID(s.Name)] = true
	}
	for name := range snap.ExpectedNames {
		if _, unknown := unknownPeerID(name); !unknown {
			ids[peerID(name)] = true
		}
	}
	return ids
}

// answeredIn counts the JetStream servers of a domain that answered: the
// members of its meta group.
func answeredIn(servers []Server, domain string) int {
	n := 0
	for _, s := range servers {
		if s.JetStream && s.Domain == domain {
			n++
		}
	}
	return n
}

func domainSuffix(domain string) string {
	if domain == "" {
		return ""
	}
	return " of domain " + domain
}

// StaleRegistration is how long a server that died without a clean shutdown
// stays counted in the others' active_servers: nats-server forgets a silent
// server after 150 s, checked every 90 s.
const StaleRegistration = 240 * time.Second

// staleCount reports whether an unnamed surplus in the active-server count is
// what a crash-restart leaves behind: the server that came back under its
// name (with a new server id) started within StaleRegistration, and at least
// a second after some other server that still counts more than answered,
// while it counts exactly the servers that answered. Servers of a system that
// started together do not qualify: a surplus there is a server missing.
// Without this, every crash-restart would hold the gate at UNKNOWN for four
// minutes after the system had recovered.
func staleCount(servers []Server) bool {
	for _, young := range servers {
		if young.Uptime <= 0 || young.Uptime >= StaleRegistration || young.ActiveServers != len(servers) {
			continue
		}
		for _, old := range servers {
			if old.Uptime > young.Uptime+time.Second && old.ActiveServers > len(servers) {
				return true
			}
		}
	}
	return false
}

func maxActive(servers []Server) int {
	n := 0
	for _, s := range servers {
		n = max(n, s.ActiveServers)
	}
	return n
}

func (e *evaluation) meta(m MetaGroup) {
	if m.Leader == "" {
		return
	}
	if s, ok := e.byName[m.Leader]; ok && s.Verdict == VerdictBelow {
		e.add(Finding{Code: MetaLeaderBelowFloor, Server: s.Name, Cluster: s.Cluster, Version: s.Version,
			Message: fmt.Sprintf("JetStream meta leader %s runs %s, below the floor %s", s.Name, s.Version, e.floor())})
	}
}

func (e *evaluation) selected(a Asset) bool {
	match := func(patterns []string, v string) bool {
		if len(patterns) == 0 {
			return true
		}
		for _, p := range patterns {
			if ok, _ := path.Match(p, v); ok {
				return true
			}
		}
		return false
	}
	if !match(e.p.Accounts, a.Account) || !match(e.p.Streams, a.Stream) {
		return false
	}
	return a.Kind != KindConsumer || match(e.p.Consumers, a.Consumer)
}

func (e *evaluation) asset(a Asset) {
	leader, hasLeader := e.byName[a.Leader]
	if hasLeader {
		if a.Kind == KindConsumer {
			leader.ConsumersLed++
		} else {
			leader.StreamsLed++
		}
	}
	if !e.selected(a) {
		return
	}
	base := Finding{Account: a.Account, Stream: a.Stream, Consumer: a.Consumer}
	name := a.name()

	leaderBelow := hasLeader && leader.Verdict == VerdictBelow
	switch {
	case leaderBelow && a.Kind == KindConsumer:
		f := base
		f.Code, f.Server, f.Cluster, f.Version = ConsumerLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		f.Message = fmt.Sprintf("consumer %s is led by %s running %s, below the floor %s", name, leader.Name, leader.Version, e.floor())
		if !answersReset(leader.Version) {
			f.Message = fmt.Sprintf("consumer %s is led by %s running %s: RESET (first in 2.14.0) to it goes unanswered", name, leader.Name, leader.Version)
		}
		e.add(f)
	case leaderBelow:
		f := base
		f.Code, f.Server, f.Cluster, f.Version = StreamLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		f.Message = fmt.Sprintf("stream %s is led by %s running %s, below the floor %s", name, leader.Name, leader.Version, e.floor())
		e.add(f)
	case a.Kind == KindConsumer && a.Leader == "" && a.Replicas > 1:
		f := base
		f.Code = ConsumerNoLeader
		f.Message = fmt.Sprintf("consumer %s (R%d) has no leader", name, a.Replicas)
		e.add(f)
	}

	// A follower is at risk while its leader would accept a RESET; a leader
	// that does not know RESET never replicates one. A leaderless consumer
	// may get a new leader that does.
	resetReachesFollowers := !hasLeader || answersReset(leader.Version)
	for _, peer := range a.Peers {
		s, ok := e.byName[peer]
		if !ok {
			continue // a peer that did not answer is a SERVER_MISSING finding
		}
		if a.Kind == KindConsumer && resetReachesFollowers && peer != a.Leader && s.Verdict == VerdictBelow {
			f := base
			f.Code, f.Server, f.Cluster, f.Version, f.Peer = ConsumerReplicaBelowFloor, s.Name, s.Cluster, s.Version, a.Leader
			f.Message = fmt.Sprintf("consumer %s has follower %s running %s, below the floor %s", name, s.Name, s.Version, e.floor())
			if !answersReset(s.Version) {
				f.Message = fmt.Sprintf("consumer %s has follower %s running %s: a RESET answered by a leader at 2.14.0 or later crashes it", name, s.Name, s.Version)
			}
			e.add(f)
		}
		// A 2.10 server knows no API levels and no level metadata: an
		// unreadable level means nothing to it.
		if a.RequiredLevel > s.APILevel && (a.RequiredLevel != LevelUnreadable || s.APILevel > 0) {
			level := s.APILevel
			f := base
			f.Code, f.Server, f.Cluster, f.Version = AssetAPILevelUnsupported, s.Name, s.Cluster, s.Version
			f.RequiredLevel, f.ServerLevel = a.RequiredLevel, &level
			f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: it holds the %s offline",
				a.Kind, name, a.RequiredLevel, s.Name, level, a.Kind)
			switch {
			case a.RequiredLevel == LevelUnreadable:
				f.Message = fmt.Sprintf("%s %s has a _nats.req.level that is not a number: peer %s, like every server from 2.11 on, holds the %s offline",
					a.Kind, name, s.Name, a.Kind)
			case level == 0:
				f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s runs %s, from before API levels: it runs the %s online, ignoring what it does not know, and its copy diverges",
					a.Kind, name, a.RequiredLevel, s.Name, s.Version, a.Kind)
			}
			e.add(f)
		}
	}
}

func (a Asset) name() string {
	n := a.Account + " > " + a.Stream
	if a.Consumer != "" {
		n += " > " + a.Consumer
	}
	return n
}

func (e *evaluation) leafnodes(links []LeafLink) {
	seen := map[LeafLink]bool{}
	for _, l := range links {
		if _, ok := e.byName[l.Peer]; ok {
			continue
		}
		key := LeafLink{Server: l.Server, Peer: l.Peer, Account: l.Account}
		if seen[key] {
			continue
		}
		seen[key] = true
		e.add(Finding{Code: LeafnodeUnaudited, Server: l.Server, Cluster: l.Cluster, Peer: l.Peer, Account: l.Account,
			Message: fmt.Sprintf("leafnode peer %s (linked to %s in account %s) was not audited: it does not share the system account, or it is not answering", l.Peer, l.Server, l.Account)})
	}
}

func codeIndex(c Code) int {
	return slices.IndexFunc(Codes, func(k CodeInfo) bool { return k.Code == c })
}

func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity.rank(), a.Severity.rank()),
			cmp.Compare(codeIndex(a.Code), codeIndex(b.Code)),
			cmp.Compare(a.Account, b.Account),
			cmp.Compare(a.Stream, b.Stream),
			cmp.Compare(a.Consumer, b.Consumer),
			cmp.Compare(a.Cluster, b.Cluster),
			cmp.Compare(a.Server, b.Server),
			cmp.Compare(a.Peer, b.Peer),
		)
	})
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
