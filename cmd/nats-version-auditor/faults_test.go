package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// Each fault below is injected into real servers. The audit must end within
// --timeout and a small margin, name what it missed, never exit 0 while it
// missed something, and be complete again once the system has recovered.

func TestFaultServerKilledMidAudit(t *testing.T) {
	sys := newCluster(t)
	// n3 stops answering, the audit starts and is waiting for it, then n3
	// dies for good.
	sys.Pause("n3")
	var stdout, stderr lockedBuffer
	start := time.Now()
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), append([]string{"check", "--format", "json", "--log.level", "debug", "--timeout", faultTimeout.String()}, sys.SysArgs("n1")...), &stdout, &stderr)
	}()
	// The audit is under way once the servers that still answer have
	// replied to their own requests.
	err := natstest.Eventually(faultTimeout, func() error {
		if log := stderr.String(); !strings.Contains(log, "server=n1 request=LEAFZ") || !strings.Contains(log, "server=n2 request=LEAFZ") {
			return errors.New("the audit has not reached n1 and n2 yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sys.Kill("n3")
	code := <-done
	elapsed := time.Since(start)
	var out render.Check
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("no JSON: %v\n%s", err, stderr.String())
	}
	r := struct {
		res result
		out render.Check
	}{result{code: code, elapsed: elapsed}, out}
	if r.res.code != exitUnknown {
		t.Fatalf("exit %d, want 3:%s", r.res.code, codes(r.out.Findings))
	}
	if r.res.elapsed > faultTimeout+margin {
		t.Errorf("check took %s", r.res.elapsed)
	}
	// Depending on how far n3 got, it is missing altogether or answered
	// STATSZ and then not LEAFZ/JSZ: the findings name n3 where a server
	// named it (a peer that has already seen the route close no longer
	// does; then it is counted), and nothing else is found.
	for _, f := range r.out.Findings {
		if (f.Code != findings.ServerMissing && f.Code != findings.AuditIncomplete) || (f.Server != "n3" && f.Count == 0) {
			t.Errorf("unexpected finding %s on %q: %s", f.Code, f.Server, f.Message)
		}
	}
	if len(r.out.Findings) == 0 {
		t.Error("no finding names n3")
	}
	// Killed while paused, n3 never ran again: nothing it could have said
	// reached the audit.
	for _, s := range r.out.Servers {
		if s.Name == "n3" {
			t.Errorf("n3 answered the audit although it was killed while paused")
		}
	}
	sys.Restart("n3", "")
	awaitComplete(t, sys, "n1", 3)
}

// TestFaultServerAnsweredThenDied is the state behind an "exit 0" that
// TestFaultServerKilledMidAudit once saw on a loaded machine: the harness
// resumed the paused n3 before killing it, and in the moment between the two
// signals n3 answered the ping queued for it, and then its LEAFZ and JSZ. The
// audit heard every server and was complete. It reports n3 as the server it
// saw; the next audit reports it missing, named by its peers.
func TestFaultServerAnsweredThenDied(t *testing.T) {
	sys := newCluster(t)
	sys.Pause("n3")
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), append([]string{"check", "--format", "json", "--log.level", "debug", "--timeout", "30s"}, sys.SysArgs("n1")...), &stdout, &stderr)
	}()
	waitLog := func(what string, lines ...string) {
		t.Helper()
		err := natstest.Eventually(30*time.Second, func() error {
			for _, l := range lines {
				if !strings.Contains(stderr.String(), l) {
					return fmt.Errorf("%s: no %q yet", what, l)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitLog("n1 and n2 answered", "server=n1 request=JSZ", "server=n2 request=JSZ")
	sys.Resume("n3")
	waitLog("n3 answered", "server=n3 request=JSZ", "server=n3 request=LEAFZ")
	sys.Kill("n3")
	code := <-done
	var out render.Check
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("no JSON: %v\n%s", err, stderr.String())
	}
	if code != exitOK || out.Audit.ServersResponded != 3 || len(out.Findings) != 0 {
		t.Fatalf("exit %d with %d servers:%s", code, out.Audit.ServersResponded, codes(out.Findings))
	}
	after := checkDuringFault(t, sys, "n1")
	if missing := withCode(after.Findings, findings.ServerMissing); len(missing) == 0 || missing[0].Server != "n3" {
		t.Errorf("after n3 died: SERVER_MISSING %+v", missing)
	}
}

// TestFaultServersStoppedGracefully stops servers the way a rolling upgrade
// or a pod deletion does. A stopped server leaves the others' routes and
// active-server counts at once, but it stays a peer of the meta group and of
// every RAFT group it was in: the audit still expects it.
func TestFaultServersStoppedGracefully(t *testing.T) {
	t.Run("named by a replicated consumer", func(t *testing.T) {
		t.Parallel()
		sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
		app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
		addStreamAndConsumer(t, app, "LOCAL", "r1", 1, "node:n1")
		addStreamAndConsumer(t, app, "ORDERS", "worker", 3)
		awaitComplete(t, sys, "n1", 3)
		stopGracefully(t, sys, "n2", "n3")
		for _, narrow := range [][]string{nil, {"--stream", "LOCAL"}} {
			out := checkDuringFault(t, sys, "n1", narrow...)
			var named []string
			for _, f := range withCode(out.Findings, findings.ServerMissing) {
				named = append(named, f.Server)
			}
			if !slices.Equal(named, []string{"n2", "n3"}) || out.Audit.ServersExpected != 3 || out.Status != findings.Unknown {
				t.Errorf("check %v: %s, expected %d, SERVER_MISSING %v:%s", narrow, out.Status, out.Audit.ServersExpected, named, codes(out.Findings))
			}
		}
	})
	// Before 2.15 only the meta leader lists the group's replicas (2.15.3
	// lists them, offline ones included, on every member).
	t.Run("counted by the meta group alone", func(t *testing.T) {
		t.Parallel()
		sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Floor))
		addStreamAndConsumer(t, sys.Connect("n1", natstest.AppUser, natstest.AppPassword), "LOCAL", "r1", 1, "node:n1")
		awaitComplete(t, sys, "n1", 3)
		// With two of three gone the meta group has no leader, and a
		// leaderless group lists no replicas: only its size remembers them.
		// Until n1 notices it lost quorum it still leads and names the
		// others as offline replicas; every audit on the way fails closed.
		stopGracefully(t, sys, "n2", "n3")
		var missing []findings.Finding
		err := natstest.Eventually(60*time.Second, func() error {
			out := checkDuringFault(t, sys, "n1")
			if out.Audit.ServersExpected != 3 {
				t.Errorf("expected %d servers, want 3:%s", out.Audit.ServersExpected, codes(out.Findings))
			}
			missing = withCode(out.Findings, findings.ServerMissing)
			if len(missing) != 1 || missing[0].Server != "" {
				return fmt.Errorf("SERVER_MISSING %+v", missing)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if missing[0].Count != 2 || !strings.Contains(missing[0].Message, "meta group has 3 peers") {
			t.Errorf("SERVER_MISSING %+v", missing[0])
		}
	})
}

func TestFaultServerRestarted(t *testing.T) {
	sys := newCluster(t)
	sys.Kill("n3")
	out := checkDuringFault(t, sys, "n1")
	if len(withCode(out.Findings, findings.ServerMissing)) == 0 {
		t.Errorf("with n3 down: no SERVER_MISSING:%s", codes(out.Findings))
	}
	// Same name, same store, a new server id.
	sys.Restart("n3", "")
	awaitComplete(t, sys, "n1", 3)
}

func TestFaultMetaLeaderStepsDown(t *testing.T) {
	sys := newCluster(t)
	sysConn := sys.Connect("n2", natstest.SysUser, natstest.SysPassword)
	// Step the meta leader down again and again while audits run: none may
	// pass unless it saw everything, and none may hang.
	stop := make(chan struct{})
	stepped := make(chan int, 1)
	go func() {
		n := 0
		defer func() { stepped <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := sysConn.Request("$JS.API.META.LEADER.STEPDOWN", nil, time.Second); err == nil {
				n++
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for range 5 {
		res, out := checkJSONOf(t, sys, "n1", "--timeout", faultTimeout.String())
		if res.elapsed > faultTimeout+margin {
			t.Errorf("check took %s", res.elapsed)
		}
		if res.code == exitOK && (out.Audit.ServersResponded != 3 || len(out.Findings) != 0) {
			t.Errorf("exit 0 from an audit that saw %d servers:%s", out.Audit.ServersResponded, codes(out.Findings))
		}
		if res.code != exitOK && res.code != exitUnknown && res.code != int(findings.Warning) {
			t.Errorf("exit %d during meta leader changes:%s", res.code, codes(out.Findings))
		}
	}
	close(stop)
	if n := <-stepped; n == 0 {
		t.Fatal("the meta leader never stepped down: the fault was not injected")
	}
	awaitComplete(t, sys, "n1", 3)
}

func TestFaultLeafnodeLinkDropsAndReturns(t *testing.T) {
	sys := natstest.Start(t,
		natstest.Spec{Name: "hub", Version: natstest.New, LeafListen: true},
		natstest.Spec{Name: "leaf", Version: natstest.New, LeafRemotes: []natstest.Remote{{Hub: "hub", Accounts: []string{"APP", "SYS"}}}},
	)
	awaitComplete(t, sys, "hub", 2)
	// A hub forgets a leaf whose link is gone: no LEAFZ entry, no count,
	// nothing names it. A gate that knows the size of its system says so
	// with --expect.
	sys.Kill("leaf")
	res, out := checkJSONOf(t, sys, "hub", "--timeout", faultTimeout.String(), "--expect", "2")
	if res.code != exitUnknown || res.elapsed > faultTimeout+margin {
		t.Fatalf("exit %d after %s with the leaf gone:%s", res.code, res.elapsed, codes(out.Findings))
	}
	if missing := withCode(out.Findings, findings.ServerMissing); len(missing) != 1 || missing[0].Count != 1 {
		t.Errorf("SERVER_MISSING %+v, want one unnamed server", missing)
	}
	sys.Restart("leaf", "")
	err := natstest.Eventually(30*time.Second, func() error {
		res, out := checkJSONOf(t, sys, "hub", "--expect", "2")
		if res.code != exitOK {
			return fmt.Errorf("exit %d:%s", res.code, codes(out.Findings))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFaultOversizedReply(t *testing.T) {
	sys := newCluster(t)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	for i := range 30 {
		addStreamAndConsumer(t, app, "ORDERS", fmt.Sprintf("w%02d", i), 3)
	}
	// STATSZ and LEAFZ replies are a few KiB; JSZ with 31 consumers is more.
	res, out := checkJSONOf(t, sys, "n1", "--audit.max-reply-bytes", "8KiB")
	if res.code != exitUnknown {
		t.Fatalf("exit %d, want 3:%s", res.code, codes(out.Findings))
	}
	var dropped []string
	for _, f := range withCode(out.Findings, findings.AuditIncomplete) {
		if !strings.Contains(f.Message, "exceeds the size limit") {
			t.Errorf("unexpected AUDIT_INCOMPLETE: %s", f.Message)
		}
		dropped = append(dropped, f.Server)
	}
	if len(dropped) == 0 {
		t.Fatal("no reply was dropped at 8 KiB")
	}

	// Compressed replies are held to the limit once inflated.
	res, out = checkJSONOf(t, sys, "n1", "--audit.max-reply-bytes", "8KiB", "--audit.compress")
	if res.code != exitUnknown || len(withCode(out.Findings, findings.AuditIncomplete)) != len(dropped) {
		t.Fatalf("with --compress: exit %d:%s", res.code, codes(out.Findings))
	}
	// And, within the limit, read the same as plain ones.
	_, plain := checkJSONOf(t, sys, "n1")
	_, compressed := checkJSONOf(t, sys, "n1", "--audit.compress")
	if plain.Status != findings.OK || compressed.Status != plain.Status || compressed.Audit.ServersResponded != 3 {
		t.Fatalf("plain %s, compressed %s (%d servers):%s", plain.Status, compressed.Status, compressed.Audit.ServersResponded, codes(compressed.Findings))
	}
}

func TestServeSurvivesLosingNATS(t *testing.T) {
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.New, JetStream: true})
	d := startServe(t, append(sys.SysArgs("solo"), "--audit.min-interval", "0s", "--timeout", "1s")...)
	mfs := d.scrape(t)
	if v := value(mfs, "nats_version_auditor_up"); v != 1 {
		t.Fatalf("up = %v before the outage", v)
	}
	lastSuccess := value(mfs, "nats_version_auditor_last_success_timestamp_seconds")

	sys.Kill("solo")
	var during map[string]float64
	err := natstest.Eventually(10*time.Second, func() error {
		mfs := d.scrape(t)
		during = map[string]float64{}
		for _, n := range []string{"nats_version_auditor_up", "nats_version_auditor_last_success_timestamp_seconds", "nats_version_auditor_last_audit_timestamp_seconds"} {
			during[n] = value(mfs, n)
		}
		if during["nats_version_auditor_up"] != 0 || during["nats_version_auditor_last_audit_timestamp_seconds"] <= lastSuccess {
			return errors.New("no failed audit yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("with NATS gone: %v %v", err, during)
	}
	if during["nats_version_auditor_last_success_timestamp_seconds"] != lastSuccess {
		t.Errorf("last success moved during the outage: %v -> %v", lastSuccess, during["nats_version_auditor_last_success_timestamp_seconds"])
	}
	if code, _ := d.Get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz %d during the outage", code)
	}

	sys.Restart("solo", "")
	err = natstest.Eventually(20*time.Second, func() error {
		if v := value(d.scrape(t), "nats_version_auditor_up"); v != 1 {
			return fmt.Errorf("up = %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("after NATS came back the daemon did not recover by itself: %v\n%s", err, d.stderr)
	}
}
