package render

import (
	"fmt"
	"io"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// BenchmarkCheckJSON writes the JSON of a check with as many findings as a
// large mixed cluster gives.
func BenchmarkCheckJSON(b *testing.B) {
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{{ID: "A", Name: "n1", Version: "2.12.15", Parsed: mustRelease(b, "2.12.15")}, {ID: "B", Name: "n2", Version: "2.14.0", Parsed: mustRelease(b, "2.14.0")}}}
	for i := range 11000 {
		snap.Consumers = append(snap.Consumers, snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: fmt.Sprint("S", i/300),
			Consumer: fmt.Sprint("C", i), Leader: "n1", Peers: []string{"n1", "n2"}})
	}
	r := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	for b.Loop() {
		if err := writeCheckJSON(io.Discard, CheckOf(r, nil)); err != nil {
			b.Fatal(err)
		}
	}
}
