package auditor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Who an audit expects to answer, and who of them did not: Collect waits for
// them (collection.complete) and Evaluate reports those it waited for in
// vain (SERVER_MISSING), by the same arithmetic.

// missing adds a finding for every expected server that did not answer and
// returns how many there are.
func (e *evaluation) missing(snap *snapshot.Snapshot) int {
	namedMissing := 0
	known := knownPeerIDs(snap)
	for _, name := range sortedKeys(snap.ExpectedNames) {
		if _, ok := e.byName[name]; ok {
			continue
		}
		if id, ok := snapshot.UnknownPeerID(name); ok {
			if known[id] {
				continue // the same server, answering or named elsewhere
			}
			namedMissing++
			e.add(findings.Finding{Code: findings.ServerMissing, Count: 1,
				Message: fmt.Sprintf("a server known only by its RAFT peer id %s did not answer; %s named it as a peer", id, joinSorted(snap.ExpectedNames[name]))})
			continue
		}
		namedMissing++
		f := findings.Finding{Code: findings.ServerMissing, Server: name, Count: 1,
			Message: fmt.Sprintf("server %s did not answer; %s named it as a peer", name, joinSorted(snap.ExpectedNames[name]))}
		if last, ok := snap.LastSeen[name]; ok {
			level := last.APILevel
			f.Cluster, f.Version, f.ServerLevel = last.Cluster, last.Version, &level
			f.Message += fmt.Sprintf("; last seen running %s (JetStream API level %d)", last.Version, last.APILevel)
			f.Message += missingAfterReset(name, last, snap, e.sourcers, e.seen)
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
		e.add(findings.Finding{Code: findings.ServerMissing, Cluster: name, Count: count,
			Message: fmt.Sprintf("no server of cluster %s answered; %s named it as a gateway", name, joinSorted(snap.ExpectedClusters[name]))})
	}

	unnamed := snap.ExpectedCount - len(snap.Servers) - namedMissing
	if unnamed > 0 && namedMissing == 0 && snapshot.StaleCount(snap.Servers) {
		// Only the servers' own counts can hold a stale id; a shortfall
		// against the caller's Expect stays.
		unnamed -= min(unnamed, maxActive(snap.Servers)-len(snap.Servers))
	}
	message := fmt.Sprintf("%d of %d expected servers answered; %s",
		len(snap.Servers), snap.ExpectedCount, neverNamed(unnamed))
	// The meta group keeps every peer, gracefully stopped or long dead, until
	// it is removed: the one count that neither a clean shutdown nor the
	// servers' forgetting a silent peer lowers.
	for _, m := range snap.Meta {
		short := m.Size - snapshot.AnsweredIn(snap.Servers, m.Domain) - namedMissing
		if short > unnamed {
			unnamed = short
			message = fmt.Sprintf("the JetStream meta group%s has %d peers and %d of its servers answered; %s",
				domainSuffix(m.Domain), m.Size, m.Size-namedMissing-short, neverNamed(short))
		}
	}
	if unnamed > 0 {
		e.add(findings.Finding{Code: findings.ServerMissing, Count: unnamed, Message: message})
		return namedMissing + unnamed
	}
	return namedMissing
}

// knownPeerIDs are the RAFT peer ids of every server the audit can name.
func knownPeerIDs(snap *snapshot.Snapshot) map[string]bool {
	ids := map[string]bool{}
	for _, s := range snap.Servers {
		ids[snapshot.PeerID(s.Name)] = true
	}
	for name := range snap.ExpectedNames {
		if _, unknown := snapshot.UnknownPeerID(name); !unknown {
			ids[snapshot.PeerID(name)] = true
		}
	}
	return ids
}

func maxActive(servers []snapshot.Server) int {
	n := 0
	for _, s := range servers {
		n = max(n, s.ActiveServers)
	}
	return n
}

// neverNamed says how many missing servers no server named.
func neverNamed(n int) string {
	if n == 1 {
		return "1 missing server was never named"
	}
	return fmt.Sprintf("%d missing servers were never named", n)
}

// missingAfterReset says what a missing server, last seen below
// ResetVersion, does when it comes back if it crashed on a replicated
// RESET: the words SERVER_MISSING adds, or "".
func missingAfterReset(name string, last snapshot.Server, snap *snapshot.Snapshot, sourcers map[ConsumerKey][]Sourcer, byName map[string]snapshot.Server) string {
	if answersReset(last.Parsed) {
		return ""
	}
	var reset, sourced []string
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		if !slices.Contains(a.Peers, name) || a.Leader == name {
			continue
		}
		if ls, ok := byName[a.Leader]; !ok || !answersReset(ls.Parsed) {
			continue
		}
		k := ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}
		if ss := sourcers[k]; len(ss) > 0 {
			sourced = append(sourced, a.Label()+" (RESET by "+sourcerNames(ss)+")")
		} else {
			reset = append(reset, a.Label())
		}
	}
	switch {
	case len(sourced) > 0:
		return fmt.Sprintf("; it follows %s, whose leader answers RESET and which durable sourcing RESETs by itself: a server below %s that crashed on a replicated RESET crashes again on every restart until it is upgraded",
			strings.Join(sourced, ", "), releases.ResetVersion)
	case len(reset) > 0:
		return fmt.Sprintf("; it follows consumers whose leader answers RESET (%s): if it crashed on a replicated RESET, it crashes again on every restart until it is upgraded",
			strings.Join(reset, ", "))
	}
	return ""
}
