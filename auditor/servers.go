package auditor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

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

// listedPeers writes a meta peer set's members, the leader first.
func listedPeers(set *snapshot.MetaPeerSet) string {
	names := append([]string{set.Leader}, set.Names...)
	return strings.Join(names, ", ")
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
