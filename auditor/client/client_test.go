package client

import (
	"context"
	"errors"
	"fmt"
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
		{"not JSON", http.StatusOK, `<html>`, "not JSON"},
		{"a verdict this client does not know", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"safe"`, `"safe_probably"`, 1), `unknown verdict "safe_probably"`},
		{"another consumer", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"worker"`, `"other"`, 1), "not the consumer asked for"},
		// Asked for by name, answered about an account of another name.
		{"another account", http.StatusOK, strings.Replace(fmt.Sprintf(safeBody, 0.1), `"account":"APP"`, `"account":"AKEY","account_name":"OTHER"`, 1), "not the consumer asked for"},
		{"older than MaxAge by its own account", http.StatusOK, fmt.Sprintf(safeBody, 3600.0), "older than MaxAge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL}
			v, err := c.ConsumerReset(context.Background(), "APP", "ORDERS", "worker")
			if v != VerdictUnknown || v.Safe() || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %s, %v; want unknown and an error saying %q", v, err, tt.wantErr)
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
	v, err := (&Client{BaseURL: srv.URL}).ConsumerReset(ctx, "APP", "ORDERS", "worker")
	if v != VerdictUnknown || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %s, %v; want unknown and the deadline", v, err)
	}
}

func TestConsumerResetRequest(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		fmt.Fprint(w, strings.NewReplacer(`"ORDERS"`, `"OR DERS"`, `"domain":""`, `"domain":"hub"`).Replace(fmt.Sprintf(safeBody, 0.1)))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/", Username: "app", Password: "pw", Domain: "hub", MaxAge: 5 * time.Second}
	v, err := c.ConsumerReset(context.Background(), "APP", "OR DERS", "worker")
	if err != nil || !v.Safe() {
		t.Fatalf("got %s, %v", v, err)
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
