package metrics

import (
	"fmt"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// BenchmarkCollect measures a scrape's collection of a report with 10,000
// consumer findings: the series stay capped whatever the findings.
func BenchmarkCollect(b *testing.B) {
	snap := &snapshot.Snapshot{}
	for i := range 50 {
		v := "2.14.3"
		if i%10 == 0 {
			v = "2.12.15"
		}
		s := snapshot.Server{ID: fmt.Sprint(i), Name: fmt.Sprintf("n%d", i), Cluster: fmt.Sprintf("c%d", i/10), JetStream: true}
		s.SetVersion(v)
		snap.Servers = append(snap.Servers, s)
	}
	for i := range 10_000 {
		snap.Consumers = append(snap.Consumers, snapshot.Asset{Kind: releases.KindConsumer, Account: "A", Stream: fmt.Sprintf("S%d", i/100),
			Consumer: fmt.Sprintf("C%d", i), Leader: fmt.Sprintf("n%d", (i%5)*10), Peers: []string{fmt.Sprintf("n%d", (i%5)*10)}})
	}
	res := findings.Result{Report: auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})}
	c := NewCollector(func() findings.Result { return res }, 0)
	series := 0
	for b.Loop() {
		ch := make(chan prometheus.Metric, 1024)
		go func() { c.Collect(ch); close(ch) }()
		series = 0
		for range ch {
			series++
		}
	}
	b.ReportMetric(float64(series), "series")
}
