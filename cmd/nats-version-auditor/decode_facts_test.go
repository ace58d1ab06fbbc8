package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// The decode facts: what servers older than a feature do with an asset
// whose config uses it, with no application sending anything to them. The
// oracle is the old server itself: its log, its JSZ, whether its process is
// still alive. releases.Features cites these tests.

// crashWait bounds the wait for a 2.12.15 meta snapshot: the ticker runs
// every minute from the server's start (2.12.15 jetstream_cluster.go:1580),
// and a busy machine can push the setup past the first tick.
const crashWait = 200 * time.Second

// TestFactUndecodableAssets runs n1, n2 2.14.0 (one of them the meta leader) with
// n3 2.12.15, n4 2.11.12 and n5 2.10.27, and R1 assets on n1, n4 and n5
// using flow-control acks (2.14), the prioritized priority policy (2.12),
// atomic batch (2.12) and fast batch (2.14).
func TestFactUndecodableAssets(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t,
		node("n1", natstest.Floor), node("n2", natstest.Floor),
		node("n3", natstest.Old), node("n4", natstest.FirstLevels), node("n5", natstest.NoLevels),
	)
	started := time.Now()
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	peers := []string{"n1", "n2", "n3", "n4", "n5"}
	if err := natstest.MoveMetaLeader(sysConn, "n1", peers...); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	stream := func(name, host string, extra map[string]any) {
		cfg := map[string]any{"name": name, "subjects": []string{strings.ToLower(name) + ".>"}, "num_replicas": 1,
			"storage": "file", "placement": map[string]any{"tags": []string{"node:" + host}}}
		for k, v := range extra {
			cfg[k] = v
		}
		createAsync(t, app, "$JS.API.STREAM.CREATE."+name, cfg)
	}
	running := func() int {
		n := 0
		for _, name := range []string{"n1", "n2", "n3", "n4", "n5"} {
			if sys.Running(name) {
				n++
			}
		}
		return n
	}
	assets := func() map[string]map[string]bool {
		var got map[string]map[string]bool
		err := natstest.Eventually(20*time.Second, func() error {
			var err error
			got, err = assetsOn(sysConn, running())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := natstest.Eventually(30*time.Second, func() error {
			if !cond() {
				return fmt.Errorf("not yet: %s", what)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// Streams first, each awaited on its host, so that every meta entry
	// below is applied in a batch of its own: 2.11 and 2.10 skip the rest
	// of a batch after an entry they cannot decode (2.11.12
	// jetstream_cluster.go:2163-2167).
	leader := "n1"
	for _, s := range []struct{ name, host string }{{"FC1", "n1"}, {"FC4", "n4"}, {"FC5", "n5"}, {"PR1", "n1"}, {"PR4", "n4"}, {"PR5", "n5"}} {
		// A meta leader can refuse a placement its peers allow ("no
		// suitable peers for placement, tags not matched ['node:n5']" for
		// 30 s from n1 in one CI run, with every peer current): ask again
		// until the host has the stream (the same create of a stream that
		// exists adds no meta entry), and after 15 s hand the meta
		// leadership to the other 2.14.0 server, which serves this test as
		// well.
		asked := time.Now()
		err := natstest.Eventually(90*time.Second, func() error {
			stream(s.name, s.host, nil)
			if assets()[s.host][s.name] {
				return nil
			}
			if time.Since(asked) > 15*time.Second {
				leader = map[string]string{"n1": "n2", "n2": "n1"}[leader]
				t.Logf("%s not placed on %s for 15 s: moving the meta leader to %s", s.name, s.host, leader)
				if err := natstest.MoveMetaLeader(sysConn, leader, peers...); err != nil {
					return err
				}
				asked = time.Now()
			}
			return fmt.Errorf("not yet: %s on %s", s.name, s.host)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Streams with fields 2.11.12 does not know, on 2.11.12: held offline.
	for _, s := range []struct{ name, field string }{{"AT4", "allow_atomic"}, {"FB4", "allow_batched"}} {
		line := fmt.Sprintf(`Detected unsupported stream 'APP > %s': unsupported - config error: unknown field %q`, s.name, s.field)
		waitFor("n4 logs "+line, func() bool {
			stream(s.name, "n4", map[string]any{s.field: true})
			return len(logLines(sys, "n4", line)) > 0
		})
		if assets()["n4"][s.name] {
			t.Errorf("2.11.12 lists %s, held offline, in its JSZ", s.name)
		}
	}

	// Consumers, one at a time, each awaited where it shows.
	decodeErr := "JetStream cluster failed to decode consumer assignment"
	for _, c := range []struct {
		stream, host string
		cfg          map[string]any
		// failing lists the servers that cannot decode it.
		failing []string
	}{
		{"FC1", "n1", map[string]any{"ack_policy": "flow_control", "deliver_subject": "deliver.fc1", "max_ack_pending": 100}, []string{"n3", "n4", "n5"}},
		{"FC4", "n4", map[string]any{"ack_policy": "flow_control", "deliver_subject": "deliver.fc4", "max_ack_pending": 100}, []string{"n3", "n4", "n5"}},
		{"FC5", "n5", map[string]any{"ack_policy": "flow_control", "deliver_subject": "deliver.fc5", "max_ack_pending": 100}, []string{"n3", "n4", "n5"}},
		{"PR1", "n1", map[string]any{"ack_policy": "explicit", "priority_policy": "prioritized", "priority_groups": []string{"g"}}, []string{"n4"}},
		{"PR4", "n4", map[string]any{"ack_policy": "explicit", "priority_policy": "prioritized", "priority_groups": []string{"g"}}, []string{"n4"}},
		{"PR5", "n5", map[string]any{"ack_policy": "explicit", "priority_policy": "prioritized", "priority_groups": []string{"g"}}, []string{"n4"}},
	} {
		cfg := map[string]any{"durable_name": "c"}
		for k, v := range c.cfg {
			cfg[k] = v
		}
		createAsync(t, app, "$JS.API.CONSUMER.CREATE."+c.stream+".c", map[string]any{"stream_name": c.stream, "config": cfg})
		// The assignment names its stream: `\"stream\":\"FC1\"` in the
		// logged, quoted JSON.
		tag := `\"stream\":\"` + c.stream + `\"`
		for _, name := range c.failing {
			if name == "n3" && !sys.Running("n3") {
				continue
			}
			waitFor(name+" logs the decode error for "+c.stream, func() bool { return len(logLines(sys, name, decodeErr, tag)) > 0 })
		}
		if c.host == "n1" || (c.host == "n5" && c.stream == "PR5") {
			// Runs on its host: 2.14.0 supports both; 2.10.27 has no
			// priority_policy field and runs it online without it.
			waitFor(c.stream+"/c on "+c.host, func() bool { return assets()[c.host][c.stream+"/c"] })
		}
	}
	for _, name := range []string{"n3", "n4", "n5"} {
		t.Logf("%s logged %d consumer assignments it failed to decode", name, len(logLines(sys, name, decodeErr)))
	}
	if lines := logLines(sys, "n5", decodeErr, "prioritized"); len(lines) > 0 {
		t.Errorf("2.10.27 logged a decode error for a prioritized consumer: %q", lines)
	}
	// The consumers the hosts could not decode never ran there.
	got := assets()
	for _, c := range []string{"n4:FC4/c", "n5:FC5/c", "n4:PR4/c"} {
		host, asset, _ := strings.Cut(c, ":")
		if got[host][asset] {
			t.Errorf("%s lists %s, which it could not decode, in its JSZ", host, asset)
		}
	}
	// The auditor says it before the crash, at a floor every server meets.
	// It can name only the flow-control consumer a server lists: the hosts
	// of FC4 and FC5 never loaded theirs, and nobody else hosts them.
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "0s", "--timeout", "3s")...)
	res, out := checkJSONOf(t, sys, "n1", "--floor", "2.10.0")
	var named []string
	for _, f := range withCode(out.Findings, findings.AssetCrashesServer) {
		named = append(named, f.Server+" "+f.Stream+"/"+f.Consumer+" "+f.Feature)
		if !strings.Contains(f.Message, "panics at its next meta snapshot") {
			t.Errorf("message %q", f.Message)
		}
	}
	if res.code != int(findings.Critical) || strings.Join(named, ",") != "n3 FC1/c ack_flow_control" {
		t.Errorf("check --floor 2.10.0: exit %d, ASSET_CRASHES_SERVER %q, want exit 2 naming n3 and FC1/c%s", res.code, named, codes(out.Findings))
	}
	code, fc, body := d.ConsumerAt(t, "FC1", "c", "?max_age=0s")
	if code != http.StatusOK || len(fc.Crashes) != 1 || fc.Crashes[0] != (client.Crash{Server: "n3", Version: "2.12.15", Feature: "ack_flow_control", Answered: true}) {
		t.Errorf("consumer API for FC1/c: %d %s", code, body)
	}
	if !sys.Running("n3") {
		t.Fatalf("n3 crashed before the audit finished: the audit did not say it first")
	}
	t.Logf("check exited %d naming n3 and FC1/c %s after the cluster started, with n3 still running", res.code, roundS(time.Since(started)))

	// One more meta entry for the snapshot to collect.
	waitFor("AFTER on n2", func() bool { stream("AFTER", "n2", nil); return assets()["n2"]["AFTER"] })

	// 2.12.15: it panics at its next meta snapshot, a peer of none of them.
	if err := sys.WaitExit("n3", crashWait); err != nil {
		t.Fatalf("2.12.15 did not crash: %v", err)
	}
	panicked := time.Since(started)
	const panicLine = `panic: can not unmarshal "\"flow_control\""`
	if len(logLines(sys, "n3", panicLine)) == 0 {
		t.Fatalf("n3 exited without %q:\n%s", panicLine, sys.LogTail("n3", 15))
	}
	t.Logf("2.12.15 panicked %s after the cluster started", roundS(panicked))
	// serve remembers it: a missing server that crashes on the consumer
	// whenever it comes back.
	rep := d.report(t)
	var missing, crash []string
	for _, f := range rep.Findings {
		switch {
		case f.Code == findings.ServerMissing && f.Server == "n3":
			missing = append(missing, f.Message)
		case f.Code == findings.AssetCrashesServer && f.Server == "n3" && f.Consumer == "c" && f.Stream == "FC1":
			crash = append(crash, f.Message)
		}
	}
	if len(missing) != 1 || len(crash) != 1 || !strings.Contains(crash[0], "not answering and last seen running 2.12.15") {
		t.Errorf("serve after the crash: SERVER_MISSING %q, ASSET_CRASHES_SERVER %q", missing, crash)
	}
	for _, name := range []string{"n4", "n5"} {
		if !sys.Running(name) {
			t.Errorf("%s exited:\n%s", name, sys.LogTail(name, 15))
		}
	}

	// Restarted, it replays the assignment from its meta log and fails to
	// decode it again. (One run of this test also waited 200 s after a
	// further meta entry: it did not panic a second time in that while.)
	decodedBefore := len(logLines(sys, "n3", decodeErr))
	sys.Restart("n3", "")
	waitFor("n3 fails to decode the assignments again", func() bool { return len(logLines(sys, "n3", decodeErr)) > decodedBefore })
	t.Logf("restarted, 2.12.15 logged %d more assignments it failed to decode", len(logLines(sys, "n3", decodeErr))-decodedBefore)
	if _, err := assetsOn(sysConn, 5); err != nil {
		t.Errorf("the servers after n3's crash: %v", err)
	}
}

// TestFactDurableSourcing runs n1, n2 2.14.0 and n3 2.12.15: an R3 origin
// stream with an explicit-ack push durable, and an R2 mirror on n1 and n2
// that reads through that durable (durable sourcing, 2.14).
func TestFactDurableSourcing(t *testing.T) {
	t.Parallel()
	tagged := func(sp natstest.Spec) natstest.Spec { sp.Tags = append(sp.Tags, "new"); return sp }
	sys := natstest.Start(t, tagged(node("n1", natstest.Floor)), tagged(node("n2", natstest.Floor)), node("n3", natstest.Old))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	if err := natstest.MoveMetaLeader(sysConn, "n1", "n2", "n3"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	err := natstest.AddStream(app, server.StreamConfig{Name: "ORIGIN", Subjects: []string{"origin.>"}, Replicas: 3, Storage: server.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	err = natstest.AddConsumer(app, "ORIGIN", server.ConsumerConfig{Durable: "dur", DeliverSubject: "dur.in", AckPolicy: server.AckExplicit, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveConsumerLeader(app, "ORIGIN", "dur", "n3"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := natstest.Publish(app, "origin.x", []byte("m"), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody answers this subscription: it only watches the mirror's RESETs.
	resets, err := app.SubscribeSync("$JS.API.CONSUMER.RESET.ORIGIN.dur")
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Flush(); err != nil {
		t.Fatal(err)
	}
	nextReset := func(what string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		if _, err := resets.NextMsg(within); err != nil {
			t.Fatalf("no $JS.API.CONSUMER.RESET.ORIGIN.dur %s within %s: %v", what, within, err)
		}
		return time.Since(start)
	}

	mirrored := time.Now()
	err = natstest.AddStream(app, server.StreamConfig{Name: "MIRROR", Replicas: 2, Storage: server.FileStorage,
		Placement: &server.Placement{Tags: []string{"new"}},
		Mirror:    &server.StreamSource{Name: "ORIGIN", Consumer: &server.StreamConsumerSource{Name: "dur", DeliverSubject: "dur.in"}}})
	if err != nil {
		t.Fatal(err)
	}
	nextReset("at the mirror's setup", 20*time.Second)
	t.Logf("the mirror sent RESET %s after its create was sent", time.Since(mirrored).Round(time.Millisecond))

	// Led by 2.12.15, the durable never answers: the mirror stays empty and
	// says nothing.
	mirrorState := func() (*server.StreamInfo, error) {
		var resp server.JSApiStreamInfoResponse
		msg, err := app.Request("$JS.API.STREAM.INFO.MIRROR", nil, 2*time.Second)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.StreamInfo == nil {
			return nil, fmt.Errorf("stream info %s: %v", msg.Data, err)
		}
		return resp.StreamInfo, nil
	}
	watchUntil := time.Now().Add(5 * time.Second)
	for time.Now().Before(watchUntil) {
		si, err := mirrorState()
		if err != nil {
			t.Fatal(err)
		}
		if si.State.Msgs != 0 || si.Mirror == nil || si.Mirror.Error != nil {
			t.Fatalf("mirror with a 2.12.15-led durable: %d msgs, mirror %+v; want 0 msgs and no error", si.State.Msgs, si.Mirror)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if ci, err := natstest.ConsumerInfo(app, "ORIGIN", "dur"); err != nil || ci.Cluster.Leader != "n3" {
		t.Fatalf("durable leader moved away from n3 during the watch (%v): the watch proves nothing", err)
	}
	// The auditor, at a floor every server meets: the mirror stalls.
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "0s", "--timeout", "3s")...)
	sourcing := func(want findings.Code, verdict findings.ResetVerdict) {
		t.Helper()
		res, out := checkJSONOf(t, sys, "n1", "--floor", "2.12.0")
		var got []string
		for _, f := range out.Findings {
			if f.Code == findings.SourcingResetUnanswered || f.Code == findings.SourcingResetCrashesFollower {
				got = append(got, fmt.Sprintf("%s %s %s/%s %v", f.Code, f.Server, f.Stream, f.Consumer, f.Sourcers))
			}
		}
		if w := fmt.Sprintf("%s n3 ORIGIN/dur [APP > MIRROR]", want); res.code != int(findings.Critical) || strings.Join(got, ",") != w {
			t.Errorf("check --floor 2.12.0: exit %d, %q, want exit 2 and %q%s", res.code, got, w, codes(out.Findings))
		}
		code, c, body := d.ConsumerAt(t, "ORIGIN", "dur", "?max_age=0s")
		if code != http.StatusOK || c.Reset != client.Verdict(verdict) || strings.Join(c.ResetBy, ",") != "mirror APP > MIRROR" {
			t.Errorf("consumer API for ORIGIN/dur: %d %s", code, body)
		}
	}
	sourcing(findings.SourcingResetUnanswered, findings.ResetUnanswered)

	// Led by 2.14.0 with 2.12.15 a follower: the mirror's next RESET, sent
	// after a leader change of the mirror, crashes the follower.
	if err := natstest.MoveConsumerLeader(app, "ORIGIN", "dur", "n2"); err != nil {
		t.Fatal(err)
	}
	sourcing(findings.SourcingResetCrashesFollower, findings.ResetCrashesFollower)
	if !sys.Running("n3") {
		t.Fatalf("n3 crashed before the mirror's leader change:\n%s", sys.LogTail("n3", 15))
	}
	si, err := mirrorState()
	if err != nil {
		t.Fatal(err)
	}
	other := "n1"
	if si.Cluster != nil && si.Cluster.Leader == "n1" {
		other = "n2"
	}
	stepped := time.Now()
	if err := natstest.MoveStreamLeader(app, "MIRROR", other); err != nil {
		t.Fatal(err)
	}
	nextReset("after the mirror's leader change", 20*time.Second)
	t.Logf("the new mirror leader sent RESET %s after the step-down was sent", time.Since(stepped).Round(time.Millisecond))
	if err := sys.WaitExit("n3", 30*time.Second); err != nil {
		t.Fatalf("2.12.15 follower did not crash: %v", err)
	}
	const opLine = "panic: JetStream Cluster Unknown group entry op type: 18"
	if len(logLines(sys, "n3", opLine)) != 1 {
		t.Fatalf("n3 exited without %q:\n%s", opLine, sys.LogTail("n3", 15))
	}
	t.Logf("2.12.15 panicked %s after the step-down", time.Since(stepped).Round(time.Millisecond))

	// serve remembers it as a 2.12.15 follower of a durable the mirror
	// RESETs: it crashes again on every restart.
	rep := d.report(t)
	var missing []string
	for _, f := range withCode(rep.Findings, findings.ServerMissing) {
		missing = append(missing, f.Message)
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "APP > ORIGIN > dur (RESET by mirror APP > MIRROR)") ||
		!strings.Contains(missing[0], "crashes again on every restart until it is upgraded") {
		t.Errorf("SERVER_MISSING after the crash: %q", missing)
	}

	// It crashes again on restart: its own consumer log replays the entry.
	sys.Relaunch("n3")
	if err := sys.WaitExit("n3", 60*time.Second); err != nil {
		t.Fatalf("2.12.15 did not crash again after a restart: %v", err)
	}
	if len(logLines(sys, "n3", opLine)) != 2 {
		t.Fatalf("n3 exited again without %q:\n%s", opLine, sys.LogTail("n3", 15))
	}
	t.Logf("restarted, 2.12.15 panicked again")
}
