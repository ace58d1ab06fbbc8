package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// daemon is a `serve` running inside the test process.
type daemon struct {
	base   string
	cancel context.CancelFunc
	done   chan int
	stderr *lockedBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startServe runs `serve` with args and waits until it answers /healthz.
func startServe(t *testing.T, args ...string) *daemon {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{base: "http://" + addr, cancel: cancel, done: make(chan int, 1), stderr: &lockedBuffer{}}
	go func() {
		d.done <- run(ctx, append([]string{"serve", "--web.listen-address", addr}, args...), io.Discard, d.stderr)
	}()
	t.Cleanup(func() { d.stop(t) })
	err := natstest.Eventually(10*time.Second, func() error {
		select {
		case code := <-d.done:
			d.done <- code
			return fmt.Errorf("serve exited %d: %s", code, d.stderr.String())
		default:
		}
		resp, err := http.Get(d.base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stop sends the equivalent of SIGTERM and returns the exit code.
func (d *daemon) stop(t *testing.T) int {
	d.cancel()
	select {
	case code := <-d.done:
		d.done <- code
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit within 10s of SIGTERM")
		return -1
	}
}

func (d *daemon) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(d.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d *daemon) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := d.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// series renders every series of a family as name{label=value,...} value.
func series(mfs map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range mfs[name].GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(labels, ","), m.GetGauge().GetValue()))
	}
	sort.Strings(out)
	return out
}

func value(mfs map[string]*dto.MetricFamily, name string) float64 {
	ms := mfs[name].GetMetric()
	if len(ms) != 1 {
		return -1
	}
	if c := ms[0].GetCounter(); c != nil {
		return c.GetValue()
	}
	return ms[0].GetGauge().GetValue()
}

func sysArgs(sys *natstest.System, server string) []string {
	return []string{"-s", sys.URL(server), "--user", natstest.SysUser, "--password", natstest.SysPassword}
}

// TestServeScopes runs the daemon against a real mixed cluster: once for the
// whole cluster, and once per server as the sidecars would. The sidecars'
// series add up to the cluster's, each exactly once.
func TestServeScopes(t *testing.T) {
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

	cluster := startServe(t, sysArgs(sys, "n1")...)
	all := cluster.scrape(t)
	if v := value(all, "nats_version_auditor_up"); v != 1 {
		t.Fatalf("up = %v, want 1\n%s", v, cluster.stderr)
	}
	if v := value(all, "nats_version_auditor_status"); v != 2 {
		t.Errorf("status = %v, want 2", v)
	}
	wantLeaders := []string{
		"nats_version_auditor_consumer_leader_below_floor{account=APP,consumer=led-by-old,server_name=n3,stream=ORDERS} 1",
		"nats_version_auditor_consumer_leader_below_floor{account=APP,consumer=r1-on-old,server_name=n3,stream=LOCAL} 1",
	}
	if got := series(all, "nats_version_auditor_consumer_leader_below_floor"); !slices.Equal(got, wantLeaders) {
		t.Errorf("cluster scope leader series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLeaders, "\n"))
	}
	wantReplicas := []string{"nats_version_auditor_consumer_replica_below_floor{account=APP,consumer=followed-by-old,server_name=n3,stream=BILLING} 1"}
	if got := series(all, "nats_version_auditor_consumer_replica_below_floor"); !slices.Equal(got, wantReplicas) {
		t.Errorf("cluster scope replica series: %v, want %v", got, wantReplicas)
	}
	if n := len(series(all, "nats_version_auditor_server_info")); n != 3 {
		t.Errorf("%d server_info series, want 3", n)
	}

	perServer := map[string][]string{}
	findings := map[string]float64{}
	for _, name := range []string{"n1", "n2", "n3"} {
		d := startServe(t, append(sysArgs(sys, name), "--scope", "server")...)
		mfs := d.scrape(t)
		if v := value(mfs, "nats_version_auditor_up"); v != 1 {
			t.Fatalf("sidecar %s: up = %v\n%s", name, v, d.stderr)
		}
		if got := series(mfs, "nats_version_auditor_server_info"); len(got) != 1 || !strings.Contains(got[0], "server_name="+name+",") {
			t.Errorf("sidecar %s exports server_info %v, want its own alone", name, got)
		}
		for _, fam := range []string{"nats_version_auditor_consumer_leader_below_floor", "nats_version_auditor_consumer_replica_below_floor",
			"nats_version_auditor_server_below_floor", "nats_version_auditor_consumer_leaders"} {
			perServer[fam] = append(perServer[fam], series(mfs, fam)...)
		}
		for _, m := range mfs["nats_version_auditor_findings"].GetMetric() {
			findings[m.GetLabel()[0].GetValue()] += m.GetGauge().GetValue()
		}
	}
	for fam, union := range perServer {
		sort.Strings(union)
		if want := series(all, fam); !slices.Equal(union, want) {
			t.Errorf("%s: sidecars together export\n%s\nthe cluster scope\n%s", fam, strings.Join(union, "\n"), strings.Join(want, "\n"))
		}
	}
	for _, m := range all["nats_version_auditor_findings"].GetMetric() {
		code := m.GetLabel()[0].GetValue()
		if findings[code] != m.GetGauge().GetValue() {
			t.Errorf("findings{code=%s}: sidecars sum to %v, cluster scope says %v", code, findings[code], m.GetGauge().GetValue())
		}
	}
}

func TestServeEndpointsAndShutdown(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	d := startServe(t, append(sysArgs(sys, "n1"), "--audit.min-interval", "1h")...)

	if code, body := d.get(t, "/"); code != http.StatusOK || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("landing page: %d %q", code, body)
	}
	err := natstest.Eventually(10*time.Second, func() error {
		if code, body := d.get(t, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", code, body)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("never ready after the first audit: %v", err)
	}

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

func TestServeReadyzFollowsCompleteness(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	d := startServe(t, append(sysArgs(sys, "n1"), "--audit.min-interval", "0s", "--timeout", "1s")...)
	if err := natstest.Eventually(10*time.Second, func() error {
		if code, _ := d.get(t, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz %d", code)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sys.Pause("n3")
	defer sys.Resume("n3")
	mfs := d.scrape(t) // a fresh audit: --audit.min-interval 0s
	if v := value(mfs, "nats_version_auditor_up"); v != 0 {
		t.Errorf("up = %v with n3 hung, want 0", v)
	}
	if got := series(mfs, "nats_version_auditor_server_missing"); !slices.Equal(got, []string{"nats_version_auditor_server_missing{server_name=n3} 1"}) {
		t.Errorf("server_missing %v, want n3", got)
	}
	if code, _ := d.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d after an incomplete audit, want 503", code)
	}
	if code, _ := d.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d, want 200 whatever the audit says", code)
	}
}
