package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

// TestRealPrometheusAlertsPerSystem runs the shipped rules end to end: a real Prometheus (built
// from the module proxy, like promtool) scrapes real `serve` processes watching two real NATS
// clusters whose servers have the same names, n1..n3, with n3 below the floor in each (2.12.15
// in A, 2.10.27 in B) and leading an R1 consumer. The auditors run as the standalone chart's
// would, all in one namespace: two replicas of release A and one of release B, each with the
// --metrics.system its chart derives. The rules are deploy/prometheus/rules.yml unchanged (no
// for: shortened: a pending alert is what is looked for); only the intervals are short (2s
// scrapes, 1s evaluations).
// Prometheus' alerts API must show exactly one pending NatsServerBelowVersionFloor and one
// NatsConsumerLeaderBelowVersionFloor per system, each quoting its own system's version, and
// keep showing exactly that over further evaluations once every target has been scraped.
func TestRealPrometheusAlertsPerSystem(t *testing.T) {
	t.Parallel()
	prometheusBin := tool(t, "prometheus")
	auditor := auditorBinary(t)

	type system struct {
		name, job, oldVersion string
		replicas              int
		sys                   *natstest.System
	}
	systems := []*system{
		{name: "nats-a/nats", job: "audit-a", oldVersion: natstest.Old, replicas: 2},
		{name: "nats-b/nats", job: "audit-b", oldVersion: natstest.NoLevels, replicas: 1},
	}
	for _, s := range systems {
		s.sys = natstest.Start(t, natstest.Node("n1", natstest.New, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
			natstest.Node("n3", s.oldVersion, "c1"))
		app := s.sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
		cfg := server.StreamConfig{Name: "LOCAL", Subjects: []string{"local.>"}, Replicas: 1, Storage: server.FileStorage,
			Placement: &server.Placement{Tags: []string{"node:n3"}}}
		if err := natstest.AddStream(app, cfg); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if err := natstest.AddConsumer(app, "LOCAL", server.ConsumerConfig{Durable: "on-n3", AckPolicy: server.AckExplicit}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}

	procs := newProcesses(t)
	var jobs []scrapeJob
	targets := 0
	for _, s := range systems {
		// The namespace a ServiceMonitor gives: both releases run in monitoring.
		job := scrapeJob{name: s.job, namespace: "monitoring"}
		for range s.replicas {
			addr := natstest.FreeAddr(t)
			procs.start(auditor, append(s.sys.SysArgs("n1"), "serve", "--web.listen-address", addr,
				"--metrics.system", s.name, "--audit.min-interval", "1h")...)
			job.targets = append(job.targets, addr)
			targets++
		}
		jobs = append(jobs, job)
	}
	// Scrapes are served from the audit at start (--audit.min-interval 1h), so none waits for an
	// audit and none times out on a busy machine: a failed scrape would mark the series stale and
	// reset the pending alerts.
	prom := startPrometheus(t, procs, prometheusBin,
		promTiming{scrape: 2 * time.Second, scrapeTimeout: 2 * time.Second, evaluation: time.Second}, jobs...)
	// Every target scraped, each auditor's first complete-or-not audit in.
	prom.waitTargetsUp(targets)

	// check returns nil when the alerts are exactly one pending alert per system for n3 and for
	// its consumer, each with its own system's version.
	check := func(alerts []promAlert) error {
		for _, name := range []string{"NatsServerBelowVersionFloor", "NatsConsumerLeaderBelowVersionFloor"} {
			got := alertsNamed(alerts, name)
			if len(got) != len(systems) {
				return fmt.Errorf("%d %s alerts, want %d (one per system): %+v", len(got), name, len(systems), got)
			}
			for _, s := range systems {
				i := slices.IndexFunc(got, func(a promAlert) bool { return a.Labels[metrics.SystemLabel] == s.name })
				if i < 0 {
					return fmt.Errorf("no %s alert of system %s: %+v", name, s.name, got)
				}
				a := got[i]
				if a.State != "pending" || a.Labels["namespace"] != "monitoring" || a.Labels["server_name"] != "n3" {
					return fmt.Errorf("%s of %s: %+v, want pending, namespace monitoring, server n3", name, s.name, a)
				}
				if name == "NatsServerBelowVersionFloor" {
					want := "runs " + strings.TrimPrefix(s.oldVersion, "v") + ", below the floor 2.14.0"
					if !strings.Contains(a.Annotations["description"], want) || !strings.Contains(a.Annotations["description"], "system "+s.name) {
						return fmt.Errorf("%s of %s: description %q does not say %q of its own system", name, s.name, a.Annotations["description"], want)
					}
				}
			}
		}
		return nil
	}
	var last []promAlert
	if err := natstest.Eventually(2*time.Minute, func() error {
		var err error
		if last, err = prom.alerts(); err != nil {
			return err
		}
		return check(last)
	}); err != nil {
		prom.fatalf("alerts: %v", err)
	}
	for _, s := range systems {
		for _, name := range []string{"NatsServerBelowVersionFloor", "NatsConsumerLeaderBelowVersionFloor"} {
			n := 0
			for _, a := range alertsNamed(last, name) {
				if a.Labels[metrics.SystemLabel] == s.name {
					n++
				}
			}
			t.Logf("system %s (%d auditor replica(s)): %d pending %s", s.name, s.replicas, n, name)
		}
	}

	// It stays so: three more evaluations of the version rules, every target scraped again.
	var evaluated time.Time
	for i := 0; i < 3; i++ {
		if err := natstest.Eventually(time.Minute, func() error {
			var r struct {
				Data struct {
					Groups []struct {
						Name           string    `json:"name"`
						LastEvaluation time.Time `json:"lastEvaluation"`
					} `json:"groups"`
				} `json:"data"`
			}
			if err := prom.get("/api/v1/rules", &r); err != nil {
				return err
			}
			for _, g := range r.Data.Groups {
				if g.Name == "nats-version-auditor.versions" && g.LastEvaluation.After(evaluated) {
					evaluated = g.LastEvaluation
					return nil
				}
			}
			return fmt.Errorf("the versions group was not evaluated again after %s", evaluated)
		}); err != nil {
			prom.fatalf("rules: %v", err)
		}
	}
	alerts, err := prom.alerts()
	if err != nil {
		prom.fatalf("alerts: %v", err)
	}
	if err := check(alerts); err != nil {
		prom.fatalf("after three more evaluations: %v", err)
	}
}
