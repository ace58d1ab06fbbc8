package auditor_test

import (
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

func TestAckTakeovers(t *testing.T) {
	server := func(name, version string, flags map[string]bool) snapshot.Server {
		s := snapshot.Server{Name: name, ID: "ID" + name, Cluster: "c1", JetStream: true, Uptime: time.Minute, FeatureFlags: flags}
		s.SetVersion(version)
		return s
	}
	on := map[string]bool{releases.FlagAckFormatV2: true}
	tests := []struct {
		name    string
		servers []snapshot.Server
		change  func(*snapshot.Asset)
		want    []string // servers with a finding
	}{
		{"a v2 giver and two old peers", []snapshot.Server{server("n1", "2.14.0", on), server("n2", "2.12.15", nil), server("n3", "2.11.12", nil)}, nil, []string{"n2", "n3"}},
		{"the flag off", []snapshot.Server{server("n1", "2.14.0", nil), server("n2", "2.12.15", nil), server("n3", "2.12.15", nil)}, nil, nil},
		{"no peer before 2.14.0", []snapshot.Server{server("n1", "2.14.0", on), server("n2", "2.14.0", nil), server("n3", "2.15.3", nil)}, nil, nil},
		{"ack_policy none", []snapshot.Server{server("n1", "2.14.0", on), server("n2", "2.12.15", nil), server("n3", "2.12.15", nil)},
			func(a *snapshot.Asset) { a.AckNone = true }, nil},
		{"R1", []snapshot.Server{server("n1", "2.14.0", on), server("n2", "2.12.15", nil), server("n3", "2.12.15", nil)},
			func(a *snapshot.Asset) { a.Peers, a.Replicas = []string{"n1"}, 1 }, nil},
		{"an old peer that did not answer", []snapshot.Server{server("n1", "2.14.0", on), server("n2", "2.14.0", nil)}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{Started: time.Now(), Servers: tc.servers, ExpectedCount: len(tc.servers)}
			a := snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "C", Leader: "n1",
				Peers: []string{"n1", "n2", "n3"}, Replicas: 3}
			if tc.change != nil {
				tc.change(&a)
			}
			snap.Consumers = []snapshot.Asset{a}
			r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.10.0")})
			var got []string
			for _, f := range codeFindings(r, findings.ConsumerAcksLostOnTakeover) {
				got = append(got, f.Server)
				if f.Peer != "n1" || f.Severity != findings.Warning {
					t.Errorf("finding %+v", f)
				}
			}
			if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
				t.Errorf("findings about %v; want %v", got, tc.want)
			}
		})
	}
}
