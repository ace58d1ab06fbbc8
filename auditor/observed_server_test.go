package auditor_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestPeerThatCannotLoadAStreamOnRealServers plays the rollback issue 32
// saw: three 2.14.0 servers hold an R3 stream whose subject transform uses
// {{random(3)}}, a mapping function 2.12 brought, and n3 goes back to
// 2.11.12 on its own store. The what-if of that rollback is CRITICAL before
// it happens; once it has, n3 logs "Error recreating stream", runs on, and
// lists the other stream but not this one, and the live audit is CRITICAL
// from what the servers show. Without either, the gate would say WARNING
// (mixed versions): the test holds that every CRITICAL finding is one of
// these.
func TestPeerThatCannotLoadAStreamOnRealServers(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.Floor, "c1"))
	err := natstest.AddStream(app, server.StreamConfig{Name: "T", Subjects: []string{"s.*"}, Replicas: 3, Storage: server.FileStorage,
		SubjectTransform: &server.SubjectTransformConfig{Source: "s.*", Destination: "t.{{wildcard(1)}}.{{random(3)}}"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natstest.AddStream(app, server.StreamConfig{Name: "P", Subjects: []string{"p.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "T", "n1"); err != nil {
		t.Fatal(err)
	}
	policy := auditor.Policy{Floor: mustParse(t, "2.11.0")}

	// Before: the rollback as a what-if.
	snap, _ := audit(t, sysConn)
	before := auditor.Evaluate(snap, policy)
	if before.Status != findings.OK {
		t.Fatalf("before the rollback: %s %+v", before.Status, before.Findings)
	}
	w, err := auditor.Assume(auditor.Evaluate(snap, policy), policy, []auditor.Assumption{{Target: "n3", Version: mustParse(t, "2.11.12")}})
	if err != nil {
		t.Fatal(err)
	}
	wantOnlyCritical(t, "the what-if", w.After, findings.AssetPeerNotRunning, findings.AssetAPILevelUnsupported)
	wantFinding(t, w.After, streamFindings(w.After, "T"), "n3", "", "", "T")
	// And as a plan of the rollback of n3: its step is CRITICAL for T.
	plan, err := auditor.MakePlan(auditor.Evaluate(snap, policy), policy, mustParse(t, "2.11.12"), auditor.PlanScope{Servers: []string{"n3"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 1 || plan.Steps[0].Server != "n3" || plan.Steps[0].Status != findings.Critical {
		t.Fatalf("plan %+v", plan.Steps)
	}
	wantFinding(t, plan.Steps[0].After, streamFindings(plan.Steps[0].After, "T"), "n3", "", "", "refuses the config as it creates the stream")

	sys.Restart("n3", natstest.FirstLevels)
	restarted := time.Now()
	var live, blind *findings.Report
	var after *snapshot.Snapshot
	err = natstest.Eventually(90*time.Second, func() error {
		snap, byName := audit(t, sysConn)
		after = snap
		live = auditor.Evaluate(snap, policy)
		// The same replies, judged as by a table that never read the
		// mapping function's row: what the servers show must speak.
		blind = auditor.Evaluate(withoutFeatures(snap, "T"), policy)
		found := codeFindings(blind, findings.AssetPeerMissing)
		if up := byName["n3"].Uptime; up < auditor.LoadAllowance {
			if len(found) > 0 {
				t.Fatalf("n3 has been up %s, less than the allowance, and is judged: %+v", up, found)
			}
			return fmt.Errorf("n3 up %s", up)
		}
		if len(found) == 0 {
			return fmt.Errorf("no %s yet: %+v", findings.AssetPeerMissing, blind.Findings)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("judged %s after n3 restarted as %s", time.Since(restarted).Round(time.Second), natstest.FirstLevels)
	wantOnlyCritical(t, "the live audit", live, findings.AssetAPILevelUnsupported)
	wantFinding(t, live, streamFindings(live, "T"), "n3", "", "",
		"stream APP > T (the {{random(n)}} mapping function in a subject transform, which its _nats.req.level does not record) needs JetStream API level 2 but peer n3 supports 1: 2.11.12 refuses the config as it creates the stream")
	if found := codeFindings(live, findings.AssetPeerMissing); len(found) > 0 {
		t.Errorf("the table's finding speaks for n3, yet: %+v", found)
	}
	wantOnlyCritical(t, "the audit without the row", blind, findings.AssetPeerMissing)
	wantFinding(t, blind, codeFindings(blind, findings.AssetPeerMissing), "n3", "n1", "",
		"stream APP > T runs on 2 of its 3 peers; one more peer down and it stops: n3 (2.11.12) answered the audit and does not run it, though its leader n1 lists it as a peer; cause unknown: see the server's log")

	// The oracle: n3 runs on, says why in its log, and lists P but not T.
	if !sys.Running("n3") {
		t.Fatal("n3 exited")
	}
	line := logLine(sys.Log("n3"), `Error recreating stream "T"`)
	if line == "" {
		t.Fatalf("n3 did not log why:\n%s", sys.LogTail("n3", 30))
	}
	t.Logf("n3 logged: %s", line)
	replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true}, 3, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range replies {
		var has []string
		for _, acc := range rep.Data.AccountDetails {
			for _, s := range acc.Streams {
				has = append(has, s.Name)
			}
		}
		want := "P,T"
		if name == "n3" {
			want = "P"
		}
		if got := strings.Join(slices.Sorted(slices.Values(has)), ","); got != want {
			t.Errorf("%s lists streams %s; want %s", name, got, want)
		}
	}

	// Undoing it, as a what-if of the same audit: n3 on 2.14.0 again drops
	// what n3 showed, and nothing is CRITICAL. (That audit may also count
	// n3's id from before its restart among the servers that should
	// answer, SERVER_MISSING: the servers' count, not the what-if's.)
	w, err = auditor.Assume(auditor.Evaluate(withoutFeatures(after, "T"), policy), policy, []auditor.Assumption{{Target: "n3", Version: mustParse(t, natstest.Floor)}})
	if err != nil {
		t.Fatal(err)
	}
	if found := codeFindings(w.After, findings.AssetPeerMissing); len(found) > 0 || w.After.Status == findings.Critical {
		t.Errorf("the what-if of n3 back on 2.14.0: %s %+v", w.After.Status, w.After.Findings)
	}
	if found := codeFindings(w.Before, findings.AssetPeerMissing); len(found) != 1 {
		t.Errorf("the same audit before the what-if: %+v", w.Before.Findings)
	}
}

// wantOnlyCritical fails unless r is CRITICAL and each of its CRITICAL
// findings is of one of codes: what a gate would say without them.
func wantOnlyCritical(t *testing.T, what string, r *findings.Report, codes ...findings.Code) {
	t.Helper()
	if r.Status != findings.Critical {
		t.Fatalf("%s is %s, not CRITICAL: %+v", what, r.Status, r.Findings)
	}
	for _, f := range r.Findings {
		if f.Severity == findings.Critical && !slices.Contains(codes, f.Code) {
			t.Errorf("%s has CRITICAL %s: %s", what, f.Code, f.Message)
		}
	}
}

// streamFindings are r's CRITICAL findings about stream name itself (not
// a consumer of it).
func streamFindings(r *findings.Report, name string) []findings.Finding {
	var out []findings.Finding
	for _, f := range r.Findings {
		if f.Severity == findings.Critical && f.Stream == name && f.Consumer == "" {
			out = append(out, f)
		}
	}
	return out
}

// logLine is the first line of log that contains s, or "".
func logLine(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// withoutFeatures is snap with the features of stream name's config
// forgotten, as by a feature table without their rows.
func withoutFeatures(snap *snapshot.Snapshot, name string) *snapshot.Snapshot {
	out := *snap
	out.Streams = slices.Clone(snap.Streams)
	for i := range out.Streams {
		if out.Streams[i].Stream == name {
			out.Streams[i].Features = 0
		}
	}
	return &out
}

// TestRestartingPeerIsNoFinding: a peer of an R3 stream restarts with
// messages to catch up on, and every audit while it does, and after, has no
// finding of what the servers show: a restart does not flap the gate. It
// logs how long the catch-up took, the measure CatchUpAllowance rests on.
func TestRestartingPeerIsNoFinding(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.Floor, "c1"))
	if err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "S", "n1"); err != nil {
		t.Fatal(err)
	}
	sys.Kill("n3")
	const backlog = 20000
	payload := make([]byte, 512)
	for i := range backlog {
		// Acknowledged in batches: each ack waits for a quorum (n1, n2).
		if i%500 == 499 {
			if _, err := natstest.Publish(app, "s.x", payload, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := app.Publish("s.x", payload); err != nil {
			t.Fatal(err)
		}
	}
	sys.Restart("n3", "")
	restarted := time.Now()
	policy := auditor.Policy{Floor: mustParse(t, natstest.Floor)}
	// Audits until n3 has caught up and is past the load allowance, and a
	// few seconds more: once current, its leader hears from it all the
	// time, so the catch-up allowance's edge has nothing left to show.
	audits, caughtUp := 0, time.Duration(0)
	for caughtUp == 0 || time.Since(restarted) < max(caughtUp, auditor.LoadAllowance)+5*time.Second {
		if time.Since(restarted) > 2*time.Minute {
			break
		}
		snap, byName := audit(t, sysConn)
		audits++
		r := auditor.Evaluate(snap, policy)
		for _, code := range []findings.Code{findings.AssetPeerMissing, findings.AssetPeerBehind} {
			if found := codeFindings(r, code); len(found) > 0 {
				t.Fatalf("n3 up %s: %+v", byName["n3"].Uptime, found)
			}
		}
		if caughtUp == 0 {
			if err := streamCurrent(sysConn, "S", "n3", backlog); err == nil {
				caughtUp = time.Since(restarted)
			}
		}
	}
	if caughtUp == 0 {
		t.Fatalf("n3 did not catch up in %s", time.Since(restarted).Round(time.Second))
	}
	t.Logf("n3 caught up on %d messages %s after its restart; %d audits, none with a finding", backlog, caughtUp.Round(time.Millisecond), audits)
}

// streamCurrent is nil once stream's leader counts peer as current and
// the peer holds want messages.
func streamCurrent(sysConn *nats.Conn, stream, peer string, want uint64) error {
	replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true}, 3, 2*time.Second)
	if err != nil {
		return err
	}
	current, held := false, false
	for name, rep := range replies {
		for _, acc := range rep.Data.AccountDetails {
			for _, s := range acc.Streams {
				if s.Name != stream || s.Cluster == nil {
					continue
				}
				if name == peer {
					held = s.State.Msgs >= want
				}
				if s.Cluster.Leader == name {
					for _, p := range s.Cluster.Replicas {
						current = current || (p.Name == peer && p.Current)
					}
				}
			}
		}
	}
	if !current || !held {
		return fmt.Errorf("%s: current %t, holds %d messages %t", peer, current, want, held)
	}
	return nil
}
