package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestLeaderChangeShowsWithoutAnAudit: with --audit.min-interval 1h, a
// consumer's leader moved to a 2.12 server shows in the API (its RESET
// verdict, the answer's leaders_heard) and in /metrics within moments,
// from the servers' LEADER_ELECTED advisory alone: no audit runs. The
// server is the oracle for where the leader is (CONSUMER.INFO, which
// MoveConsumerLeader waits on). A consumer created after the audit has a
// leader the audit never saw, and that advisory starts an audit that
// shows it. In plain and operator mode: the advisory names the account by
// its id, which in operator mode is its public key.
func TestLeaderChangeShowsWithoutAnAudit(t *testing.T) {
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			sys := mode.Start(t, node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.Old))
			app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
			addStreamAndConsumer(t, app, "MOVING", "moves", 3)
			if err := natstest.MoveConsumerLeader(app, "MOVING", "moves", "n1"); err != nil {
				t.Fatal(err)
			}
			d := eventServe(t, sys)
			code, c, body := d.ConsumerAt(t, "MOVING", "moves", "")
			if code != http.StatusOK || c.Leader != "n1" || c.Audit.LeadersHeard != nil {
				t.Fatalf("before the move: %d leader %s\n%s", code, c.Leader, body)
			}
			audits := value(d.scrape(t), "nats_version_auditor_audits_total")

			start := time.Now()
			if err := natstest.MoveConsumerLeader(app, "MOVING", "moves", "n3"); err != nil {
				t.Fatal(err)
			}
			moved := time.Now()
			err := natstest.Eventually(30*time.Second, func() error {
				code, c, body = d.ConsumerAt(t, "MOVING", "moves", "")
				if code != http.StatusOK || c.Leader != "n3" || c.Reset != client.VerdictUnanswered {
					return fmt.Errorf("%d leader %s reset %s", code, c.Leader, c.Reset)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("the move to n3 never showed: %v\n%s\n%s", err, body, d.stderr)
			}
			shown := time.Now()
			t.Logf("the API showed the move %s after the stepdown was asked for, %s after CONSUMER.INFO showed it",
				shown.Sub(start).Round(time.Millisecond), shown.Sub(moved).Round(time.Millisecond))
			if c.Audit.LeadersHeard == nil || c.Audit.LeadersHeard.Before(c.Audit.Started) {
				t.Errorf("audit %+v: want leaders_heard after the audit started", c.Audit)
			}
			mfs := d.scrape(t)
			if v := value(mfs, "nats_version_auditor_audits_total"); v != audits {
				t.Errorf("audits_total %v, was %v: the move was shown by an audit, not by the advisory", v, audits)
			}
			if v := labelled(mfs, "nats_version_auditor_consumer_leader_below_floor", "consumer=moves", "server_name=n3"); v != 1 {
				t.Errorf("consumer_leader_below_floor{moves, n3} = %v", v)
			}
			if v := labelled(mfs, "nats_version_auditor_events_received_total", "event=consumer_leader_elected"); v < 1 {
				t.Errorf("events_received_total{consumer_leader_elected} = %v", v)
			}

			// A consumer the last audit did not see: its election asks for an
			// audit.
			addStreamAndConsumer(t, app, "LATER", "new", 3)
			err = natstest.Eventually(30*time.Second, func() error {
				code, c, body = d.ConsumerAt(t, "LATER", "new", "")
				if code != http.StatusOK || c.Leader == "" {
					return fmt.Errorf("%d leader %q", code, c.Leader)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("a consumer created after the audit never showed: %v\n%s\n%s", err, body, d.stderr)
			}
			if v := value(d.scrape(t), "nats_version_auditor_audits_total"); v <= audits {
				t.Errorf("audits_total %v, was %v: the new consumer showed without an audit", v, audits)
			}
		})
	}
}

// TestServeChecksBetweenFullAudits: with --audit.full-interval, scrapes due
// an audit ask the servers' JetStream counts instead (audit_checks_total
// grows, audits_total does not), and a consumer created since, which
// changes its servers' counts (their JSZ), is shown by the full audit the
// check starts.
func TestServeChecksBetweenFullAudits(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.New))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "first", 3)
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "100ms", "--audit.full-interval", "1h", "--timeout", "3s",
		// Events would audit on the new consumer's election: only the check may here.
		"--no-audit.events")...)
	d.waitReady(t, 30*time.Second)
	audits := value(d.scrape(t), "nats_version_auditor_audits_total")
	err := natstest.Eventually(30*time.Second, func() error {
		mfs := d.scrape(t)
		if v := value(mfs, "nats_version_auditor_audit_checks_total"); v < 3 {
			return fmt.Errorf("audit_checks_total %v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("scrapes ran no checks: %v\n%s", err, d.stderr)
	}
	if v := value(d.scrape(t), "nats_version_auditor_audits_total"); v != audits {
		t.Errorf("audits_total %v, was %v: scrapes with nothing changed audited in full", v, audits)
	}
	addStreamAndConsumer(t, app, "LATER", "second", 3)
	err = natstest.Eventually(30*time.Second, func() error {
		d.scrape(t)
		code, c, _ := d.ConsumerAt(t, "LATER", "second", "")
		if code != http.StatusOK || c.Leader == "" {
			return fmt.Errorf("%d leader %q", code, c.Leader)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a consumer created after the full audit never showed: %v\n%s", err, d.stderr)
	}
	if v := labelled(d.scrape(t), "nats_version_auditor_audits_started_total", "reason=check"); v < 1 {
		t.Errorf("audits_started_total{reason=\"check\"} %v: the new consumer was shown by something else than a check's audit", v)
	}
}

// TestServeHearsAssetAdvisories: where the system account imports its
// accounts' advisories of streams and consumers created, deleted and
// updated (docs/exporter.md), serve audits on them, with no scrape due and
// no check: an R1 consumer, whose creation elects no leader by advisory,
// shows in the API within moments of its creation, and is gone soon after
// its deletion; a stream's config update starts an audit too. No scrape
// runs meanwhile and --audit.full-interval is the default, so an advisory
// not heard fails the test. A burst of creates costs at most one audit per
// --audit.min-interval. In plain and operator mode: the imports' prefix is
// the account's name in one and its public key in the other.
func TestServeHearsAssetAdvisories(t *testing.T) {
	const gap = 3 * time.Second
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			specs := []natstest.Spec{node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.Old)}
			for i := range specs {
				specs[i].ShowAssets = true
			}
			sys := mode.Start(t, specs...)
			app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
			addStreamAndConsumer(t, app, "ORDERS", "first", 1)
			d := eventServe(t, sys, "--audit.min-interval", gap.String(), "--log.level", "debug")
			if err := natstest.Eventually(30*time.Second, func() error {
				if !strings.Contains(d.stderr.String(), "hearing asset advisories") {
					return errors.New("not yet")
				}
				return nil
			}); err != nil {
				t.Fatalf("serve never subscribed to the imported asset advisories:\n%s", d.stderr)
			}

			seen := func(what string, want int) time.Duration {
				t.Helper()
				start := time.Now()
				err := natstest.Eventually(30*time.Second, func() error {
					if code, _, body := d.ConsumerAt(t, "ORDERS", "second", ""); code != want {
						return fmt.Errorf("%d %s", code, body)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s never showed: %v\n%s", what, err, d.stderr)
				}
				return time.Since(start)
			}
			if err := natstest.AddConsumer(app, "ORDERS", server.ConsumerConfig{Durable: "second", AckPolicy: server.AckExplicit}); err != nil {
				t.Fatal(err)
			}
			created := seen("an R1 consumer created", http.StatusOK)
			if err := natstest.DeleteConsumer(app, "ORDERS", "second"); err != nil {
				t.Fatal(err)
			}
			deleted := seen("an R1 consumer deleted", http.StatusNotFound)
			t.Logf("created: shown %s after the create returned; deleted: gone %s after the delete (at most one audit per %s)",
				created.Round(time.Millisecond), deleted.Round(time.Millisecond), gap)

			mfs := d.scrape(t)
			if v := labelled(mfs, "nats_version_auditor_events_received_total", "event=asset_changed"); v < 2 {
				t.Errorf("events_received_total{asset_changed} = %v, want the create and the delete", v)
			}
			events := func() float64 {
				return labelled(d.scrape(t), "nats_version_auditor_audits_started_total", "reason=event")
			}
			before := events()
			cfg := server.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 1, Storage: server.FileStorage, MaxMsgs: 1000}
			if err := natstest.UpdateStream(app, cfg); err != nil {
				t.Fatal(err)
			}
			if err := natstest.Eventually(30*time.Second, func() error {
				if v := events(); v <= before {
					return fmt.Errorf("audits_started_total{event} %v, was %v", v, before)
				}
				return nil
			}); err != nil {
				t.Errorf("a stream's config update started no audit: %v", err)
			}

			// An application creating consumers for a while, one every 300 ms:
			// the advisories of each gap share one audit. Without the gap
			// they would start one per --audit.event-min-interval (1 s).
			before, start := events(), time.Now()
			pace := time.NewTicker(300 * time.Millisecond)
			defer pace.Stop()
			for i := range 30 {
				<-pace.C
				if err := natstest.AddConsumer(app, "ORDERS", server.ConsumerConfig{Durable: fmt.Sprintf("burst%02d", i), AckPolicy: server.AckExplicit}); err != nil {
					t.Fatal(err)
				}
			}
			if err := natstest.Eventually(30*time.Second, func() error {
				if code, _, body := d.ConsumerAt(t, "ORDERS", "burst29", ""); code != http.StatusOK {
					return fmt.Errorf("%d %s", code, body)
				}
				return nil
			}); err != nil {
				t.Fatalf("the burst's last consumer never showed: %v", err)
			}
			took := time.Since(start)
			if n, most := events()-before, float64(took/gap)+2; n > most {
				t.Errorf("30 creates over %s started %v audits, want at most %v (one per %s)", took.Round(time.Millisecond), n, most, gap)
			}
		})
	}
}
