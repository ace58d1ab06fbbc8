package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

func fixedReport() *auditor.Report {
	snap := &auditor.Snapshot{
		Started:  time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Duration: 12 * time.Millisecond,
		Requests: 7,
		Servers: []auditor.Server{
			{ID: "A", Name: "n1", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4},
			{ID: "B", Name: "n2", Cluster: "c1", Version: "2.14.0", JetStream: true, APILevel: 4},
			{ID: "C", Name: "n3", Cluster: "c1", Version: "2.12.15", JetStream: true, APILevel: 3},
		},
		Consumers: []auditor.Asset{{Kind: auditor.KindConsumer, Account: "APP", Stream: "S", Consumer: "C",
			Leader: "n3", Peers: []string{"n1", "n2", "n3"}, Replicas: 3}},
		ExpectedCount: 4,
	}
	return auditor.Evaluate(snap, auditor.Policy{Floor: auditor.DefaultFloor})
}

func TestWriteCheckText(t *testing.T) {
	var b bytes.Buffer
	if err := writeCheckText(&b, fixedReport()); err != nil {
		t.Fatal(err)
	}
	want := `CRITICAL: 3 of 4 expected servers answered, floor 2.14.0; 4 findings (2 critical, 1 unknown, 1 warning)

SERVER_BELOW_FLOOR (CRITICAL, 1)
  server n3 runs 2.12.15, below the floor 2.14.0

CONSUMER_LEADER_BELOW_FLOOR (CRITICAL, 1)
  consumer APP > S > C is led by n3 running 2.12.15: RESET (first in 2.14.0) to it goes unanswered

SERVER_MISSING (UNKNOWN, 1)
  3 of 4 expected servers answered; 1 missing servers were never named

CLUSTER_MIXED_VERSIONS (WARNING, 1)
  cluster c1 runs 2 versions: 2.12.15, 2.14.0
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteNagios(t *testing.T) {
	var b bytes.Buffer
	if err := writeNagios(&b, fixedReport()); err != nil {
		t.Fatal(err)
	}
	want := "NATS VERSIONS CRITICAL - 4 findings: server n3 runs 2.12.15, below the floor 2.14.0 | servers=3;;;0 servers_expected=4;;;0 critical=2;;;0 unknown=1;;;0 warning=1;;;0 duration=0.012s;;;0 requests=7;;;0\n"
	if b.String() != want {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

func TestCheckJSONShape(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, checkJSON(fixedReport())); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"status", "floor", "findings", "servers", "audit"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q in %s", k, b.String())
		}
	}
	audit := doc["audit"].(map[string]any)
	for k, want := range map[string]any{"started": "2026-11-29T12:00:00Z", "duration_seconds": 0.012,
		"servers_expected": 4.0, "servers_responded": 3.0, "requests": 7.0} {
		if audit[k] != want {
			t.Errorf("audit.%s = %v, want %v", k, audit[k], want)
		}
	}
	f := doc["findings"].([]any)[1].(map[string]any)
	for k, want := range map[string]any{"code": "CONSUMER_LEADER_BELOW_FLOOR", "severity": "CRITICAL", "server": "n3",
		"account": "APP", "stream": "S", "consumer": "C", "version": "2.12.15"} {
		if f[k] != want {
			t.Errorf("findings[1].%s = %v, want %v", k, f[k], want)
		}
	}
	if _, ok := f["required_level"]; ok {
		t.Errorf("a consumer-leader finding carries required_level: %v", f)
	}
	if doc["status"] != "CRITICAL" || doc["floor"] != "2.14.0" {
		t.Errorf("status %v floor %v", doc["status"], doc["floor"])
	}
}
