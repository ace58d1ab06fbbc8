package auditor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// pathFindings are the findings of the rules that each changed server's
// move breaks, from the version it ran (before) to the one it would run: one
// finding per code and server, saying every rule of that code it breaks.
// Release names the release to go to first where a rule says one.
func pathFindings(before map[string]snapshot.Server, after []snapshot.Server, changed map[string]bool) []findings.Finding {
	var out []findings.Finding
	for _, s := range after {
		if !changed[s.Name] {
			continue
		}
		from := before[s.Name]
		for _, k := range pathCodes {
			var says []string
			for _, r := range releases.PathRules {
				if pathCode[r.Kind] == k && r.Breaks(from.Parsed, s.Parsed) {
					says = append(says, r.BrokenBy())
				}
			}
			if len(says) == 0 {
				continue
			}
			var release string
			if k == findings.UpgradePathUnsupported {
				if first := releases.FirstBefore(from.Parsed, s.Parsed); !first.IsZero() {
					release = first.String()
				}
			}
			out = append(out, findings.Finding{Code: k, Severity: findings.SeverityOf(k), Server: s.Name, Cluster: s.Cluster, Version: s.Version, Release: release,
				Message: fmt.Sprintf("server %s would go from %s to %s: %s", s.Name, from.Version, s.Version, strings.Join(says, "; "))})
		}
	}
	return out
}

// pathCode is the finding each kind of PathRule gives.
var pathCode = map[releases.PathKind]findings.Code{releases.PathUnsupported: findings.UpgradePathUnsupported, releases.PathBelowFloor: findings.DowngradeBelowFloor}

// pathCodes are the codes of PathRules, each once, in the table's order.
var pathCodes = func() []findings.Code {
	var out []findings.Code
	for _, r := range releases.PathRules {
		if k := pathCode[r.Kind]; !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}()

// releases adds the findings of the servers' releases: a bad release on
// each server that runs one, and each Mixed path rule broken within a
// JetStream meta group the audit saw (metaGroupsOf), on every server below
// its floor.
func (e *evaluation) releases(snap *snapshot.Snapshot, servers []findings.ServerReport) {
	for _, s := range servers {
		if b, ok := releases.BadReleaseOf(s.Parsed); ok {
			e.add(findings.Finding{Code: findings.KnownBadRelease, Server: s.Name, Cluster: s.Cluster, Version: s.Version, Release: b.Fix.String(),
				Message: fmt.Sprintf("server %s runs %s, a release known to lose data: %s (%s); upgrade it to %s or later", s.Name, s.Version, b.Defect, b.Cite, b.Fix)})
		}
	}
	groups := metaGroupsOf(snap)
	for _, r := range releases.PathRules {
		if !r.Mixed {
			continue
		}
		for _, peers := range groups {
			var newer []string
			for _, s := range peers {
				if s.Parsed.Line().AtLeast(r.Line) {
					newer = append(newer, s.Name+" ("+s.Version+")")
				}
			}
			if len(newer) == 0 {
				continue
			}
			slices.Sort(newer)
			slices.SortFunc(peers, func(a, b snapshot.Server) int { return strings.Compare(a.Name, b.Name) })
			for _, s := range peers {
				if s.Parsed.IsZero() || !s.Parsed.Before(r.Floor) {
					continue
				}
				e.add(findings.Finding{Code: findings.UpgradePathMixed, Server: s.Name, Cluster: s.Cluster, Version: s.Version, Release: r.First().String(),
					Message: fmt.Sprintf("server %s runs %s in the JetStream meta group%s of %s: %s wants every server on %s or later first (%s): %s; move it to %s",
						s.Name, s.Version, domainSuffix(s.Domain), strings.Join(newer, ", "), r.Line.Minor(), r.Floor, r.Cite, r.Why, r.First())})
			}
		}
	}
}

// metaGroupsOf partitions the JetStream servers that answered into the meta
// groups they belong to: the servers of one cluster and domain are one
// group, and so are a server and the meta leader its JSZ names (a
// supercluster's clusters, a leafnode that extends its hub). The groups do
// not rest on which leader each server names alone: while a leader is
// elected a server names none, and its cluster still holds it. A leafnode
// cluster with its own JetStream is a group of its own, even in the same
// (empty) domain.
func metaGroupsOf(snap *snapshot.Snapshot) [][]snapshot.Server {
	var js []snapshot.Server
	index := map[string]int{}
	for _, s := range snap.Servers {
		if s.JetStream {
			index[s.Name] = len(js)
			js = append(js, s)
		}
	}
	parent := make([]int, len(js))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	union := func(a, b string) {
		i, ok1 := index[a]
		j, ok2 := index[b]
		if ok1 && ok2 {
			parent[find(i)] = find(j)
		}
	}
	byCluster := map[[2]string]string{}
	for _, s := range js {
		if s.Cluster == "" {
			continue
		}
		k := [2]string{s.Domain, s.Cluster}
		if first, ok := byCluster[k]; ok {
			union(first, s.Name)
		} else {
			byCluster[k] = s.Name
		}
	}
	for _, m := range snap.Meta {
		for _, reporter := range sortedKeys(m.Follows) {
			union(reporter, m.Follows[reporter])
		}
	}
	members := map[int][]snapshot.Server{}
	var roots []int
	for i, s := range js {
		r := find(i)
		if _, ok := members[r]; !ok {
			roots = append(roots, r)
		}
		members[r] = append(members[r], s)
	}
	out := make([][]snapshot.Server, 0, len(roots))
	for _, r := range roots {
		out = append(out, members[r])
	}
	return out
}
