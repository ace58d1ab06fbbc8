package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	dto "github.com/prometheus/client_model/go"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// pulledShards starts three servers in mode whose system account imports
// APP's pulls (docs/pulls.md), with two shards: a pulls both and holds
// their pins, b pulls shard-0 too. It returns the system and b.
func pulledShards(t *testing.T, mode natstest.Mode) (*natstest.System, *natstest.ShardOwner) {
	t.Helper()
	spec := func(name, v string) natstest.Spec { return natstest.ShowingPulls(node(name, v)) }
	// One version: the gate's only WARNING is who pulls.
	sys := mode.Start(t, spec("n1", natstest.New), spec("n2", natstest.New), spec("n3", natstest.New))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	shards := natstest.AddWorkShards(t, app, 2, 3, 3*time.Second)
	a, b := sys.ShardOwner("a", "n2"), sys.ShardOwner("b", "n3")
	a.Own("WORK", shards[0])
	a.Own("WORK", shards[1])
	// a takes both pins before b pulls.
	natstest.PinWorkShards(t, app, shards...)
	b.Own("WORK", shards[0])
	return sys, b
}

// TestCheckNamesWhoPulls: check listens to the pulls for --pull-watch, says
// so, and finds shard-0 pulled by a and b, a holding the pin; as a gate
// (--wait), it passes once b is gone and every shard has one puller. In
// plain and in operator mode, where the import's prefix is APP's public key.
func TestCheckNamesWhoPulls(t *testing.T) {
	t.Parallel()
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) { testCheckNamesWhoPulls(t, mode) })
	}
}

func testCheckNamesWhoPulls(t *testing.T, mode natstest.Mode) {
	sys, b := pulledShards(t, mode)
	// APP as the servers name it: its public key in operator mode. The
	// pull lines name it by that id (with its name beside it or not), so
	// the test looks for the id.
	app := sys.AccountKey(natstest.AppUser)
	args := append([]string{"--pull-watch", "4s", "--unpulled-after", "0"}, sys.SysArgs("n1")...)
	var f findings.Finding
	err := natstest.Eventually(60*time.Second, func() error {
		res, doc := runCheckJSON(t, args...)
		fs := withCode(doc.Findings, findings.ConsumerPulledByTwo)
		if res.code != int(findings.Warning) || len(fs) != 1 {
			return fmt.Errorf("exit %d, findings %s", res.code, codes(doc.Findings))
		}
		if doc.Pulls == nil || doc.Pulls.WatchedSeconds < 4 || len(doc.Pulls.Accounts) != 1 ||
			doc.Pulls.Accounts[0].Account != app || !doc.Pulls.Accounts[0].Heard {
			return fmt.Errorf("pulls %+v: want %s heard for 4s or more", doc.Pulls, app)
		}
		f = fs[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WORK > shard-0", "a (127.0.0.1 on n2) holds the pin", "b (127.0.0.1 on n3) pulls without it"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("the finding does not say %q: %s", want, f.Message)
		}
	}
	res := runCmd(t, append([]string{"check"}, args...)...)
	if line := lineWith(res.stdout, "pulls heard for 4s in "); !strings.Contains(line, app) {
		t.Errorf("check's text does not say how long it listened to %s:\n%s", app, res.stdout)
	}
	rep := runCmd(t, append([]string{"report", "--pull-watch", "4s"}, sys.SysArgs("n1")...)...)
	for _, want := range []string{"PULLS HEARD FOR", "shard-0  a", "shard-0  b"} {
		if !strings.Contains(strings.Join(strings.Fields(rep.stdout), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report does not show %q:\n%s", want, rep.stdout)
		}
	}
	// The account table is the first thing under PULLS HEARD FOR.
	_, sight, _ := strings.Cut(rep.stdout, "PULLS HEARD FOR")
	if f := strings.Fields(lineWith(sight, app)); len(f) == 0 || f[len(f)-1] != "yes" {
		t.Errorf("report does not show %s's pulls heard:\n%s", app, rep.stdout)
	}

	gate := startCheck(t, append([]string{"--wait", "2m", "--pull-watch", "4s", "--unpulled-after", "0", "--audit.min-interval", "200ms"}, sys.SysArgs("n1")...)...)
	gate.waitFor(t, 60*time.Second, `(?m)^\d\d:\d\d:\d\d WARNING .*CONSUMER_PULLED_BY_TWO`)
	b.Kill()
	if code := gate.exit(t, 2*time.Minute); code != exitOK {
		t.Fatalf("exit %d once b is gone, want 0\nstderr:\n%s", code, gate.stderr)
	}
}

// TestCheckWithoutTheImportSaysSo: where the system account does not import
// an account's pulls, check does not wait for them and says where they are
// not heard.
func TestCheckWithoutTheImportSaysSo(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Node("n1", natstest.New, ""))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	if err := natstest.AddStream(app, server.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := natstest.AddShards(app, "WORK", "work", 1, 1, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	res := runCmd(t, append([]string{"check", "--pull-watch", "30s"}, sys.SysArgs("n1")...)...)
	if took := time.Since(started); took > 20*time.Second {
		t.Errorf("check took %s with no pulls to hear", took)
	}
	if !strings.Contains(res.stdout, "not heard in APP (docs/pulls.md)") {
		t.Errorf("check does not say APP's pulls are not heard:\n%s%s", res.stdout, res.stderr)
	}
}

// TestServeCountsPullers: serve listens all the time; its gauge and its API
// count and name the processes pulling each shard.
func TestServeCountsPullers(t *testing.T) {
	t.Parallel()
	sys, _ := pulledShards(t, natstest.Plain)
	d := startServe(t, append([]string{"--pull-watch", "5s", "--audit.min-interval", "200ms"}, sys.SysArgs("n1")...)...)
	d.waitReady(t, 30*time.Second)
	err := natstest.Eventually(60*time.Second, func() error {
		mfs := d.scrape(t)
		if v := labelled(mfs, "nats_version_auditor_consumer_pullers", "consumer=shard-0"); v != 2 {
			return fmt.Errorf("shard-0: %v pullers, want 2", v)
		}
		if v := labelled(mfs, "nats_version_auditor_consumer_pullers", "consumer=shard-1"); v != 1 {
			return fmt.Errorf("shard-1: %v pullers, want 1", v)
		}
		code, c, body := d.ConsumerAt(t, "WORK", "shard-0", "")
		if code != http.StatusOK || c.Pull == nil || len(c.Pull.Pullers) != 2 {
			return fmt.Errorf("API %d: %s", code, body)
		}
		if p := c.Pull.Pullers[0]; p.Name != "a" || !p.Holder || p.Server != "n2" {
			return fmt.Errorf("first puller %+v, want a holding the pin on n2", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lineWith is the first line of out that contains s, "" for none.
func lineWith(out, s string) string {
	for l := range strings.Lines(out) {
		if strings.Contains(l, s) {
			return strings.TrimRight(l, "\n")
		}
	}
	return ""
}

// TestServeRereadsShardsBetweenAudits: with shards, serve's checks between
// full audits read the shards' accounts again, so a shard whose owner died
// shows as pulled by nobody as soon as its leader's CONSUMER.INFO says so
// (no pull waiting, a backlog) and --unpulled-after has passed, without a
// full audit: audits_started_total stays where it was while the checks go
// on.
func TestServeRereadsShardsBetweenAudits(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.Floor))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	shards := natstest.AddWorkShards(t, app, 1, 3, 3*time.Second)
	a := sys.ShardOwner("a", "n2")
	a.Own("WORK", shards[0])
	js := natstest.PinWorkShards(t, app, shards...)

	d := startServe(t, append([]string{"--audit.min-interval", "200ms", "--unpulled-after", "1s"}, sys.SysArgs("n1")...)...)
	d.waitReady(t, 30*time.Second)
	const unpulled = "nats_version_auditor_consumer_pulled_by_nobody"
	started := func(mfs map[string]*dto.MetricFamily) (n float64) {
		for _, m := range mfs["nats_version_auditor_audits_started_total"].GetMetric() {
			n += m.GetCounter().GetValue()
		}
		return n
	}
	var before, checks float64
	err := natstest.Eventually(30*time.Second, func() error {
		mfs := d.scrape(t)
		if v := labelled(mfs, unpulled, "consumer=shard-0"); v > 0 {
			return fmt.Errorf("shard-0 pulled by nobody while a pulls it")
		}
		if checks = value(mfs, "nats_version_auditor_audit_checks_total"); checks < 2 {
			return fmt.Errorf("%v checks", checks)
		}
		before = started(mfs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	a.Kill()
	if _, err := natstest.Publish(app, "work.0", []byte("job"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var unpulledAt time.Time
	err = natstest.Eventually(30*time.Second, func() error {
		info, err := natstest.ShardInfo(t.Context(), js, "WORK", shards[0])
		if err != nil {
			return err
		}
		if info.NumWaiting > 0 || info.NumPending+uint64(info.NumAckPending) == 0 {
			return fmt.Errorf("shard-0: %d pulls waiting, %d pending, %d unacked", info.NumWaiting, info.NumPending, info.NumAckPending)
		}
		unpulledAt = time.Now()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var mfs map[string]*dto.MetricFamily
	err = natstest.Eventually(30*time.Second, func() error {
		mfs = d.scrape(t)
		if v := labelled(mfs, unpulled, "consumer=shard-0"); v != 1 {
			return fmt.Errorf("%s for shard-0 is %v", unpulled, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shard-0 pulled by nobody by its leader's CONSUMER.INFO; in the metrics %s later", time.Since(unpulledAt).Round(time.Millisecond))
	if n := started(mfs); n != before {
		t.Errorf("full audits started went from %v to %v: the shard was seen by an audit, not a check", before, n)
	}
	if n := value(mfs, "nats_version_auditor_audit_checks_total"); n <= checks {
		t.Errorf("checks went from %v to %v", checks, n)
	}
}
