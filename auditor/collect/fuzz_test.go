package collect_test

import (
	"encoding/json"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// The fuzz targets feed arbitrary bytes to what the audit does with each
// $SYS reply: decode it, merge it into the audit, and evaluate the result.
// Seeds are real replies of every server version the tests run
// (testdata/fuzz, written by `make fuzz-seeds`). Nothing may panic or hang,
// and a reply that is not JSON must come back as an error, which the audit
// records as AUDIT_INCOMPLETE.

func evaluateAll(snap *snapshot.Snapshot) {
	r := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	for _, s := range r.Servers {
		r.ForServer(s.Name)
	}
	_ = r.Complete()
}

func addSeeds(f *testing.F) {
	for _, s := range []string{"", "{}", "null", "[]", `{"server":null,"data":null}`, `{"data":{}}`, "\x00", `{"server":{"name":"a","id":"b","ver":"x"}}`} {
		f.Add([]byte(s))
	}
}

func FuzzStatsz(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, name, err := collect.CollectStatsz(data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		if err != nil {
			return
		}
		if snap.Servers[0].Name != name {
			t.Fatalf("registered %q for a reply from %q", snap.Servers[0].Name, name)
		}
		evaluateAll(snap)
	})
}

func FuzzLeafz(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := collect.CollectLeafz(snapshot.Server{Name: "s", ID: "S", Version: "2.14.0", Parsed: version.Must("2.14.0")}, data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		evaluateAll(snap)
	})
}

func FuzzJSZ(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// The second server is a second replica's report of the same.
		servers := []snapshot.Server{{Name: "n1", ID: "N1", Version: "2.14.0", Parsed: version.Must("2.14.0"), APILevel: 4}, {Name: "n3", ID: "N3", Version: "2.12.15", Parsed: version.Must("2.12.15"), APILevel: 3}}
		snap, err := collect.CollectJSZ(servers, data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		if err != nil {
			return
		}
		for _, a := range append(snap.Streams, snap.Consumers...) {
			if len(a.Peers) == 0 {
				t.Fatalf("asset %+v has no peers although servers reported it", a)
			}
		}
		evaluateAll(snap)
	})
}
