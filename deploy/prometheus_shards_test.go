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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestRealPrometheusShardAlert runs a shard ownership move end to end, from real pulling clients
// to a real Prometheus running deploy/prometheus/rules.yml unchanged. A 3-node cluster holds 6
// shards (R3 pinned_client consumers of one stream, short priority_timeout) that processes on
// nats.go's jetstream package pull with pinned pulls: a owns 0 and 1, b owns 2 and 3, nobody 4
// and 5. One `serve` (--unpulled-after 1s) is scraped by Prometheus, each scrape on a fresh audit.
// Then b is killed, and c takes over shard 2 and shard 4 while nobody takes 3.
// At each stage the servers are the oracle: the shards pulled by nobody are those whose leader
// answers CONSUMER.INFO with a backlog and no pull waiting, and Prometheus must show exactly those
// as series of nats_version_auditor_consumer_pulled_by_nobody and as pending
// NatsConsumerPulledByNobody alerts (for: 5m keeps them pending here), each naming the leader
// CONSUMER.INFO names. After the move shard 2's pin is another, and
// nats_version_auditor_consumer_pin_changes_total has counted shard 2's and shard 4's new pins.
func TestRealPrometheusShardAlert(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.New, "c1"),
		natstest.Node("n3", natstest.New, "c1"))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	const stream = shardStream
	const pinTimeout = 3 * time.Second
	js, shards := addShardStream(t, app, 6, pinTimeout)
	publish := func(n int, to ...int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, shard := range to {
			for range n {
				if _, err := js.Publish(ctx, "work."+strconv.Itoa(shard), []byte("job")); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	a, b := sys.ShardOwner("a", "n1"), sys.ShardOwner("b", "n2")
	for _, s := range shards[:2] {
		a.Own(stream, s)
	}
	for _, s := range shards[2:4] {
		b.Own(stream, s)
	}
	publish(5, 0, 1, 2, 3, 4, 5)

	// Every scrape runs an audit (--audit.min-interval below the scrape interval).
	const minInterval = time.Second
	prom, fail := scrapedServe(t, sys, "--unpulled-after", "1s", "--audit.min-interval", minInterval.String())

	// pinChanges is the counter's total over its reasons, from a scrape no earlier than scraped.
	pinChanges := func() (total float64, scraped time.Time, err error) {
		one := func(expr string) (float64, error) {
			v, err := prom.query(expr)
			if err != nil {
				return 0, err
			}
			if len(v) != 1 {
				return 0, fmt.Errorf("%s: %d series", expr, len(v))
			}
			return v[0].value()
		}
		// When the latest sample was scraped, then the total: a later scrape only adds.
		at, err := one("min(timestamp(nats_version_auditor_consumer_pin_changes_total))")
		if err != nil {
			return 0, time.Time{}, err
		}
		total, err = one("sum(nats_version_auditor_consumer_pin_changes_total)")
		return total, time.UnixMilli(int64(at * 1000)), err
	}

	// stage polls until ready holds of the shards' CONSUMER.INFO, the shards whose leader answers
	// it with a backlog and no pull waiting are want, and Prometheus shows exactly those, each
	// with the leader CONSUMER.INFO names, as gauge series and as pending alerts. It logs the
	// stage and returns the infos and when they were asked for.
	stage := func(name string, want []string, ready func(map[string]*jetstream.ConsumerInfo) error) (map[string]*jetstream.ConsumerInfo, time.Time) {
		t.Helper()
		var infos map[string]*jetstream.ConsumerInfo
		var asked time.Time
		var gauges, alerts map[string]string
		err := natstest.Eventually(2*time.Minute, func() error {
			asked = time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			infos = map[string]*jetstream.ConsumerInfo{}
			unpulled := map[string]string{}
			for _, s := range shards {
				c, err := js.Consumer(ctx, stream, s)
				if err != nil {
					return err
				}
				info := c.CachedInfo()
				if info.Cluster == nil || info.Cluster.Leader == "" {
					return fmt.Errorf("%s: no leader", s)
				}
				infos[s] = info
				if info.NumWaiting == 0 && info.NumPending+uint64(info.NumAckPending) > 0 {
					unpulled[s] = info.Cluster.Leader
				}
			}
			if err := ready(infos); err != nil {
				return err
			}
			if got := slices.Sorted(maps.Keys(unpulled)); !slices.Equal(got, want) {
				return fmt.Errorf("CONSUMER.INFO: %v have a backlog and no pull waiting, want %v", got, want)
			}
			var err error
			if gauges, err = pulledByNobodySeries(prom, stream); err != nil {
				return err
			}
			if !maps.Equal(gauges, unpulled) {
				return fmt.Errorf("gauge series (consumer: server_name) %v, CONSUMER.INFO's (consumer: leader) %v", gauges, unpulled)
			}
			if alerts, err = pulledByNobodyAlerts(prom, stream); err != nil {
				return err
			}
			if !maps.Equal(alerts, unpulled) {
				return fmt.Errorf("pending alerts (consumer: server_name) %v, CONSUMER.INFO's (consumer: leader) %v", alerts, unpulled)
			}
			return nil
		})
		if err != nil {
			fail("%s: %v", name, err)
		}
		var log strings.Builder
		for _, s := range shards {
			i := infos[s]
			fmt.Fprintf(&log, "\n  %s: CONSUMER.INFO of leader %s: %d pending, %d unacked, %d waiting, pin %q", s,
				i.Cluster.Leader, i.NumPending, i.NumAckPending, i.NumWaiting, natstest.PinOf(i))
			if l, ok := alerts[s]; ok {
				fmt.Fprintf(&log, " | gauge series and pending alert, server_name %s", l)
			}
		}
		t.Logf("stage %q:%s", name, log.String())
		return infos, asked
	}

	// Stage 1: a and b pull their shards; 4 and 5 are pulled by nobody.
	stage1, asked := stage("some shards pulled, some by nobody", []string{"shard-4", "shard-5"},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			for _, s := range shards[:4] {
				if i := infos[s]; natstest.PinOf(i) == "" || i.NumPending != 0 || i.NumAckPending != 0 {
					return fmt.Errorf("%s: not yet pinned and drained", s)
				}
			}
			return nil
		})
	// The counter as of an audit that started after the pins above were in place: scraped more
	// than --audit.min-interval after CONSUMER.INFO showed them.
	var before float64
	var scraped time.Time
	if err := natstest.Eventually(time.Minute, func() error {
		var err error
		if before, scraped, err = pinChanges(); err != nil {
			return err
		}
		if !scraped.After(asked.Add(minInterval)) {
			return fmt.Errorf("pin changes scraped at %s, not after %s", scraped, asked.Add(minInterval))
		}
		return nil
	}); err != nil {
		fail("stage 1: %v", err)
	}
	t.Logf("pin changes counted by the scrape at %s (CONSUMER.INFO asked at %s): %v",
		scraped.Format(time.StampMilli), asked.Format(time.StampMilli), before)

	// Stage 2: b dies. c takes over shard 2, whose pin lapses after priority_timeout and goes to
	// c's waiting pulls, and shard 4 that nobody owned; b's shard 3 is left to nobody.
	oldPin := natstest.PinOf(stage1["shard-2"])
	b.Kill()
	c := sys.ShardOwner("c", "n3")
	c.Own(stream, "shard-2")
	c.Own(stream, "shard-4")
	publish(3, 2, 3, 4)
	var after float64
	stage2, _ := stage("an owner killed, another takes over", []string{"shard-3", "shard-5"},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			if i := infos["shard-2"]; natstest.PinOf(i) == "" || natstest.PinOf(i) == oldPin || i.NumPending != 0 || i.NumAckPending != 0 {
				return fmt.Errorf("shard-2: pin %q (b's was %q), %d pending, %d unacked", natstest.PinOf(i), oldPin, i.NumPending, i.NumAckPending)
			}
			if i := infos["shard-4"]; natstest.PinOf(i) == "" || i.NumPending != 0 || i.NumAckPending != 0 {
				return fmt.Errorf("shard-4: pin %q, %d pending, %d unacked", natstest.PinOf(i), i.NumPending, i.NumAckPending)
			}
			// Shard 2's pin went from b to c, shard 4's from none to c.
			n, _, err := pinChanges()
			if err != nil {
				return err
			}
			if after = n; after < before+2 {
				return fmt.Errorf("pin changes %v, want at least %v", after, before+2)
			}
			return nil
		})
	t.Logf("shard-2's pin: %q (b) -> %q (c); pin changes counted: %v -> %v", oldPin, natstest.PinOf(stage2["shard-2"]), before, after)
}

// pulledByNobodySeries maps each consumer of stream that has a series of
// nats_version_auditor_consumer_pulled_by_nobody to its server_name.
func pulledByNobodySeries(prom *realPrometheus, stream string) (map[string]string, error) {
	v, err := prom.query("nats_version_auditor_consumer_pulled_by_nobody")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range v {
		m := s.Metric
		if n, err := s.value(); err != nil || n != 1 || m["stream"] != stream {
			return nil, fmt.Errorf("gauge series %v = %v (%v), want 1 of stream %s", m, s.Value, err, stream)
		}
		if _, ok := out[m["consumer"]]; ok {
			return nil, fmt.Errorf("two gauge series of %s: %v", m["consumer"], v)
		}
		out[m["consumer"]] = m["server_name"]
	}
	return out, nil
}

// pulledByNobodyAlerts maps each consumer of stream that has a
// NatsConsumerPulledByNobody alert to its server_name; every alert must be
// pending, in namespace monitoring, and describe its leader.
func pulledByNobodyAlerts(prom *realPrometheus, stream string) (map[string]string, error) {
	all, err := prom.alerts()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, a := range alertsNamed(all, "NatsConsumerPulledByNobody") {
		l := a.Labels
		if a.State != "pending" || l["namespace"] != "monitoring" || l["stream"] != stream || l["severity"] != "warning" {
			return nil, fmt.Errorf("alert %+v: want pending, namespace monitoring, stream %s, severity warning", a, stream)
		}
		if d := a.Annotations["description"]; !strings.Contains(d, "its leader "+l["server_name"]+" ") {
			return nil, fmt.Errorf("alert of %s: description %q does not name its leader %s", l["consumer"], d, l["server_name"])
		}
		if _, ok := out[l["consumer"]]; ok {
			return nil, fmt.Errorf("two alerts of %s: %+v", l["consumer"], all)
		}
		out[l["consumer"]] = l["server_name"]
	}
	return out, nil
}
