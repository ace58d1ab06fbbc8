package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestEventRestartOnNewVersionShowsWithoutWaiting(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	d := eventServe(t, sys)
	old, floor := strings.TrimPrefix(natstest.Old, "v"), strings.TrimPrefix(natstest.Floor, "v")
	if v := serverVersion(d.scrape(t), "n3"); v != old {
		t.Fatalf("n3 shows as %q before the upgrade, want %s", v, old)
	}

	sys.Restart("n3", natstest.Floor)
	var mfs map[string]*dto.MetricFamily
	err := natstest.Eventually(30*time.Second, func() error {
		mfs = d.scrape(t)
		if v := serverVersion(mfs, "n3"); v != floor {
			return fmt.Errorf("n3 shows as %q", v)
		}
		// The status may stay UNKNOWN for minutes: the other servers count
		// the killed process among their active servers until they sweep
		// it out (nats-server's orphan check).
		if v := labelled(mfs, "nats_version_auditor_server_below_floor", "server_name=n3"); v != 0 {
			return fmt.Errorf("server_below_floor{n3} = %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("with --audit.min-interval 1h the upgrade never showed: %v\n%s", err, d.stderr)
	}
	if v := value(mfs, "nats_version_auditor_event_audits_total"); v < 1 {
		t.Errorf("event_audits_total = %v, want the audits that showed the upgrade counted", v)
	}
}

func TestEventGracefulStopShowsServerMissing(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Floor))
	d := eventServe(t, sys)
	if err := sys.Stop("n3", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var mfs map[string]*dto.MetricFamily
	err := natstest.Eventually(30*time.Second, func() error {
		mfs = d.scrape(t)
		if v := labelled(mfs, "nats_version_auditor_server_missing", "server_name=n3"); v != 1 {
			return fmt.Errorf("server_missing{server_name=n3} = %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a stopped server never showed as missing: %v\n%s", err, d.stderr)
	}
	if v := labelled(mfs, "nats_version_auditor_events_received_total", "event=shutdown"); v < 1 {
		t.Errorf("events_received_total{event=shutdown} = %v: the audit came from something else", v)
	}
	if v := value(mfs, "nats_version_auditor_up"); v != 0 {
		t.Errorf("up = %v with a server missing", v)
	}

	// The other servers' heartbeats now lack the route to n3: nothing new
	// after its SHUTDOWN, so no second audit.
	audits, heard := value(mfs, "nats_version_auditor_event_audits_total"), labelled(mfs, "nats_version_auditor_events_received_total", "event=statsz")
	n1 := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	err = natstest.Eventually(30*time.Second, func() error {
		if err := n1.Publish("$SYS.REQ.SERVER.PING", nil); err != nil {
			return err
		}
		mfs = d.scrape(t)
		if got := labelled(mfs, "nats_version_auditor_events_received_total", "event=statsz"); got < heard+4 {
			return fmt.Errorf("%v heartbeats since, want 4", got-heard)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := value(mfs, "nats_version_auditor_event_audits_total"); v != audits {
		t.Errorf("event_audits_total went from %v to %v on heartbeats that lost the route to a server known to have shut down\n%s", audits, v, d.stderr)
	}
}

func TestEventSteadyHeartbeatsAuditNothing(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	d := eventServe(t, sys)
	before := d.scrape(t)
	heard := labelled(before, "nats_version_auditor_events_received_total", "event=statsz")

	// A STATSZ ping without a reply makes every server publish a heartbeat.
	sys2 := sys.Connect("n2", natstest.SysUser, natstest.SysPassword)
	var after map[string]*dto.MetricFamily
	err := natstest.Eventually(30*time.Second, func() error {
		if err := sys2.Publish("$SYS.REQ.SERVER.PING", nil); err != nil {
			return err
		}
		after = d.scrape(t)
		if got := labelled(after, "nats_version_auditor_events_received_total", "event=statsz"); got < heard+9 {
			return fmt.Errorf("%v heartbeats received since, want 9", got-heard)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"nats_version_auditor_audits_total", "nats_version_auditor_event_audits_total"} {
		if b, a := value(before, m), value(after, m); a != b {
			t.Errorf("%s went from %v to %v on heartbeats that changed nothing\n%s", m, b, a, d.stderr)
		}
	}
}

func TestEventFlappingServerIsRateLimited(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Floor))
	const interval = 4 * time.Second
	d := eventServe(t, sys, "--audit.event-min-interval", interval.String(), "--log.level", "debug")
	before := value(d.scrape(t), "nats_version_auditor_audits_total")

	start := time.Now()
	restarts := 0
	for time.Since(start) < 12*time.Second {
		// Each stop publishes a SHUTDOWN, each start a new server id.
		if err := sys.Stop("n3", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		sys.Restart("n3", "")
		restarts++
	}
	// Let the last restart's events arrive and their audit run.
	var audits float64
	err := natstest.Eventually(30*time.Second, func() error {
		mfs := d.scrape(t)
		if value(mfs, "nats_version_auditor_up") != 1 {
			return fmt.Errorf("not up yet")
		}
		audits = value(mfs, "nats_version_auditor_audits_total") - before
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	limit := float64(elapsed/interval) + 1
	t.Logf("%d restarts in %s: %v audits, at most %v allowed", restarts, elapsed.Round(time.Millisecond), audits, limit)
	if audits > limit {
		t.Errorf("%v audits in %s, over the %s rate limit (%v)", audits, elapsed, interval, limit)
	}
	if audits < 2 {
		t.Errorf("%v audits for %d restarts: events did not drive audits", audits, restarts)
	}
	if n := strings.Count(d.stderr.String(), "audit requested"); float64(n) > limit {
		t.Errorf("%d requested audits logged, over %v", n, limit)
	}
}

func TestEventKilledServerShowsMissing(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Floor))
	d := eventServe(t, sys, "--log.level", "debug")
	// A killed server says nothing; its peers' next heartbeats lose the
	// route to it (after start they come at most 10 s apart).
	sys.Kill("n3")
	err := natstest.Eventually(40*time.Second, func() error {
		if v := labelled(d.scrape(t), "nats_version_auditor_server_missing", "server_name=n3"); v != 1 {
			return fmt.Errorf("server_missing{server_name=n3} = %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a killed server never showed as missing: %v\n%s", err, d.stderr)
	}
}

func TestEventLeafnodeLinkComesAndGoes(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t,
		natstest.Spec{Name: "hub", Version: natstest.Floor, LeafListen: true},
		natstest.Spec{Name: "app-leaf", Version: natstest.Old, LeafRemotes: []natstest.Remote{{Hub: "hub", Accounts: []string{"APP"}}}},
	)
	d := eventServeOn(t, sys, "hub")
	link := []string{"server_name=hub", "peer=app-leaf", "account=APP"}
	wait := func(what string, want float64, event string) {
		t.Helper()
		err := natstest.Eventually(30*time.Second, func() error {
			mfs := d.scrape(t)
			if v := labelled(mfs, "nats_version_auditor_leafnode_unaudited", link...); v != want {
				return fmt.Errorf("leafnode_unaudited{hub -> app-leaf} = %v, want %v", v, want)
			}
			if event != "" && labelled(mfs, "nats_version_auditor_events_received_total", "event="+event) < 1 {
				return fmt.Errorf("no %s event counted", event)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, d.stderr)
		}
	}
	wait("the link at start", 1, "")
	if err := sys.Stop("app-leaf", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	wait("after the leaf stopped", -1, "leafnode_disconnect")
	sys.Restart("app-leaf", "")
	wait("after the leaf came back", 1, "leafnode_connect")
}

func TestEventMinIntervalMustBePositive(t *testing.T) {
	for _, v := range []string{"0s", "-1s"} {
		res := runCmd(t, "serve", "--web.listen-address", natstest.FreeAddr(t), "--audit.event-min-interval="+v)
		if res.code != exitUnknown || !strings.Contains(res.stderr, "--audit.event-min-interval "+v+": must be positive") {
			t.Errorf("--audit.event-min-interval %s: exit %d, %q", v, res.code, res.stderr)
		}
	}
}
