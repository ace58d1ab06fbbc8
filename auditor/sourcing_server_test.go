package auditor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestSourcingConsumerStopsItsStream: issue 32's candidate, a consumer
// whose config a client sets sourcing: true (a field of 2.14.0,
// consumer.go:129, that _nats.req.level does not record: 2.14.0
// jetstream_versioning.go:141-171). Three 2.14.0 servers; the rollback of
// n3 to 2.12.15 is CRITICAL as a what-if, and once done, n3 holds the
// consumer offline and, "to protect the whole stream", stops its stream
// too: the live audit says both, the stream's from what the servers show,
// with n3's log lines beside it.
func TestSourcingConsumerStopsItsStream(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.Floor, "c1"))
	if err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if err := natstest.AddConsumer(app, "S", server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit, Replicas: 3, Sourcing: true}); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "S", "n1"); err != nil {
		t.Fatal(err)
	}
	policy := auditor.Policy{Floor: mustParse(t, "2.12.0")}
	snap, _ := audit(t, sysConn)
	if r := auditor.Evaluate(snap, policy); r.Status != findings.OK {
		t.Fatalf("before: %s %+v", r.Status, r.Findings)
	}
	w, err := auditor.Assume(auditor.Evaluate(snap, policy), policy, []auditor.Assumption{{Target: "n3", Version: mustParse(t, "2.12.15")}})
	if err != nil {
		t.Fatal(err)
	}
	wantOnlyCritical(t, "the what-if", w.After, findings.AssetAPILevelUnsupported)
	wantFinding(t, w.After, codeFindings(w.After, findings.AssetAPILevelUnsupported), "n3", "", "",
		"consumer APP > S > C (a consumer's sourcing flag, which its _nats.req.level does not record) needs JetStream API level 4 but peer n3 supports 3: it holds the consumer offline",
		"it stops the consumer's stream APP > S with it")

	sys.Restart("n3", natstest.Old)
	var live *findings.Report
	err = natstest.Eventually(60*time.Second, func() error {
		snap, byName := audit(t, sysConn)
		live = auditor.Evaluate(snap, policy)
		if up := byName["n3"].Uptime; up < auditor.LoadAllowance {
			return fmt.Errorf("n3 up %s", up)
		}
		if len(codeFindings(live, findings.AssetPeerMissing)) == 0 {
			return fmt.Errorf("no %s yet: %+v", findings.AssetPeerMissing, live.Findings)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOnlyCritical(t, "the live audit", live, findings.AssetAPILevelUnsupported, findings.AssetPeerMissing)
	wantFinding(t, live, streamFindings(live, "S"), "n3", "", "",
		"stream APP > S runs on 2 of its 3 peers; one more peer down and it stops: n3 (2.12.15) answered the audit and does not run it",
		"it holds the stream's consumer C offline as unsupported, and a server from 2.11.9 on stops the consumer's stream with it")

	// The oracle: n3 says why, runs on, and lists no S.
	for _, want := range []string{`Detected unsupported consumer 'APP > S > C': unsupported - config error: unknown field "sourcing"`, "Stopping unsupported stream 'APP > S'"} {
		line := logLine(sys.Log("n3"), want)
		if line == "" {
			t.Fatalf("n3 did not log %q:\n%s", want, sys.LogTail("n3", 30))
		}
		t.Logf("n3 logged: %s", line)
	}
	if !sys.Running("n3") {
		t.Fatal("n3 exited")
	}
	replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true}, 3, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range replies {
		has := false
		for _, acc := range rep.Data.AccountDetails {
			for _, s := range acc.Streams {
				has = has || s.Name == "S"
			}
		}
		if has == (name == "n3") {
			t.Errorf("%s lists S: %t", name, has)
		}
	}
	if n := strings.Count(sys.Log("n3"), "Detected unsupported consumer 'APP > S > C'"); n > 1 {
		t.Logf("n3 logged the unsupported consumer %d times", n)
	}
}
