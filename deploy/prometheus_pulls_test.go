package deploy_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestRealPrometheusPulledByTwo runs a shard pulled by two processes end to end, from real
// pulling clients to a real Prometheus running deploy/prometheus/rules.yml unchanged. A 3-node
// cluster in operator mode (so that the account has a JWT name beside its public key) has its
// system account import APP's pull requests (docs/pulls.md's step). Of 3 R3 pinned_client shards,
// process a pulls shard-0 and shard-1, process b shard-2; once each holds its pins, b pulls
// shard-0 too. One `serve` (--pull-watch 10s) is scraped by Prometheus, each scrape on a fresh
// audit.
// The servers are the oracle: the shards pulled by two are those whose leader answers
// CONSUMER.INFO with a pin and at least two pulls waiting (the holder's and the one queued behind
// the pin). Prometheus must show exactly those as series of
// nats_version_auditor_consumer_pulled_by_two and as pending NatsConsumerPulledByTwo alerts
// (for: 10m keeps them pending here) with exactly the rule's labels, the leader CONSUMER.INFO
// names as server_name, annotations rendered with them and the runbook's link, and no
// NatsVersionAuditFindings for the code; nats_version_auditor_consumer_pullers is 2 for shard-0
// and 1 for the others. Then b stops: the series and the alert go, and the pullers of shard-0
// and shard-2 fall to 1 and 0.
func TestRealPrometheusPulledByTwo(t *testing.T) {
	t.Parallel()
	spec := func(name string) natstest.Spec { return natstest.ShowingPulls(natstest.Node(name, natstest.New, "c1")) }
	sys := natstest.StartOperator(t, natstest.OperatorConfig{}, spec("n1"), spec("n2"), spec("n3"))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	const stream = shardStream
	// A pin lapses priority_timeout after the last pull that carried it: far longer than the
	// owners' 2s pulls, so that a slow machine does not take a's pins away (nothing is published
	// later to pin anyone again).
	js, shards := addShardStream(t, app, 3, 30*time.Second)
	a, b := sys.ShardOwner("a", "n2"), sys.ShardOwner("b", "n3")
	a.Own(stream, shards[0])
	a.Own(stream, shards[1])
	b.Own(stream, shards[2])
	for i := range shards {
		if _, err := natstest.Publish(app, "work."+strconv.Itoa(i), []byte("job"), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Each takes the pins of its own shards before b pulls shard-0 too.
	if err := natstest.WaitPinned(t.Context(), js, stream, time.Minute, shards...); err != nil {
		t.Fatal(err)
	}
	b.Own(stream, shards[0])

	// serve counts a process as a puller for --pull-watch after its last pull: the owners pull
	// every 2s (natstest.ShardPullExpiry), and 10s forgets b soon after it stops.
	const pullWatch = 10 * time.Second
	prom, fail := scrapedServe(t, sys, "--pull-watch", pullWatch.String(), "--audit.min-interval", "1s")

	account := sys.AccountKey(natstest.AppUser) // its public key; its JWT name is APP
	// stage polls until the shards whose leader's CONSUMER.INFO shows a pin and two pulls waiting
	// are want, Prometheus shows exactly those, each with the leader CONSUMER.INFO names, as gauge
	// series and as pending alerts, and the pullers gauge is pullers. It logs the stage and
	// returns the alerts and the leaders.
	stage := func(name string, want []string, pullers map[string]float64) (map[string]promAlert, map[string]string) {
		t.Helper()
		var leaders map[string]string
		var alerts map[string]promAlert
		var log strings.Builder
		err := natstest.Eventually(2*time.Minute, func() error {
			log.Reset()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			leaders = map[string]string{}
			two := map[string]string{}
			for _, s := range shards {
				c, err := js.Consumer(ctx, stream, s)
				if err != nil {
					return err
				}
				i := c.CachedInfo()
				if i.Cluster == nil || i.Cluster.Leader == "" {
					return fmt.Errorf("%s: no leader", s)
				}
				leaders[s] = i.Cluster.Leader
				if natstest.PinOf(i) != "" && i.NumWaiting >= 2 {
					two[s] = i.Cluster.Leader
				}
				fmt.Fprintf(&log, "\n  %s: CONSUMER.INFO of leader %s: %d waiting, pin %q", s, i.Cluster.Leader, i.NumWaiting, natstest.PinOf(i))
			}
			if got := slices.Sorted(maps.Keys(two)); !slices.Equal(got, want) {
				return fmt.Errorf("CONSUMER.INFO: %v have a pin and two pulls waiting, want %v", got, want)
			}

			series, err := prom.query("nats_version_auditor_consumer_pulled_by_two")
			if err != nil {
				return err
			}
			gauges := map[string]string{}
			for _, s := range series {
				m := s.Metric
				if v, err := s.value(); err != nil || v != 1 || m["account"] != account || m["account_name"] != "APP" || m["stream"] != stream {
					return fmt.Errorf("pulled_by_two series %v = %v, want 1 of account APP (%s), stream %s", m, s.Value, account, stream)
				}
				gauges[m["consumer"]] = m["server_name"]
			}
			if len(gauges) != len(series) || !maps.Equal(gauges, two) {
				return fmt.Errorf("pulled_by_two series %v, CONSUMER.INFO's (consumer: leader) %v", series, two)
			}

			if series, err = prom.query(fmt.Sprintf("nats_version_auditor_consumer_pullers{stream=%q}", stream)); err != nil {
				return err
			}
			got := map[string]float64{}
			for _, s := range series {
				v, err := s.value()
				if err != nil || s.Metric["server_name"] != leaders[s.Metric["consumer"]] {
					return fmt.Errorf("pullers series %v = %v (%v), want the leader %s", s.Metric, s.Value, err, leaders[s.Metric["consumer"]])
				}
				got[s.Metric["consumer"]] = v
			}
			if !maps.Equal(got, pullers) {
				return fmt.Errorf("pullers %v, want %v", got, pullers)
			}

			all, err := prom.alerts()
			if err != nil {
				return err
			}
			for _, a := range alertsNamed(all, "NatsVersionAuditFindings") {
				if a.Labels["code"] == "CONSUMER_PULLED_BY_TWO" {
					return fmt.Errorf("NatsVersionAuditFindings alerts on the code NatsConsumerPulledByTwo has: %+v", a)
				}
			}
			alerts = map[string]promAlert{}
			for _, a := range alertsNamed(all, "NatsConsumerPulledByTwo") {
				c := a.Labels["consumer"]
				// The rule's labels: its severity and its by (), less nats_system, which serve
				// without --metrics.system does not export.
				labels := map[string]string{"alertname": "NatsConsumerPulledByTwo", "severity": "warning", "namespace": "monitoring",
					"account": account, "account_name": "APP", "stream": stream, "consumer": c, "server_name": two[c]}
				if _, ok := alerts[c]; ok || a.State != "pending" || !maps.Equal(a.Labels, labels) {
					return fmt.Errorf("alert %+v: want one pending, labelled %v", a, labels)
				}
				alerts[c] = a
			}
			if got := slices.Sorted(maps.Keys(alerts)); !slices.Equal(got, want) {
				return fmt.Errorf("pending alerts of %v, want %v", got, want)
			}
			for s := range maps.Keys(two) {
				fmt.Fprintf(&log, "\n  %s: gauge series and pending alert, server_name %s", s, two[s])
			}
			fmt.Fprintf(&log, "\n  pullers: %v", got)
			return nil
		})
		if err != nil {
			fail("%s: %v", name, err)
		}
		t.Logf("stage %q:%s", name, log.String())
		return alerts, leaders
	}

	started := time.Now()
	alerts, leaders := stage("shard-0 pulled by a and b", []string{"shard-0"},
		map[string]float64{"shard-0": 2, "shard-1": 1, "shard-2": 1})
	t.Logf("shown %s after the target was up", time.Since(started).Round(time.Millisecond))

	// The annotations as the real Prometheus renders them from the alert's labels.
	ann := alerts["shard-0"].Annotations
	t.Logf("annotations: %q", ann)
	if got, want := ann["runbook_url"], runbookURL+"natsconsumerpulledbytwo"; got != want {
		t.Errorf("runbook_url %q, want %q", got, want)
	}
	if !strings.Contains(string(readFile(t, runbookPath)), "\n## NatsConsumerPulledByTwo\n") {
		t.Errorf("%s has no section NatsConsumerPulledByTwo for the runbook_url's anchor", runbookPath)
	}
	if got, want := ann["summary"], "More than one process pulls consumer APP ("+account+") > WORK > shard-0"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	d := ann["description"]
	if want := "Consumer shard-0 of stream WORK (account APP, public key " + account + "), a pinned_client shard led by " +
		leaders["shard-0"] + ", has been pulled by more than one process"; !strings.HasPrefix(d, want) {
		t.Errorf("description %q does not start %q", d, want)
	}
	for _, k := range []string{"summary", "description"} {
		if v := ann[k]; strings.ContainsAny(v, "{}\n") || strings.Contains(v, "<no value>") || strings.Contains(v, "  ") {
			t.Errorf("%s %q: not rendered as one clean line", k, v)
		}
	}

	// b stops: its pulls expire on the leaders, and serve forgets it --pull-watch after its last.
	b.Kill()
	killed := time.Now()
	stage("b stopped", nil, map[string]float64{"shard-0": 1, "shard-1": 1, "shard-2": 0})
	t.Logf("series and alert gone %s after b stopped (--pull-watch %s, scrapes every 4s)",
		time.Since(killed).Round(time.Millisecond), pullWatch)
}
