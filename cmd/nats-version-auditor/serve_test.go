package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render/rendertest"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestServeScopes runs the daemon against a real mixed cluster: once for the
// whole cluster, and once per server as the sidecars would. The sidecars'
// series add up to the cluster's, each exactly once.
func TestServeScopes(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "led-by-old", 3)
	addStreamAndConsumer(t, app, "BILLING", "followed-by-old", 3)
	addStreamAndConsumer(t, app, "LOCAL", "r1-on-old", 1, "node:n3")
	if err := natstest.MoveConsumerLeader(app, "ORDERS", "led-by-old", "n3"); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveConsumerLeader(app, "BILLING", "followed-by-old", "n2"); err != nil {
		t.Fatal(err)
	}

	cluster := startServe(t, sys.SysArgs("n1")...)
	all := cluster.scrape(t)
	if v := value(all, "nats_version_auditor_up"); v != 1 {
		t.Fatalf("up = %v, want 1\n%s", v, cluster.stderr)
	}
	if v := value(all, "nats_version_auditor_status"); v != 2 {
		t.Errorf("status = %v, want 2", v)
	}
	wantLeaders := []string{
		"nats_version_auditor_consumer_leader_below_floor{account=APP,account_name=,consumer=led-by-old,server_name=n3,stream=ORDERS} 1",
		"nats_version_auditor_consumer_leader_below_floor{account=APP,account_name=,consumer=r1-on-old,server_name=n3,stream=LOCAL} 1",
	}
	if got := series(all, "nats_version_auditor_consumer_leader_below_floor"); !slices.Equal(got, wantLeaders) {
		t.Errorf("cluster scope leader series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLeaders, "\n"))
	}
	wantReplicas := []string{"nats_version_auditor_consumer_replica_below_floor{account=APP,account_name=,consumer=followed-by-old,server_name=n3,stream=BILLING} 1"}
	if got := series(all, "nats_version_auditor_consumer_replica_below_floor"); !slices.Equal(got, wantReplicas) {
		t.Errorf("cluster scope replica series: %v, want %v", got, wantReplicas)
	}
	if n := len(series(all, "nats_version_auditor_server_info")); n != 3 {
		t.Errorf("%d server_info series, want 3", n)
	}

	// Every family about the system, not about the auditor itself, adds up
	// over the sidecars to the cluster scope's, series by series; and each
	// series but the per-code findings counts comes from exactly one sidecar.
	sums := map[string]float64{}
	exporters := map[string]int{}
	for _, name := range []string{"n1", "n2", "n3"} {
		d := startServe(t, append(sys.SysArgs(name), "--scope", "server")...)
		mfs := d.scrape(t)
		if v := value(mfs, "nats_version_auditor_up"); v != 1 {
			t.Fatalf("sidecar %s: up = %v\n%s", name, v, d.stderr)
		}
		if got := series(mfs, "nats_version_auditor_server_info"); len(got) != 1 || !strings.Contains(got[0], "server_name="+name+",") {
			t.Errorf("sidecar %s exports server_info %v, want its own alone", name, got)
		}
		for key, v := range systemSeries(mfs) {
			sums[key] += v
			exporters[key]++
		}
	}
	want := systemSeries(all)
	if len(want) < 20 {
		t.Fatalf("only %d system series at cluster scope: %v", len(want), want)
	}
	for key, v := range want {
		if sums[key] != v {
			t.Errorf("%s: sidecars sum to %v, the cluster scope says %v", key, sums[key], v)
		}
		// Counts by code, and of pin changes, are each sidecar's part.
		if n := exporters[key]; n != 1 && !strings.HasPrefix(key, "nats_version_auditor_findings{") &&
			!strings.HasPrefix(key, "nats_version_auditor_consumer_pin_changes_total{") {
			t.Errorf("%s exported by %d sidecars", key, n)
		}
	}
	for key := range sums {
		if _, ok := want[key]; !ok {
			t.Errorf("%s exported by a sidecar, not by the cluster scope", key)
		}
	}
}

// selfFamilies are about the auditor that exports them, not the system.
var selfFamilies = []string{"up", "status", "last_success_timestamp_seconds", "last_audit_timestamp_seconds",
	"audit_duration_seconds", "audits_total", "audit_checks_total", "audits_started_total", "last_check_timestamp_seconds", "leaders_heard_timestamp_seconds", "floor_info", "build_info", "asset_series_dropped",
	"events_up", "events_received_total", "event_audits_total"}

func TestServeEndpointsAndShutdown(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "1h")...)

	if code, body := d.Get(t, "/"); code != http.StatusOK || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("landing page: %d %q", code, body)
	}
	d.waitReady(t, 10*time.Second)

	// However many scrapes arrive within the interval, one audit serves them.
	for range 5 {
		mfs := d.scrape(t)
		if v := value(mfs, "nats_version_auditor_audits_total"); v != 1 {
			t.Fatalf("audits_total = %v after repeated scrapes within --audit.min-interval, want 1", v)
		}
	}

	if code := d.stop(t); code != exitOK {
		t.Fatalf("exit %d after SIGTERM: %s", code, d.stderr)
	}
}

// TestServeStaysReadyDuringOutage: readiness means the process can answer. With one server of
// the cluster stopped, as at every step of a rolling upgrade, /readyz stays 200 (the Service
// keeps the pod), the consumer API answers (a consumer whose peers are all up is safe, from an
// audit that says it is incomplete), the report says what is missing, and only /completez,
// which no probe uses, and the metrics say the audit is incomplete.
func TestServeStaysReadyDuringOutage(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "LOCAL", "on-n1", 1, "node:n1")
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "0s", "--timeout", "2s")...)
	if err := natstest.Eventually(10*time.Second, func() error {
		for _, p := range []string{"/readyz", "/completez"} {
			if code, body := d.Get(t, p); code != http.StatusOK {
				return fmt.Errorf("%s %d %s", p, code, body)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := sys.Stop("n3", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	var cons exporter.APIConsumer
	if err := natstest.Eventually(20*time.Second, func() error {
		code, body := d.Get(t, "/api/v1/consumers/APP/LOCAL/on-n1?max_age=0s")
		if code != http.StatusOK {
			return fmt.Errorf("consumer API %d %s", code, body)
		}
		cons = exporter.APIConsumer{}
		if err := json.Unmarshal([]byte(body), &cons); err != nil {
			return err
		}
		if cons.Audit.Complete {
			return fmt.Errorf("the audit is still complete with n3 stopped: %s", body)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if cons.Reset != findings.ResetSafe || cons.Leader != "n1" {
		t.Errorf("consumer on n1 alone with n3 stopped: reset %q, leader %q, want safe on n1 (%s)", cons.Reset, cons.Leader, cons.Reason)
	}
	if code, body := d.Get(t, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d %q during the outage, want 200: the Service would drop the API", code, body)
	}
	if code, _ := d.Get(t, "/completez"); code != http.StatusServiceUnavailable {
		t.Errorf("/completez %d after an incomplete audit, want 503", code)
	}
	code, body := d.Get(t, "/api/v1/report")
	var rep exporter.APIReport
	if err := json.Unmarshal([]byte(body), &rep); code != http.StatusOK || err != nil {
		t.Fatalf("report API %d %v: %s", code, err, body)
	}
	missing := slices.ContainsFunc(rep.Findings, func(f findings.Finding) bool { return f.Code == findings.ServerMissing && f.Server == "n3" })
	if rep.Status != findings.Unknown || !missing || rep.Audit.ServersResponded != 2 {
		t.Errorf("report during the outage: status %s, n3 missing %v, %d of %d servers responded; want UNKNOWN, n3 missing, 2",
			rep.Status, missing, rep.Audit.ServersResponded, rep.Audit.ServersExpected)
	}
	mfs := d.scrape(t)
	if v := value(mfs, "nats_version_auditor_up"); v != 0 {
		t.Errorf("up = %v with n3 stopped, want 0", v)
	}
	if code, _ := d.Get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d, want 200 whatever the audit says", code)
	}
}

// TestServeReadyzWaitsForAnAudit: before any audit has finished there is nothing to answer
// from, so the pod is not ready; an audit that reached no server is an answer (the API says
// so with 503 and the reason), so it is ready then.
func TestServeReadyzWaitsForAnAudit(t *testing.T) {
	t.Parallel()
	d := startServe(t, "-s", "nats://"+natstest.FreeAddr(t), "--audit.min-interval", "1h")
	d.waitReady(t, 10*time.Second)
	if code, _ := d.Get(t, "/completez"); code != http.StatusServiceUnavailable {
		t.Errorf("/completez %d with NATS unreachable, want 503", code)
	}
	if code, body := d.Get(t, "/api/v1/consumers/APP/S/C"); code != http.StatusServiceUnavailable || !strings.Contains(body, "reached no server") {
		t.Errorf("consumer API with NATS unreachable: %d %s", code, body)
	}
	// The report of an audit that reached no server is check's document:
	// UNKNOWN, and lists where lists belong.
	code, body := d.Get(t, "/api/v1/report")
	var rep exporter.APIReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK || rep.Status != findings.Unknown ||
		len(withCode(rep.Findings, findings.AuditIncomplete)) != 1 {
		t.Errorf("report API with NATS unreachable: %d %s (%v)", code, body, err)
	}
	if nulls := rendertest.UnexpectedNulls([]byte(body)); len(nulls) > 0 {
		t.Errorf("report API with NATS unreachable: null where a list belongs: %s", strings.Join(nulls, ", "))
	}
}

// TestServeExportsTheTableHazards: on a real cluster of 2.15.3, 2.14.0 and
// 2.11.12, with a floor all three meet, serve exports the findings of both
// axes of the table on their gauges before anything goes wrong: an R3
// mirror filtered to one subject of its origin, for which the 2.15.3 server
// proposes a delete range when it leads and the origin has a gap, and on
// which the 2.11.12 follower panics (ASSET_OP_CRASHES_FOLLOWER,
// auditor.TestOpDeleteRangeFromAMirrorLeader); and an R3 consumer with the
// prioritized priority policy, which the 2.11.12 server never loads
// (ASSET_PEER_NOT_RUNNING, auditor.TestPrioritizedConsumerNotLoadedByAnOldPeer).
func TestServeExportsTheTableHazards(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.FirstLevels))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	// The newest server creates the assets, as in a rollout's last steps.
	if err := natstest.MoveMetaLeader(sysConn, "n1", "n1", "n2", "n3"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	for _, cfg := range []server.StreamConfig{
		{Name: "O", Subjects: []string{"o.>"}, Replicas: 1, Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n1"}}},
		{Name: "M", Replicas: 3, Storage: server.FileStorage, Mirror: &server.StreamSource{Name: "O", FilterSubject: "o.a"}},
		{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage},
	} {
		if err := natstest.AddStream(app, cfg); err != nil {
			t.Fatalf("%s: %v", cfg.Name, err)
		}
	}
	// 2.11.12 cannot decode the consumer and answers a create it handles
	// with an error; the 2.15.3 meta leader creates it all the same.
	_ = natstest.AddConsumer(app, "S", server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit, Replicas: 3,
		PriorityGroups: []string{"g"}, PriorityPolicy: server.PriorityPrioritized})
	if err := natstest.Eventually(30*time.Second, func() error {
		_, err := natstest.ConsumerInfo(app, "S", "C")
		return err
	}); err != nil {
		t.Fatal(err)
	}

	d := startServe(t, append(sys.SysArgs("n1"), "--floor", "2.11.0")...)
	want := map[string][]string{
		"nats_version_auditor_asset_op_follower_cannot_apply": {
			"nats_version_auditor_asset_op_follower_cannot_apply{account=APP,account_name=,consumer=,op=delete_range,server_name=n3,stream=M,verdict=crashes_follower} 1"},
		"nats_version_auditor_asset_peer_lacks_feature": {
			"nats_version_auditor_asset_peer_lacks_feature{account=APP,account_name=,consumer=C,feature=priority_prioritized,server_name=n3,stream=S,verdict=not_running} 1"},
	}
	// The consumer reaches every server's JSZ a little after its info
	// answers: poll.
	err := natstest.Eventually(30*time.Second, func() error {
		mfs := d.scrape(t)
		for name, w := range want {
			if got := series(mfs, name); !slices.Equal(got, w) {
				return fmt.Errorf("%s:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(w, "\n"))
			}
		}
		if v := value(mfs, "nats_version_auditor_status"); v != float64(findings.Critical) {
			return fmt.Errorf("status %v, want CRITICAL whatever the floor", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, d.stderr)
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		if !sys.Running(name) {
			t.Fatalf("%s exited before anything was proposed", name)
		}
	}

	// The crash: n1 leads M, and a message outside its filter makes a gap.
	if err := natstest.MoveStreamLeader(app, "M", "n1"); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"o.b", "o.a"} {
		if _, err := natstest.Publish(app, subj, []byte("x"), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := sys.WaitExit("n3", 60*time.Second); err != nil {
		t.Fatalf("the 2.11.12 follower survived the delete range: %v", err)
	}
	if !strings.Contains(sys.Log("n3"), "Unknown group entry op type: 15") {
		t.Fatalf("n3 exited, but not with the delete-range panic:\n%s", sys.LogTail("n3", 20))
	}
	// What serve last saw of n3 keeps the finding: the entry is in M's
	// log, and n3 panics on it again on every restart on 2.11.12. The
	// status stays CRITICAL, not the UNKNOWN of a server missing alone.
	err = natstest.Eventually(60*time.Second, func() error {
		mfs := d.scrape(t)
		if v := labelled(mfs, "nats_version_auditor_server_missing", "server_name=n3"); v != 1 {
			return fmt.Errorf("server_missing{n3} = %v: no audit since the crash", v)
		}
		name := "nats_version_auditor_asset_op_follower_cannot_apply"
		if got := series(mfs, name); !slices.Equal(got, want[name]) {
			return fmt.Errorf("after the crash %s:\n%s", name, strings.Join(got, "\n"))
		}
		if v := value(mfs, "nats_version_auditor_status"); v != float64(findings.Critical) {
			return fmt.Errorf("status %v after the crash, want CRITICAL", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, d.stderr)
	}
}
