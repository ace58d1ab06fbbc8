package exporter

import (
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

func TestMemoryRecallsUntilTheSystemForgets(t *testing.T) {
	var m Memory
	m.Recall(&snapshot.Snapshot{Servers: []snapshot.Server{snapshot.Server{ID: "ID-n1", Name: "n1", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4}, snapshot.Server{ID: "ID-n3", Name: "n3", Cluster: "c1", Version: "2.12.15", JetStream: true, APILevel: 3}}})

	// n3 is gone but still named: it is remembered as what it ran.
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{snapshot.Server{ID: "ID-n1", Name: "n1", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4}}, ExpectedNames: map[string][]string{"n3": {"n1"}}}
	m.Recall(snap)
	if got, ok := snap.LastSeen["n3"]; !ok || got.Version != "2.12.15" || got.APILevel != 3 {
		t.Fatalf("LastSeen %+v", snap.LastSeen)
	}
	if _, ok := snap.LastSeen["n1"]; ok {
		t.Error("a server that answered is in LastSeen")
	}

	// Nobody names n3 any more (removed from the meta group, no asset):
	// forgotten, and not recalled if the name comes back later.
	m.Recall(&snapshot.Snapshot{Servers: []snapshot.Server{snapshot.Server{ID: "ID-n1", Name: "n1", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4}}})
	snap = &snapshot.Snapshot{Servers: []snapshot.Server{snapshot.Server{ID: "ID-n1", Name: "n1", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4}}, ExpectedNames: map[string][]string{"n3": {"n1"}}}
	m.Recall(snap)
	if len(snap.LastSeen) != 0 {
		t.Errorf("LastSeen %+v after the system forgot n3", snap.LastSeen)
	}
}
