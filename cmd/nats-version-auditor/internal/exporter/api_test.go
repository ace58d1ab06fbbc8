package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter/exportertest"
)

// TestAPIDomains covers how a JetStream domain is named, on an audit of two
// domains that both hold APP > ORDERS > worker.
func TestAPIDomains(t *testing.T) {
	servers := []snapshot.Server{{Name: "hub1", Domain: "hub", APILevel: 4}, {Name: "leaf1", Domain: "leaf", APILevel: 3}}
	servers[0].SetVersion("2.14.0")
	servers[1].SetVersion("2.12.15")
	snap := &snapshot.Snapshot{
		Started: time.Now(),
		Servers: servers,
		Consumers: []snapshot.Asset{
			{Kind: releases.KindConsumer, Domain: "hub", Account: "APP", Stream: "ORDERS", Consumer: "worker", Leader: "hub1", Peers: []string{"hub1"}, Replicas: 1},
			{Kind: releases.KindConsumer, Domain: "leaf", Account: "APP", Stream: "ORDERS", Consumer: "worker", Leader: "leaf1", Peers: []string{"leaf1"}, Replicas: 1},
			{Kind: releases.KindConsumer, Domain: "leaf", Account: "APP", Stream: "ORDERS", Consumer: "edge-only", Leader: "leaf1", Peers: []string{"leaf1"}, Replicas: 1},
		},
	}
	report := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	d := serveAPI(t, report)

	for _, tt := range []struct {
		path, query string
		code        int
		want        client.Verdict
		domain      string
	}{
		{"ORDERS/worker", "", http.StatusConflict, client.VerdictUnknown, ""},
		{"ORDERS/worker", "?domain=hub", http.StatusOK, client.VerdictSafe, "hub"},
		{"ORDERS/worker", "?domain=leaf", http.StatusOK, client.VerdictUnanswered, "leaf"},
		{"ORDERS/worker", "?domain=", http.StatusNotFound, client.VerdictUnknown, ""},
		{"ORDERS/edge-only", "", http.StatusOK, client.VerdictUnanswered, "leaf"},
	} {
		code, c, body := d.ConsumerAt(t, strings.Split(tt.path, "/")[0], strings.Split(tt.path, "/")[1], tt.query)
		if code != tt.code || c.Reset != tt.want || c.Domain != tt.domain {
			t.Errorf("%s%s: %d %s domain %q, want %d %s %q\n%s", tt.path, tt.query, code, c.Reset, c.Domain, tt.code, tt.want, tt.domain, body)
		}
		if code == http.StatusConflict && !strings.Contains(body, `"domains":["hub","leaf"]`) {
			t.Errorf("the conflict does not list the domains: %s", body)
		}
		// The findings about the consumer, of its own domain only: the
		// leaf's 2.12.15 leader is no finding of the hub's worker.
		var codes []string
		for _, f := range c.Findings {
			codes = append(codes, f.Code+"("+f.Server+")")
		}
		want := ""
		if tt.want == client.VerdictUnanswered {
			want = "CONSUMER_LEADER_BELOW_FLOOR(leaf1)"
		}
		if got := strings.Join(codes, " "); got != want {
			t.Errorf("%s%s: findings %q, want %q", tt.path, tt.query, got, want)
		}
	}
	if code, _ := d.Get(t, "/api/v1/consumers/APP/ORDERS/worker/more"); code != http.StatusNotFound {
		t.Errorf("a path with a segment too many: %d", code)
	}

	// Every consumer of a stream: the stream's domain is chosen as a
	// consumer's is.
	for _, tt := range []struct {
		query string
		code  int
		want  string // consumer:verdict:domain of each entry
	}{
		{"", http.StatusConflict, ""},
		{"?domain=hub", http.StatusOK, "worker:safe:hub"},
		{"?domain=leaf", http.StatusOK, "worker:unanswered:leaf edge-only:unanswered:leaf"},
		{"?domain=", http.StatusNotFound, ""},
	} {
		code, body := d.Get(t, "/api/v1/consumers/APP/ORDERS"+tt.query)
		var out APIBatch
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%s: %v: %s", tt.query, err, body)
		}
		var got []string
		for _, e := range out.Consumers {
			got = append(got, fmt.Sprintf("%s:%s:%s", e.Consumer, e.Reset, e.Domain))
		}
		if code != tt.code || strings.Join(got, " ") != tt.want {
			t.Errorf("stream ORDERS%s: %d %q, want %d %q\n%s", tt.query, code, got, tt.code, tt.want, body)
		}
		if code == http.StatusConflict && !strings.Contains(body, `"domains":["hub","leaf"]`) {
			t.Errorf("the conflict does not list the domains: %s", body)
		}
	}

	// A list: each entry as the one-consumer endpoint would answer it.
	post := func(query, body string) (int, APIBatch, string) {
		t.Helper()
		resp, err := http.Post(d.Base+"/api/v1/consumers"+query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out APIBatch
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out, string(b)
	}
	code, out, body := post("", `{"consumers":[{"account":"APP","stream":"ORDERS","consumer":"worker"},
		{"account":"APP","stream":"ORDERS","consumer":"edge-only"},{"account":"APP","stream":"ORDERS","consumer":"nope"}]}`)
	var got []string
	for _, e := range out.Consumers {
		got = append(got, fmt.Sprintf("%s:%d:%s:%s:%d", e.Consumer, e.Status, e.Reset, e.Domain, len(e.Domains)))
	}
	if want := "worker:409:unknown::2 edge-only:200:unanswered:leaf:0 nope:404:unknown::0"; code != http.StatusOK || strings.Join(got, " ") != want {
		t.Errorf("POST a list: %d %q, want 200 %q\n%s", code, got, want, body)
	}
	if code, out, body := post("?domain=hub", `{"consumers":[{"account":"APP","stream":"ORDERS","consumer":"worker"}]}`); code != http.StatusOK ||
		len(out.Consumers) != 1 || out.Consumers[0].Reset != findings.ResetSafe {
		t.Errorf("POST with ?domain=hub: %d\n%s", code, body)
	}
	for _, bad := range []string{``, `{}`, `{"consumers":[]}`, `{"consumers":[{"account":"APP","stream":"ORDERS"}]}`, `{"consumer":[]}`, `[`} {
		if code, _, body := post("", bad); code != http.StatusBadRequest || !strings.Contains(body, `"reset":"unknown"`) {
			t.Errorf("POST %q: %d, want 400\n%s", bad, code, body)
		}
	}
	resp, err := http.Post(d.Base+"/api/v1/consumers/APP/ORDERS/worker", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405: the API is read-only", resp.StatusCode)
	}
}

// TestAPIPull: a consumer with a priority policy is answered with who pulls
// it as its leader's record says, its pin's holder and age, and its
// CONSUMER_PULLED_BY_NOBODY finding; only the config without that record.
func TestAPIPull(t *testing.T) {
	servers := []snapshot.Server{{Name: "n1", Cluster: "c1"}}
	servers[0].SetVersion("2.15.3")
	at := time.Now()
	shard := func(name string, pull *snapshot.PullState) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: "WORK", Consumer: name, Leader: "n1", Peers: []string{"n1"}, Replicas: 1, Pull: pull}
	}
	snap := &snapshot.Snapshot{Started: at, Servers: servers, Consumers: []snapshot.Asset{
		shard("pinned", &snapshot.PullState{Policy: "pinned_client", Group: "g", FromLeader: true, At: at, Created: at.Add(-time.Hour),
			Waiting: 1, LastDelivery: at.Add(-time.Second), PinnedID: "pin-a", PinnedAt: at.Add(-30 * time.Second)}),
		shard("nobody", &snapshot.PullState{Policy: "pinned_client", Group: "g", FromLeader: true, At: at, Created: at.Add(-time.Hour),
			Pending: 5, LastDelivery: at.Add(-10 * time.Minute)}),
		shard("config-only", &snapshot.PullState{Policy: "overflow", Group: "g"}),
		shard("plain", nil),
	}}
	report := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	d := serveAPI(t, report)

	_, c, body := d.ConsumerAt(t, "WORK", "pinned", "")
	if p := c.Pull; p == nil || !p.FromLeader || p.PinnedID != "pin-a" || p.PinAgeSeconds != 30 || p.Waiting != 1 || len(c.Findings) != 0 {
		t.Errorf("pinned: %s", body)
	}
	_, c, body = d.ConsumerAt(t, "WORK", "nobody", "")
	if p := c.Pull; p == nil || p.Pending != 5 || p.Waiting != 0 || p.IdleSeconds != 600 || p.PinnedID != "" ||
		len(c.Findings) != 1 || c.Findings[0].Code != string(findings.ConsumerPulledByNobody) {
		t.Errorf("nobody: %s", body)
	}
	_, c, body = d.ConsumerAt(t, "WORK", "config-only", "")
	if p := c.Pull; p == nil || p.FromLeader || p.Policy != "overflow" || p.Pending != 0 {
		t.Errorf("config-only: %s", body)
	}
	if _, c, body = d.ConsumerAt(t, "WORK", "plain", ""); c.Pull != nil {
		t.Errorf("plain: %s", body)
	}
}

// serveAPI answers the API from report, until the test ends.
func serveAPI(t *testing.T, report *findings.Report) *exportertest.API {
	sched := NewScheduler(context.Background(), func(context.Context) *findings.Report { return report }, time.Hour, nil)
	mux := http.NewServeMux()
	registerAPI(mux, sched, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &exportertest.API{Base: srv.URL}
}
