package auditor

import (
	"fmt"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// syntheticSnapshot is a system of 50 servers in 5 clusters, one server in
// each cluster below the floor, with consumers spread over them, every
// tenth one R3.
func syntheticSnapshot(consumers int) *snapshot.Snapshot {
	snap := &snapshot.Snapshot{ExpectedCount: 50}
	for c := range 5 {
		for i := range 10 {
			v, level := "2.14.3", 4
			if i == 0 {
				v, level = "2.12.15", 3
			}
			s := snapshot.Server{ID: fmt.Sprintf("ID%d-%d", c, i), Name: fmt.Sprintf("c%d-n%d", c, i),
				Cluster: fmt.Sprintf("c%d", c), JetStream: true, APILevel: level}
			s.SetVersion(v)
			snap.Servers = append(snap.Servers, s)
		}
	}
	for i := range consumers {
		c := i % 5
		peers := []string{fmt.Sprintf("c%d-n%d", c, i%10)}
		if i%10 == 0 {
			peers = []string{fmt.Sprintf("c%d-n%d", c, i%10), fmt.Sprintf("c%d-n%d", c, (i+1)%10), fmt.Sprintf("c%d-n%d", c, (i+2)%10)}
		}
		snap.Consumers = append(snap.Consumers, snapshot.Asset{Kind: releases.KindConsumer, Account: fmt.Sprintf("ACC%d", i%20),
			Stream: fmt.Sprintf("S%d", i/300), Consumer: fmt.Sprintf("C%d", i), Leader: peers[0], Peers: peers, Replicas: len(peers)})
	}
	return snap
}

func BenchmarkEvaluate100kConsumers(b *testing.B) {
	asShipped(b)
	snap := syntheticSnapshot(100_000)
	p := Policy{Floor: version.DefaultFloor}
	var r *findings.Report
	for b.Loop() {
		r = Evaluate(snap, p)
	}
	b.ReportMetric(float64(len(r.Findings)), "findings")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/consumer")
}
