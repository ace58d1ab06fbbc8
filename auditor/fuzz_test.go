package auditor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// The fuzz targets feed arbitrary bytes to what the audit does with each
// $SYS reply: decode it, merge it into the audit, and evaluate the result.
// Seeds are real replies of every server version the tests run
// (testdata/fuzz, written by `make fuzz-seeds`). Nothing may panic or hang,
// and a reply that is not JSON must come back as an error, which the audit
// records as AUDIT_INCOMPLETE.

func fuzzCollection() *collection {
	return newCollection(context.Background(), nil, Options{}.withDefaults())
}

func evaluateAll(t *testing.T, c *collection) {
	r := Evaluate(c.snapshot(), Policy{Floor: version.DefaultFloor})
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
		msg, srv, err := parseStatsz(data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		if err != nil {
			return
		}
		c := fuzzCollection()
		if c.register(msg, srv, false) {
			c.inflight-- // askServer would have run
		}
		if c.snap.Servers[0].Name != msg.Server.Name {
			t.Fatalf("registered %q for a reply from %q", c.snap.Servers[0].Name, msg.Server.Name)
		}
		evaluateAll(t, c)
	})
}

func FuzzLeafz(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		c := fuzzCollection()
		err := c.addLeafz(snapshot.Server{Name: "s", ID: "S"}, data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		c.snap.Servers = []snapshot.Server{{Name: "s", ID: "S", Version: "2.14.0", Parsed: version.Must("2.14.0")}}
		evaluateAll(t, c)
	})
}

func FuzzJSZ(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		js, err := parseJSZ(data)
		if !json.Valid(data) && err == nil {
			t.Fatal("a reply that is not JSON was accepted")
		}
		if err != nil {
			return
		}
		c := fuzzCollection()
		c.snap.Servers = []snapshot.Server{{Name: "n1", ID: "N1", Version: "2.14.0", Parsed: version.Must("2.14.0"), APILevel: 4}, {Name: "n3", ID: "N3", Version: "2.12.15", Parsed: version.Must("2.12.15"), APILevel: 3}}
		c.addJSZ(c.snap.Servers[0], js)
		c.addJSZ(c.snap.Servers[1], js) // a second replica's report of the same
		snap := c.snapshot()
		for _, a := range append(snap.Streams, snap.Consumers...) {
			if len(a.Peers) == 0 {
				t.Fatalf("asset %+v has no peers although servers reported it", a)
			}
		}
		evaluateAll(t, c)
	})
}
