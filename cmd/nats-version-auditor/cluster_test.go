package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/mod/semver"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render/rendertest"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestConsumerResetAgainstMixedCluster reproduces both hazards of
// $JS.API.CONSUMER.RESET on one 2.14/2.14/2.12 cluster and shows that check
// sees each before it happens. nats-server v2.14.0 answers RESET only on the
// consumer's leader (consumer.go setLeader subscribes processResetReq), which
// a 2.12 leader has no handler for: the request times out. A 2.14 leader
// replicates it as resetSeqOp, entry op 18 (jetstream_cluster.go), which a
// 2.12.15 follower does not know: applyConsumerEntries panics "JetStream
// Cluster Unknown group entry op type: 18" and the server exits.
func TestConsumerResetAgainstMixedCluster(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "worker", 3)
	addStreamAndConsumer(t, app, "AUDIT", "fine", 3)
	if err := natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n3"); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveConsumerLeader(app, "AUDIT", "fine", "n1"); err != nil {
		t.Fatal(err)
	}

	t.Run("blind spot", func(t *testing.T) {
		v := app.ConnectedServerVersion()
		if semver.Compare("v"+v, "v2.14.0") < 0 {
			t.Fatalf("the client's server reports %s, want >= 2.14", v)
		}
		err := natstest.ResetConsumer(app, "ORDERS", "worker", 2*time.Second)
		if !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("RESET of a consumer led by 2.12 returned %v, want a timeout", err)
		}

		res, out := checkJSONOf(t, sys, "n1")
		if res.code != int(findings.Critical) || out.Status != findings.Critical {
			t.Fatalf("check exit %d status %s, want 2 CRITICAL%s", res.code, out.Status, codes(out.Findings))
		}
		leaders := withCode(out.Findings, findings.ConsumerLeaderBelowFloor)
		if len(leaders) != 1 || leaders[0].Stream != "ORDERS" || leaders[0].Consumer != "worker" ||
			leaders[0].Account != "APP" || leaders[0].Server != "n3" || leaders[0].Version != "2.12.15" {
			t.Fatalf("CONSUMER_LEADER_BELOW_FLOOR findings %+v, want exactly APP > ORDERS > worker on n3", leaders)
		}

		if err := natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n1"); err != nil {
			t.Fatal(err)
		}
		_, out = checkJSONOf(t, sys, "n1")
		if got := withCode(out.Findings, findings.ConsumerLeaderBelowFloor); len(got) != 0 {
			t.Fatalf("after the leader moved to n1, CONSUMER_LEADER_BELOW_FLOOR remains: %+v", got)
		}
	})

	t.Run("follower crash", func(t *testing.T) {
		// ORDERS > worker is now led by n1 (2.14.0) with n3 (2.12.15) following.
		res, out := checkJSONOf(t, sys, "n1")
		if res.code != int(findings.Critical) {
			t.Fatalf("check exit %d, want 2%s", res.code, codes(out.Findings))
		}
		var flagged []string
		for _, f := range withCode(out.Findings, findings.ConsumerReplicaBelowFloor) {
			if f.Severity != findings.Critical || f.Server != "n3" || f.Peer != "n1" {
				t.Errorf("unexpected replica finding %+v", f)
			}
			flagged = append(flagged, f.Stream+"/"+f.Consumer)
		}
		if strings.Join(flagged, ",") != "AUDIT/fine,ORDERS/worker" {
			t.Fatalf("CONSUMER_REPLICA_BELOW_FLOOR for %v, want AUDIT/fine and ORDERS/worker", flagged)
		}

		if err := natstest.ResetConsumer(app, "ORDERS", "worker", 5*time.Second); err != nil {
			t.Fatalf("RESET through the 2.14 leader: %v", err)
		}
		if err := sys.WaitExit("n3", 20*time.Second); err != nil {
			t.Fatalf("the 2.12 follower survived the replicated RESET: %v", err)
		}
		if log := sys.Log("n3"); !strings.Contains(log, "Unknown group entry op type: 18") {
			t.Fatalf("n3 exited, but not with the reset-op panic:\n%s", sys.LogTail("n3", 20))
		}

		// Finish the rollout: n3 comes back on 2.14.0 and applies the entry.
		sys.Restart("n3", natstest.Floor)
		// n3 died without saying goodbye, so n1 and n2 still count its old
		// server id; the audit knows n3 just came back and is whole again.
		err := natstest.Eventually(30*time.Second, func() error {
			res, out := checkJSONOf(t, sys, "n1")
			if res.code != exitOK || len(out.Findings) != 0 {
				return fmt.Errorf("exit %d:%s", res.code, codes(out.Findings))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("after n3 was upgraded the audit still finds:%v", err)
		}
	})
}

func TestSuperclusterOfTwoVersions(t *testing.T) {
	gw := func(name, cluster, version string) natstest.Spec {
		return natstest.Spec{Name: name, Version: version, Cluster: cluster, JetStream: true, Gateway: true}
	}
	sys := natstest.Start(t,
		gw("east1", "east", natstest.New), gw("east2", "east", natstest.New),
		gw("west1", "west", natstest.Old), gw("west2", "west", natstest.Old),
	)
	res, out := checkJSONOf(t, sys, "east1")
	if res.code != int(findings.Critical) {
		t.Fatalf("exit %d, want 2%s", res.code, codes(out.Findings))
	}
	if out.Audit.ServersResponded != 4 || out.Audit.ServersExpected != 4 {
		t.Fatalf("audit saw %d of %d servers, want 4 of 4", out.Audit.ServersResponded, out.Audit.ServersExpected)
	}
	var below []string
	for _, f := range withCode(out.Findings, findings.ServerBelowFloor) {
		below = append(below, f.Cluster+"/"+f.Server)
	}
	if strings.Join(below, ",") != "west/west1,west/west2" {
		t.Errorf("SERVER_BELOW_FLOOR for %v, want west/west1 and west/west2", below)
	}
	if mixed := withCode(out.Findings, findings.ClusterMixedVersions); len(mixed) != 0 {
		t.Errorf("each cluster runs one version, yet: %+v", mixed)
	}

	conn := sys.SysArgs("west1")
	rep := runCmd(t, append([]string{"report", "--format", "json"}, conn...)...)
	var inv render.Report
	// report exits with the status, as check does, and lists what makes it.
	if err := json.Unmarshal([]byte(rep.stdout), &inv); err != nil || rep.code != int(findings.Critical) || inv.Status != findings.Critical {
		t.Fatalf("report exit %d (status %s), %v, want 2: %s", rep.code, inv.Status, err, rep.stderr)
	}
	if below := withCode(inv.Findings, findings.ServerBelowFloor); len(below) != 2 {
		t.Errorf("report lists %d SERVER_BELOW_FLOOR findings, want 2:%s", len(below), codes(inv.Findings))
	}
	var clusters []string
	for _, c := range inv.Clusters {
		clusters = append(clusters, fmt.Sprintf("%s:%d:%s", c.Name, c.Servers, strings.Join(c.Versions, "+")))
	}
	if got := strings.Join(clusters, " "); got != "east:2:2.15.3 west:2:2.12.15" {
		t.Errorf("report clusters %s, want east:2:2.15.3 west:2:2.12.15", got)
	}
	text := runCmd(t, append([]string{"report"}, conn...)...)
	if text.code != int(findings.Critical) {
		t.Errorf("report text: exit %d, want 2", text.code)
	}
	for _, want := range []string{`(?m)^west1\s+west\s+-\s+2\.12\.15\s+3\s+below\s`, `(?m)^east\s+2\s+2\.15\.3$`,
		`(?m)^SERVER_BELOW_FLOOR \(CRITICAL, 2\)\n  server west1 runs 2\.12\.15, below the floor 2\.14\.0$`} {
		if !regexp.MustCompile(want).MatchString(text.stdout) {
			t.Errorf("report text does not match %s:\n%s", want, text.stdout)
		}
	}

	// A whole cluster hangs: the other side of the gateway still names it.
	// East counts west's servers once it has heard from each of them, which
	// on a loaded machine can come after the first complete audit: wait for
	// it, or the count below is the system's own undercount.
	sysConn := sys.Connect("east1", natstest.SysUser, natstest.SysPassword)
	err := natstest.Eventually(30*time.Second, func() error {
		stats, err := natstest.Statsz(sysConn, 4, 5*time.Second)
		if err != nil {
			return err
		}
		for _, st := range stats {
			if st.Stats.ActiveServers != 4 {
				return fmt.Errorf("%s counts %d servers", st.Server.Name, st.Stats.ActiveServers)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sys.Pause("west1")
	sys.Pause("west2")
	defer sys.Resume("west1")
	defer sys.Resume("west2")
	res, out = checkJSONOf(t, sys, "east1", "--timeout", "2s")
	if res.code != exitUnknown && res.code != int(findings.Critical) {
		t.Fatalf("exit %d with a whole cluster hung%s", res.code, codes(out.Findings))
	}
	// East's replies need not name the hung servers (no route to them, and
	// JSZ lists no meta peers here): the gateway names their cluster, and the
	// active-server count says how many are missing.
	var missing []string
	for _, f := range withCode(out.Findings, findings.ServerMissing) {
		missing = append(missing, f.Cluster+"/"+f.Server)
	}
	if len(missing) == 0 || !slices.Contains(missing, "west/") {
		t.Errorf("SERVER_MISSING for %v, want the west cluster named%s", missing, codes(out.Findings))
	}
	if out.Audit.ServersExpected != 4 || out.Audit.ServersResponded != 2 {
		t.Errorf("audit saw %d of %d servers, want 2 of 4:%s", out.Audit.ServersResponded, out.Audit.ServersExpected, codes(out.Findings))
	}
	if out.Status != findings.Unknown {
		t.Errorf("status %s, want UNKNOWN: only east answered, and east is fine", out.Status)
	}
	// report says so too: its exit code, and the servers missing by name.
	text = runCmd(t, "report", "-s", sys.URL("east1"), "--user", natstest.SysUser, "--password", natstest.SysPassword, "--timeout", "2s")
	if text.code != exitUnknown || !regexp.MustCompile(`(?m)^UNKNOWN: 2 of 4 expected servers answered`).MatchString(text.stdout) ||
		!regexp.MustCompile(`(?m)^SERVER_MISSING \(UNKNOWN, \d\)\n(  .*\n)*  no server of cluster west answered`).MatchString(text.stdout) {
		t.Errorf("report with west hung: exit %d, want 3 and the missing west servers named:\n%s", text.code, text.stdout)
	}
}

func TestLeafnodeGapsBothWays(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t,
		natstest.Spec{Name: "hub", Version: natstest.Floor, LeafListen: true},
		natstest.Spec{Name: "app-leaf", Version: natstest.Old, LeafRemotes: []natstest.Remote{{Hub: "hub", Accounts: []string{"APP"}}}},
		natstest.Spec{Name: "sys-leaf", Version: natstest.New, LeafRemotes: []natstest.Remote{{Hub: "hub", Accounts: []string{"APP", "SYS"}}}},
	)
	// Wait until the hub lists all three leafnode connections.
	var out render.Check
	err := natstest.Eventually(20*time.Second, func() error {
		_, out = checkJSONOf(t, sys, "hub")
		if len(out.Servers) != 2 || len(withCode(out.Findings, findings.LeafnodeUnaudited)) == 0 {
			return errors.New(codes(out.Findings))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("from the hub: %v", err)
	}
	if names := out.Servers[0].Name + "," + out.Servers[1].Name; names != "hub,sys-leaf" {
		t.Errorf("from the hub the audit saw %s, want hub and sys-leaf", names)
	}
	gaps := withCode(out.Findings, findings.LeafnodeUnaudited)
	if len(gaps) != 1 || gaps[0].Server != "hub" || gaps[0].Peer != "app-leaf" || gaps[0].Account != "APP" {
		t.Errorf("from the hub: LEAFNODE_UNAUDITED %+v, want hub -> app-leaf in APP only", gaps)
	}
	if got := withCode(out.Findings, findings.ServerMissing); len(got) != 0 {
		t.Errorf("a leaf outside the system account is not a missing server: %+v", got)
	}
	if out.Status != findings.Warning {
		t.Errorf("status %s, want WARNING%s", out.Status, codes(out.Findings))
	}

	// From inside the leaf that does not share the system account, the hub
	// is the one nobody can audit.
	_, out = checkJSONOf(t, sys, "app-leaf")
	if len(out.Servers) != 1 || out.Servers[0].Name != "app-leaf" {
		t.Errorf("inside app-leaf the audit saw %+v, want app-leaf alone", out.Servers)
	}
	gaps = withCode(out.Findings, findings.LeafnodeUnaudited)
	if len(gaps) != 1 || gaps[0].Server != "app-leaf" || gaps[0].Peer != "hub" {
		t.Errorf("inside app-leaf: LEAFNODE_UNAUDITED %+v, want app-leaf -> hub", gaps)
	}
}

func TestPausedServerIsMissing(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	if res, out := checkJSONOf(t, sys, "n1"); res.code != exitOK {
		t.Fatalf("healthy cluster: exit %d%s", res.code, codes(out.Findings))
	}
	sys.Pause("n3")
	defer sys.Resume("n3")
	const timeout = 2 * time.Second
	res, out := checkJSONOf(t, sys, "n1", "--timeout", timeout.String())
	if res.code != exitUnknown {
		t.Fatalf("exit %d, want 3%s", res.code, codes(out.Findings))
	}
	missing := withCode(out.Findings, findings.ServerMissing)
	if len(missing) != 1 || missing[0].Server != "n3" {
		t.Fatalf("SERVER_MISSING %+v, want n3 by name", missing)
	}
	if res.elapsed > timeout+time.Second {
		t.Errorf("check took %s with --timeout %s", res.elapsed, timeout)
	}

	// Connecting to the hung server itself runs out of --timeout, and says so
	// in the same words each time (no ephemeral port), so that check --wait
	// prints one progress line for it, not one per attempt.
	args := append([]string{"check", "--timeout", "300ms", "--wait", "1s", "--audit.min-interval", "300ms"}, sys.SysArgs("n3")...)
	res = runCmd(t, args...)
	want := "UNKNOWN cannot connect to NATS at " + sys.URL("n3") + " within --timeout 300ms: "
	if n := len(progressRE.FindAllString(res.stderr, -1)); res.code != exitUnknown || n != 1 || !strings.Contains(res.stderr, want) {
		t.Errorf("check --wait against the hung server: exit %d, %d progress lines, want 3, one line saying %q:\n%s", res.code, n, want, res.stderr)
	}
}

func TestAssetNeedsAPILevelAPeerLacks(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old))
	// A 2.12 meta leader would reject the 2.14 config field outright.
	if err := natstest.MoveMetaLeader(sys.Connect("n1", natstest.SysUser, natstest.SysPassword), "n1"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	// Fast batch publishing needs API level 4 (2.14); 2.12 supports 3.
	err := natstest.AddStream(app, server.StreamConfig{Name: "BATCH", Subjects: []string{"batch.>"}, Replicas: 3,
		Storage: server.FileStorage, AllowBatchPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	_, out := checkJSONOf(t, sys, "n1")
	got := withCode(out.Findings, findings.AssetAPILevelUnsupported)
	if len(got) != 1 || got[0].Stream != "BATCH" || got[0].Server != "n3" || got[0].RequiredLevel != 4 ||
		got[0].ServerLevel == nil || *got[0].ServerLevel != 3 {
		t.Fatalf("ASSET_API_LEVEL_UNSUPPORTED %+v, want BATCH on n3, level 4 > 3%s", got, codes(out.Findings))
	}
	if !strings.Contains(sys.Log("n3"), "Detected unsupported stream 'APP > BATCH'") {
		t.Errorf("n3 did not itself report the stream unsupported:\n%s", sys.LogTail("n3", 10))
	}
}

func TestConnectionFailuresNameTheProblem(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.Floor})
	url := sys.URL("solo")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"wrong password", []string{"-s", url, "--user", natstest.SysUser, "--password", "not-the-password"}, "authentication failed"},
		{"user outside the system account", []string{"-s", url, "--user", natstest.AppUser, "--password", natstest.AppPassword}, `user "app" is not in the system account`},
		{"unreachable", []string{"-s", "nats://127.0.0.1:1", "--timeout", "1s"}, "cannot reach NATS at nats://127.0.0.1:1"},
		{"password in the URL", []string{"-s", "nats://sys:not-the-password@" + strings.TrimPrefix(url, "nats://")}, "authentication failed at nats://127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range []string{"text", "json", "nagios"} {
				res := runCmd(t, append([]string{"check", "--format", format}, tt.args...)...)
				if res.code != exitUnknown {
					t.Errorf("%s: exit %d, want 3", format, res.code)
				}
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
					t.Errorf("%s: stderr %q, want one line saying %q", format, res.stderr, tt.want)
				}
				if strings.Contains(res.stdout+res.stderr, "not-the-password") || strings.Contains(res.stdout+res.stderr, natstest.AppPassword) {
					t.Errorf("%s: a password leaked: %s%s", format, res.stdout, res.stderr)
				}
				// A complete document on stdout in every format but text, so
				// that `| jq .status` has an answer.
				switch format {
				case "json":
					var out render.Check
					if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Status != findings.Unknown ||
						!strings.Contains(out.Error, tt.want) || len(withCode(out.Findings, findings.AuditIncomplete)) == 0 {
						t.Errorf("json: stdout %q (%v), want a document with status UNKNOWN and an error saying %q", res.stdout, err, tt.want)
					}
					if nulls := rendertest.UnexpectedNulls([]byte(res.stdout)); len(nulls) > 0 {
						t.Errorf("json: null where a list belongs: %s", strings.Join(nulls, ", "))
					}
				case "nagios":
					if !strings.HasPrefix(res.stdout, "NATS VERSIONS UNKNOWN - ") || !strings.Contains(res.stdout, tt.want) {
						t.Errorf("nagios: stdout %q", res.stdout)
					}
				}
			}
			res := runCmd(t, append([]string{"report", "--format", "json"}, tt.args...)...)
			var inv render.Report
			if err := json.Unmarshal([]byte(res.stdout), &inv); err != nil || res.code != exitUnknown || inv.Status != findings.Unknown || !strings.Contains(inv.Error, tt.want) {
				t.Errorf("report --format json: exit %d, stdout %q (%v)", res.code, res.stdout, err)
			}
			if nulls := rendertest.UnexpectedNulls([]byte(res.stdout)); len(nulls) > 0 {
				t.Errorf("report --format json: null where a list belongs: %s", strings.Join(nulls, ", "))
			}
			res = runCmd(t, append([]string{"plan", "--to", "2.14.0", "--format", "json"}, tt.args...)...)
			var plan render.Plan
			if err := json.Unmarshal([]byte(res.stdout), &plan); err != nil || res.code != exitUnknown || plan.Plan == nil ||
				plan.Status != findings.Unknown || !strings.Contains(plan.Error, tt.want) || plan.Steps == nil {
				t.Errorf("plan --format json: exit %d, stdout %q (%v)", res.code, res.stdout, err)
			}
			if nulls := rendertest.UnexpectedNulls([]byte(res.stdout)); len(nulls) > 0 {
				t.Errorf("plan --format json: null where a list belongs: %s", strings.Join(nulls, ", "))
			}
		})
	}
}

// TestGateNarrowedToNothing: a gate narrowed by a pattern that matches
// nothing the audit saw is UNKNOWN (exit 3) and names the pattern, in every
// format; a pattern that matches is not reported.
func TestGateNarrowedToNothing(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.Floor, JetStream: true})
	addStreamAndConsumer(t, sys.Connect("solo", natstest.AppUser, natstest.AppPassword), "ORDERS", "worker", 1)
	conn := sys.SysArgs("solo")
	if res := runCmd(t, append([]string{"check", "--stream", "ORDERS", "--consumer", "work*", "--account", "APP"}, conn...)...); res.code != exitOK {
		t.Fatalf("patterns that match: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--stream", "ORDRES"}, `stream pattern "ORDRES" matches no stream the audit saw`},
		{[]string{"--stream", "ORDERS", "--consumer", "wroker"}, `consumer pattern "wroker" matches no consumer the audit saw in the streams selected`},
		{[]string{"--account", "app"}, `account pattern "app" matches no account the audit saw`},
	} {
		for _, format := range []string{"text", "json", "nagios"} {
			res := runCmd(t, append(append([]string{"check", "--format", format}, tt.args...), conn...)...)
			said := res.stdout
			if format == "json" {
				var out render.Check
				if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
					t.Fatalf("not JSON: %v: %s", err, res.stdout)
				}
				said = codes(withCode(out.Findings, findings.AuditIncomplete))
			}
			want := tt.want
			if format == "nagios" {
				// The line has room for the message's start, which names
				// the pattern.
				want = want[:40]
			}
			if res.code != exitUnknown || !strings.Contains(said, want) {
				t.Errorf("%v --format %s: exit %d, want 3 and stdout saying %q:\n%s", tt.args, format, res.code, want, res.stdout)
			}
		}
	}
}
