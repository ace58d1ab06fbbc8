package findings

import "slices"

// Owner names the server whose sidecar reports a finding when every server
// runs its own auditor with --scope server: the server the finding is about,
// the leader for an asset's findings, and for findings about no single server
// (a mixed cluster, a leaderless consumer, a server nobody can name) the
// first-named server that answered among those concerned. Every sidecar sees
// the same census, so each finding has exactly one owner. Empty means the
// finding belongs to every auditor (a request of its own that failed). Each
// code's registration in Codes says which.
func (r *Report) Owner(f Finding) string {
	k, _ := Info(f.Code)
	switch {
	case k.owner != nil:
		return k.owner(r, f)
	case k.Follower:
		// The leader while it answers; else the follower while it answers
		// (a group electing a leader, a leader gone), else someone who is
		// up: a follower that crashed took its sidecar with it.
		if f.Peer != "" && r.answered(f.Peer) {
			return f.Peer
		}
		return ownedByServerWhileAnswering(r, f)
	}
	return f.Server
}

// ownedByConsumerPeers: a leaderless consumer's finding belongs to the
// first-named of its peers that answered.
func ownedByConsumerPeers(r *Report, f Finding) string {
	for _, a := range r.Snapshot.Consumers {
		if a.Account == f.Account && a.Stream == f.Stream && a.Consumer == f.Consumer {
			return r.firstAnswered(a.Peers)
		}
	}
	return ""
}

// ownedByCluster: a cluster's finding belongs to the first-named of its
// servers that answered.
func ownedByCluster(r *Report, f Finding) string {
	var names []string
	for _, s := range r.Servers {
		if s.Cluster == f.Cluster {
			names = append(names, s.Name)
		}
	}
	return r.firstAnswered(names)
}

// ownedByAnyAnswered: a finding about the system as a whole belongs to the
// first-named server that answered.
func ownedByAnyAnswered(r *Report, _ Finding) string {
	var names []string
	for _, s := range r.Servers {
		names = append(names, s.Name)
	}
	return r.firstAnswered(names)
}

func (r *Report) firstAnswered(names []string) string {
	names = slices.Clone(names)
	slices.Sort(names)
	for _, n := range names {
		if r.answered(n) {
			return n
		}
	}
	return ""
}

// answered reports whether the server named name answered the audit.
func (r *Report) answered(name string) bool {
	for _, s := range r.Servers {
		if s.Name == name {
			return true
		}
	}
	return false
}

// ownedByServerWhileAnswering: the server a finding is about owns it while it
// answers (one that crashes on an asset or halts its meta group, a
// follower whose leader does not answer); once it is missing, its sidecar
// is down with it, and the first-named server that answered owns it.
func ownedByServerWhileAnswering(r *Report, f Finding) string {
	if r.answered(f.Server) {
		return f.Server
	}
	return ownedByAnyAnswered(r, f)
}
