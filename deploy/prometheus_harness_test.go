package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// processes starts the programs a test runs (auditors, Prometheus) and ends
// them when it ends, before the NATS servers started ahead of it.
type processes struct {
	t     *testing.T
	ctx   context.Context
	procs []*exec.Cmd
}

func newProcesses(t *testing.T) *processes {
	ctx, cancel := context.WithCancel(context.Background())
	p := &processes{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		for _, c := range p.procs {
			_ = c.Wait()
		}
	})
	return p
}

// start starts name with args and returns its combined output.
func (p *processes) start(name string, args ...string) *natstest.LockedBuffer {
	p.t.Helper()
	out := &natstest.LockedBuffer{}
	cmd := exec.CommandContext(p.ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.procs = append(p.procs, cmd)
	return out
}

// scrapeJob is a scrape job of static targets in a namespace, the label a
// ServiceMonitor gives.
type scrapeJob struct {
	name, namespace string
	targets         []string
}

// promTiming is a Prometheus' global intervals.
type promTiming struct {
	scrape, scrapeTimeout, evaluation time.Duration
}

// realPrometheus is a real Prometheus (built from the module proxy, like
// promtool) running deploy/prometheus/rules.yml unchanged.
type realPrometheus struct {
	t    *testing.T
	addr string
	log  *natstest.LockedBuffer
}

// startPrometheus starts bin, a prometheus, with the shipped rules, timing
// and jobs.
func startPrometheus(t *testing.T, procs *processes, bin string, timing promTiming, jobs ...scrapeJob) *realPrometheus {
	t.Helper()
	var config strings.Builder
	fmt.Fprintf(&config, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		timing.scrape, timing.scrapeTimeout, timing.evaluation)
	fmt.Fprintf(&config, "rule_files:\n  - %s\nscrape_configs:\n", path(t, rulesPath))
	for _, j := range jobs {
		quoted := make([]string, len(j.targets))
		for i, addr := range j.targets {
			quoted[i] = fmt.Sprintf("%q", addr)
		}
		fmt.Fprintf(&config, "  - job_name: %s\n    static_configs:\n      - targets: [%s]\n        labels: {namespace: %s}\n",
			j.name, strings.Join(quoted, ", "), j.namespace)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &realPrometheus{t: t, addr: natstest.FreeAddr(t)}
	p.log = procs.start(bin, "--config.file", filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path", filepath.Join(dir, "data"), "--web.listen-address", p.addr)
	return p
}

// get decodes the answer of Prometheus' HTTP API at path into v.
func (p *realPrometheus) get(path string, v any) error {
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// fatalf fails the test with Prometheus' log.
func (p *realPrometheus) fatalf(format string, a ...any) {
	p.t.Helper()
	p.t.Fatalf("%s\nprometheus log:\n%s", fmt.Sprintf(format, a...), p.log)
}

// waitTargetsUp waits until n targets are up: each scraped once.
func (p *realPrometheus) waitTargetsUp(n int) {
	p.t.Helper()
	if err := natstest.Eventually(2*time.Minute, func() error {
		var r struct {
			Data struct {
				ActiveTargets []struct {
					Health    string `json:"health"`
					ScrapeURL string `json:"scrapeUrl"`
					LastError string `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := p.get("/api/v1/targets", &r); err != nil {
			return err
		}
		up := 0
		for _, tg := range r.Data.ActiveTargets {
			if tg.Health == "up" {
				up++
			}
		}
		if up != n {
			return fmt.Errorf("%d of %d targets up: %+v", up, n, r.Data.ActiveTargets)
		}
		return nil
	}); err != nil {
		p.fatalf("targets: %v", err)
	}
}

// promAlert is an active alert as the alerts API gives it.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// alerts returns the active (pending or firing) alerts.
func (p *realPrometheus) alerts() ([]promAlert, error) {
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	err := p.get("/api/v1/alerts", &r)
	return r.Data.Alerts, err
}

// alertsNamed are those of alerts named name.
func alertsNamed(alerts []promAlert, name string) []promAlert {
	var out []promAlert
	for _, a := range alerts {
		if a.Labels["alertname"] == name {
			out = append(out, a)
		}
	}
	return out
}

// promSample is one series of an instant vector.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// value is the sample's value, which the API gives as a string.
func (s promSample) value() (float64, error) {
	v, ok := s.Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("%v: no value", s.Value)
	}
	return strconv.ParseFloat(v, 64)
}

// query evaluates expr, which must give an instant vector, now.
func (p *realPrometheus) query(expr string) ([]promSample, error) {
	var r struct {
		Data struct {
			ResultType string       `json:"resultType"`
			Result     []promSample `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?query="+url.QueryEscape(expr), &r); err != nil {
		return nil, err
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, r.Data.ResultType)
	}
	return r.Data.Result, nil
}

// shardStream is the stream the shard tests' pinned_client shards read.
const shardStream = "WORK"

// addShardStream creates, through app, an R3 file stream WORK on work.> and n R3 pinned_client
// shards of it with pinTimeout, and returns app's JetStream and the shards' names.
func addShardStream(t *testing.T, app *nats.Conn, n int, pinTimeout time.Duration) (jetstream.JetStream, []string) {
	t.Helper()
	if err := natstest.AddStream(app, server.StreamConfig{Name: shardStream, Subjects: []string{"work.>"}, Replicas: 3,
		Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	shards, err := natstest.AddShards(app, shardStream, "work", n, 3, pinTimeout)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	return js, shards
}

// scrapedServe starts `serve` on n1 of sys with args, and a real Prometheus scraping it every 4s
// with a 4s timeout and evaluating every second, and waits until the target is up. Each scrape
// waits for a fresh audit (args set --audit.min-interval below the scrape interval): the
// generous timeout keeps a slow audit on a busy machine from failing the scrape, which would
// mark the series stale and reset the pending alerts. fail ends the test with Prometheus's and
// the auditor's logs.
func scrapedServe(t *testing.T, sys *natstest.System, args ...string) (prom *realPrometheus, fail func(format string, args ...any)) {
	t.Helper()
	prometheusBin := tool(t, "prometheus")
	auditor := auditorBinary(t)
	procs := newProcesses(t)
	addr := natstest.FreeAddr(t)
	auditorLog := procs.start(auditor, append(append(sys.SysArgs("n1"), "serve", "--web.listen-address", addr), args...)...)
	prom = startPrometheus(t, procs, prometheusBin,
		promTiming{scrape: 4 * time.Second, scrapeTimeout: 4 * time.Second, evaluation: time.Second},
		scrapeJob{name: "audit", namespace: "monitoring", targets: []string{addr}})
	fail = func(format string, args ...any) {
		t.Helper()
		prom.fatalf("%s\nauditor log:\n%s", fmt.Sprintf(format, args...), auditorLog)
	}
	prom.waitTargetsUp(1)
	return prom, fail
}
