package auditor

import (
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// TestForServerPartitionsFindings checks that narrowing a report to each
// server in turn hands every finding to exactly one of them.
func TestForServerPartitionsFindings(t *testing.T) {
	servers := cluster()
	servers[2] = srv("n3", "c1", "2.12.15", 3)
	snap := &snapshot.Snapshot{
		Servers: servers,
		Consumers: []snapshot.Asset{
			consumer("S", "led-by-old", "n3", "n1", "n2", "n3"),
			consumer("S", "followed-by-old", "n2", "n1", "n2", "n3"),
			consumer("S", "leaderless", "", "n2", "n3"),
		},
		Streams:       []snapshot.Asset{func() snapshot.Asset { a := stream("FAST", "n1", "n1", "n3"); a.RequiredLevel = 4; return a }()},
		Meta:          []snapshot.MetaGroup{{Leader: "n3"}},
		Leafnodes:     []snapshot.LeafLink{{Server: "n2", Peer: "edge", Account: "APP"}},
		ExpectedCount: 5,
		ExpectedNames: map[string][]string{"n4": {"n1"}},
	}
	all := Evaluate(snap, Policy{Floor: version.DefaultFloor})
	var union []string
	for _, s := range servers {
		part := all.ForServer(s.Name)
		if len(part.Servers) != 1 || part.Servers[0].Name != s.Name {
			t.Errorf("ForServer(%s).Servers = %+v", s.Name, part.Servers)
		}
		for _, f := range part.Findings {
			union = append(union, brief(f))
			if f.Severity.Worse(part.Status) {
				t.Errorf("ForServer(%s) status %s below its finding %s", s.Name, part.Status, f.Code)
			}
		}
	}
	var want []string
	for _, f := range all.Findings {
		want = append(want, brief(f))
	}
	slices.Sort(union)
	slices.Sort(want)
	if !slices.Equal(union, want) {
		t.Errorf("the servers' parts add up to\n  %v\nnot\n  %v", union, want)
	}
	// A cluster is exported by one sidecar: the first-named that answered.
	for _, s := range servers {
		want := 0
		if s.Name == "n1" {
			want = 1
		}
		if got := len(all.ForServer(s.Name).Clusters); got != want {
			t.Errorf("ForServer(%s) has %d clusters, want %d", s.Name, got, want)
		}
	}
	if got := all.ForServer("n2").Leafnodes; len(got) != 1 || got[0].Peer != "edge" {
		t.Errorf("n2's leafnode links: %+v", got)
	}
}
