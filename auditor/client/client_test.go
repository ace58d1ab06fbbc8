package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The answers of a real auditor are tested against the client in
// cmd/nats-version-auditor (TestAPIResetVerdictsAgainstRealReset). These are
// the answers no healthy auditor gives, served by hand.

const safeBody = `{"domain":"","account":"APP","stream":"ORDERS","consumer":"worker","reset":"safe","reason":"","leader":"n1",
"replicas":1,"peers":[{"name":"n1","answered":true,"version":"2.14.0","api_level":4,"leader":true}],"audit":{"age_seconds":%g,"complete":true}}`

func TestConsumerResetFailsClosed(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{"a 500", http.StatusInternalServerError, `{"error":"boom"}`, "auditor answered 500 Internal Server Error: boom"},
		{"a 404 from something that is not the auditor", http.StatusNotFound, `not found`, "auditor answered 404"},
		{"a 409", http.StatusConflict, `{"error":"account name \"APP\" names 2 accounts (AA, AB): ask by public key","accounts":["AA","AB"]}`, `auditor answered 409 Conflict: account name "APP" names 2 accounts`},
		{"a 503", http.StatusServiceUnavailable, `{"error":"no audit has finished yet","reset":"unknown"}`, "auditor answered 503 Service Unavailable: no audit has finished yet"},
		{"not JSON", http.StatusOK, `<html>`, "not JSON"},
		{"a verdict this client does not know", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"safe"`, `"safe_probably"`, 1), `unknown verdict "safe_probably"`},
		{"another consumer", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"worker"`, `"other"`, 1), "not APP > ORDERS > worker in any domain"},
		// Asked for by name, answered about an account of another name.
		{"another account", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"account":"APP"`, `"account":"AKEY","account_name":"OTHER"`, 1), "not APP > ORDERS > worker in any domain"},
		{"older than MaxAge by its own account", http.StatusOK, fmt.Sprintf(safeBody, 3600.0), "older than asked for: the audit started 1h0m0s ago, MaxAge is 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL}
			d, err := c.ConsumerReset(context.Background(), "APP", "ORDERS", "worker")
			if d.Verdict != VerdictUnknown || d.Safe() || err == nil || !strings.Contains(err.Error(), tt.wantErr) ||
				d.Err != err || d.Reason != err.Error() {
				t.Errorf("got %s, %v; want unknown and an error saying %q", d, err, tt.wantErr)
			}
		})
	}
}

func TestConsumerResetTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	d, err := (&Client{BaseURL: srv.URL}).ConsumerReset(ctx, "APP", "ORDERS", "worker")
	if d.Verdict != VerdictUnknown || d.Safe() || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %s, %v; want unknown and the deadline", d, err)
	}
}

func TestConsumerResetRequest(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		fmt.Fprint(w, strings.NewReplacer(`"ORDERS"`, `"OR DERS"`, `"domain":""`, `"domain":"hub"`).Replace(fmt.Sprintf(safeBody, 0.1)))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/", Username: "app", Password: "pw", Domain: InDomain("hub"), MaxAge: 5 * time.Second}
	d, err := c.ConsumerReset(context.Background(), "APP", "OR DERS", "worker")
	if err != nil || !d.Safe() || d.Consumer == nil || d.Consumer.Leader != "n1" {
		t.Fatalf("got %s, %v", d, err)
	}
	if got.URL.EscapedPath() != "/api/v1/consumers/APP/OR%20DERS/worker" || got.URL.Query().Get("max_age") != "5s" || got.URL.Query().Get("domain") != "hub" {
		t.Errorf("request %s", got.URL)
	}
	if u, p, ok := got.BasicAuth(); !ok || u != "app" || p != "pw" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
	if _, err := c.ConsumerReset(context.Background(), "APP", "", "worker"); err == nil || !strings.Contains(err.Error(), "empty stream name") {
		t.Errorf("empty stream name: %v", err)
	}
	if _, err := (&Client{}).ConsumerReset(context.Background(), "APP", "ORDERS", "worker"); err == nil {
		t.Error("a client without BaseURL asked nobody and did not say so")
	}
}

// TestConsumerResetErrors: the auditor's errors come typed, with what they
// carry, and the reason of a verdict comes with it.
func TestConsumerResetErrors(t *testing.T) {
	answer := func(status int, body string) *Client {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return &Client{BaseURL: srv.URL}
	}
	ctx := context.Background()
	var se *StatusError

	_, err := answer(http.StatusConflict, `{"error":"account name \"APP\" names 2 accounts","reset":"unknown","accounts":["AA","AB"]}`).ConsumerReset(ctx, "APP", "S", "C")
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &se) || se.Code != 409 || strings.Join(se.Accounts, ",") != "AA,AB" {
		t.Errorf("409 naming two accounts: %v (%+v)", err, se)
	}
	_, err = answer(http.StatusConflict, `{"error":"consumer APP > S > C exists in 2 JetStream domains","reset":"unknown","domains":["hub","leaf"]}`).ConsumerReset(ctx, "APP", "S", "C")
	if !errors.Is(err, ErrAmbiguous) || !errors.As(err, &se) || strings.Join(se.Domains, ",") != "hub,leaf" {
		t.Errorf("409 naming two domains: %v (%+v)", err, se)
	}
	_, err = answer(http.StatusServiceUnavailable, `{"error":"no audit has finished yet","reset":"unknown"}`).ConsumerReset(ctx, "APP", "S", "C")
	if !errors.Is(err, ErrNoAudit) || errors.Is(err, ErrNotFound) {
		t.Errorf("503: %v", err)
	}
	_, err = answer(http.StatusServiceUnavailable, `<html>down</html>`).ConsumerReset(ctx, "APP", "S", "C")
	if errors.Is(err, ErrNoAudit) || !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("a proxy's 503: %v", err)
	}

	body := `{"domain":"","account":"APP","stream":"S","consumer":"C","reset":"crashes_follower","reason":"leader n2 runs 2.14.0 and answers RESET, but follower n3 (2.12.15) would crash on the replicated reset","audit":{"age_seconds":0.1}}`
	d, err := answer(http.StatusOK, body).ConsumerReset(ctx, "APP", "S", "C")
	if err != nil || d.Safe() || d.Verdict != VerdictCrashesFollower ||
		d.String() != "crashes_follower: leader n2 runs 2.14.0 and answers RESET, but follower n3 (2.12.15) would crash on the replicated reset" {
		t.Errorf("got %q, %v", d, err)
	}
	// Asked in the default domain, answered from another.
	inLeaf := answer(http.StatusOK, strings.Replace(body, `"domain":""`, `"domain":"leaf"`, 1))
	inLeaf.Domain = DefaultDomain
	if d, err := inLeaf.ConsumerReset(ctx, "APP", "S", "C"); err == nil || d.Verdict != VerdictUnknown || !strings.Contains(err.Error(), "not APP > S > C in the default domain") {
		t.Errorf("answered from another domain: %s, %v", d, err)
	}
	// Asked by account name, answered by public key (operator mode).
	byKey := strings.Replace(body, `"account":"APP"`, `"account":"ADKEY","account_name":"APP"`, 1)
	if d, err := answer(http.StatusOK, byKey).ConsumerReset(ctx, "APP", "S", "C"); err != nil || d.Consumer.Account != "ADKEY" {
		t.Errorf("answered by key: %s, %v", d, err)
	}
}

// TestClientQuery: what the client asks for, per choice of domain and age.
func TestClientQuery(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"not seen","reset":"unknown"}`)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		c     Client
		query string
	}{
		{Client{}, "max_age=30s"},
		{Client{Domain: AnyDomain, MaxAge: time.Minute}, "max_age=1m0s"},
		{Client{Domain: DefaultDomain}, "domain=&max_age=30s"},
		{Client{Domain: InDomain("")}, "domain=&max_age=30s"},
		{Client{Domain: InDomain("hub"), Fresh: true, MaxAge: time.Hour}, "domain=hub&max_age=0s"},
	} {
		tt.c.BaseURL = srv.URL
		if _, err := tt.c.ConsumerReset(context.Background(), "APP", "S", "C"); !errors.Is(err, ErrNotFound) {
			t.Errorf("%+v: %v", tt.c, err)
		}
		if got.URL.RawQuery != tt.query {
			t.Errorf("%+v asked %q, want %q", tt.c, got.URL.RawQuery, tt.query)
		}
	}
}

// TestConsumerResetsFailsClosed: in a batch, each consumer keeps its own
// verdict or error; an answer that does not fit what was asked fails all.
func TestConsumerResetsFailsClosed(t *testing.T) {
	refs := []Ref{{"APP", "S", "safe"}, {"APP", "S", "gone"}, {"APP", "S", "twice"}, {"APP", "S", "liar"}}
	const good = `{"consumers":[
{"domain":"","account":"APP","stream":"S","consumer":"safe","reset":"safe","status":200},
{"domain":"","account":"APP","stream":"S","consumer":"gone","reset":"unknown","status":404,"error":"consumer APP > S > gone was not seen in the last audit"},
{"domain":"","account":"APP","stream":"S","consumer":"twice","reset":"unknown","status":409,"error":"exists in 2 JetStream domains","domains":["a","b"]},
{"domain":"","account":"APP","stream":"S","consumer":"other","reset":"safe","status":200}],
"audit":{"age_seconds":%g}}`
	var asked []byte
	body := good
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked, _ = io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/consumers" {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		fmt.Fprintf(w, body, 0.1)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	ds, err := c.ConsumerResets(context.Background(), refs...)
	if err != nil || len(ds) != 4 {
		t.Fatalf("%v, %d decisions", err, len(ds))
	}
	if !strings.Contains(string(asked), `{"account":"APP","stream":"S","consumer":"gone"}`) {
		t.Errorf("asked %s", asked)
	}
	if !ds[0].Safe() || ds[0].Err != nil {
		t.Errorf("safe: %s %v", ds[0], ds[0].Err)
	}
	if ds[1].Safe() || !errors.Is(ds[1].Err, ErrNotFound) {
		t.Errorf("gone: %s %v", ds[1], ds[1].Err)
	}
	var se *StatusError
	if ds[2].Safe() || !errors.Is(ds[2].Err, ErrAmbiguous) || !errors.As(ds[2].Err, &se) || len(se.Domains) != 2 {
		t.Errorf("twice: %s %v", ds[2], ds[2].Err)
	}
	if ds[3].Safe() || ds[3].Err == nil || !strings.Contains(ds[3].Reason, "not APP > S > liar") {
		t.Errorf("an answer about another consumer: %s", ds[3])
	}

	for name, b := range map[string]string{
		"too few answers": `{"consumers":[{"domain":"","account":"APP","stream":"S","consumer":"safe","reset":"safe","status":200}],"audit":{"age_seconds":%g}}`,
		"stale":           strings.Replace(good, "%g", "3600", 1) + "%.0s",
		"not JSON":        `<html>%g`,
	} {
		body = b
		ds, err := c.ConsumerResets(context.Background(), refs...)
		if err == nil || len(ds) != 4 {
			t.Errorf("%s: %v, %d decisions", name, err, len(ds))
		}
		for _, d := range ds {
			if d.Safe() || d.Verdict != VerdictUnknown {
				t.Errorf("%s: %s", name, d)
			}
		}
	}
}

// TestConsumerResetByAccountName: in operator mode an account asked for by
// its JWT's name is answered with its public key as account.
func TestConsumerResetByAccountName(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"account":"APP"`, `"account":"AKEY","account_name":"APP"`, 1))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	for _, account := range []string{"APP", "AKEY"} {
		if v, err := c.ConsumerReset(context.Background(), account, "ORDERS", "worker"); err != nil || !v.Safe() {
			t.Errorf("asked for by %s: %s, %v", account, v, err)
		}
	}
}
