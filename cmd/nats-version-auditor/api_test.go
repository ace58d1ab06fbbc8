package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestAPIResetVerdictsAgainstRealReset holds the API's verdicts for the
// consumers of a 2.15.3/2.14.0/2.12.15 cluster against what RESET really
// does to them, and the client package against the API, in plain and in
// operator (JWT) mode.
func TestAPIResetVerdictsAgainstRealReset(t *testing.T) {
	t.Parallel()
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			testAPIResetVerdictsAgainstRealReset(t, mode)
		})
	}
}

func testAPIResetVerdictsAgainstRealReset(t *testing.T, mode natstest.Mode) {
	withTag := func(s natstest.Spec) natstest.Spec {
		s.Tags = append(s.Tags, "reset:yes")
		return s
	}
	sys := mode.Start(t, withTag(node("n1", natstest.New)), withTag(node("n2", natstest.Floor)), node("n3", natstest.Old))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "led-by-old", 3)
	addStreamAndConsumer(t, app, "BILLING", "followed-by-old", 3)
	addStreamAndConsumer(t, app, "SAFE", "all-new", 2, "reset:yes")
	addStreamAndConsumer(t, app, "MOVING", "moves", 3)
	for _, m := range []struct{ stream, consumer, leader string }{
		{"ORDERS", "led-by-old", "n3"}, {"BILLING", "followed-by-old", "n2"}, {"SAFE", "all-new", "n1"}, {"MOVING", "moves", "n1"},
	} {
		if err := natstest.MoveConsumerLeader(app, m.stream, m.consumer, m.leader); err != nil {
			t.Fatal(err)
		}
	}
	// --audit.min-interval 0s: every request that asks for a fresher
	// audit than the last gets one.
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "0s", "--timeout", "3s")...)

	t.Run("verdicts", func(t *testing.T) {
		for _, tt := range []struct {
			stream, consumer string
			want             client.Verdict
			peers            string
		}{
			{"ORDERS", "led-by-old", client.VerdictUnanswered, "n1=2.15.3/5 n2=2.14.0/4 n3=2.12.15/3*"},
			{"BILLING", "followed-by-old", client.VerdictCrashesFollower, "n1=2.15.3/5 n2=2.14.0/4* n3=2.12.15/3"},
			{"SAFE", "all-new", client.VerdictSafe, "n1=2.15.3/5* n2=2.14.0/4"},
			{"MOVING", "moves", client.VerdictCrashesFollower, "n1=2.15.3/5* n2=2.14.0/4 n3=2.12.15/3"},
		} {
			// max_age=0s: an audit started after this request. In operator
			// mode the account is its public key, and asked for by it (as
			// docs/api.md says) or by its JWT's name.
			key, name := sys.AccountKey(natstest.AppUser), ""
			if mode == natstest.Operator {
				name = "APP"
			}
			for _, account := range slices.Compact([]string{"APP", key}) {
				code, c, body := d.ConsumerIn(t, account, tt.stream, tt.consumer, "?max_age=0s")
				if code != http.StatusOK || c.Reset != tt.want || peersOf(c) != tt.peers || c.Account != key || c.AccountName != name ||
					c.Stream != tt.stream || c.Consumer != tt.consumer || !c.Audit.Complete || c.Replicas != len(c.Peers) {
					t.Errorf("%s/%s/%s: %d %s peers %q account %s (%q), want 200 %s peers %q account %s (%q)\n%s", account, tt.stream, tt.consumer,
						code, c.Reset, peersOf(c), c.Account, c.AccountName, tt.want, tt.peers, key, name, body)
				}
			}
		}
	})

	t.Run("unknown consumers are 404s", func(t *testing.T) {
		for _, q := range []struct{ stream, consumer, query string }{
			{"ORDERS", "nope", ""}, {"NOPE", "led-by-old", ""}, {"ORDERS", "led-by-old", "?domain=elsewhere"},
		} {
			code, c, body := d.ConsumerAt(t, q.stream, q.consumer, q.query)
			var e exporter.APIError
			_ = json.Unmarshal([]byte(body), &e)
			if code != http.StatusNotFound || c.Reset != client.VerdictUnknown || !strings.HasPrefix(e.Error, "consumer APP > "+q.stream+" > "+q.consumer+" was not seen") {
				t.Errorf("%s/%s%s: %d %s", q.stream, q.consumer, q.query, code, body)
			}
		}
		if code, body := d.Get(t, "/api/v1/consumers/APP/ORDERS/led-by-old?max_age=soon"); code != http.StatusBadRequest || !strings.Contains(body, `max_age \"soon\"`) {
			t.Errorf("a bad max_age: %d %s", code, body)
		}
		if code, c, _ := d.ConsumerAt(t, "ORDERS", "led-by-old", "?domain="); code != http.StatusOK || c.Reset != client.VerdictUnanswered {
			t.Errorf("the default domain named explicitly: %d %s", code, c.Reset)
		}
	})

	t.Run("unanswered: RESET times out", func(t *testing.T) {
		if err := natstest.ResetConsumer(app, "ORDERS", "led-by-old", 2*time.Second); !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("RESET of the consumer the API calls unanswered: %v, want a timeout", err)
		}
	})

	t.Run("safe: RESET is answered and every peer survives", func(t *testing.T) {
		if err := natstest.ResetConsumer(app, "SAFE", "all-new", 5*time.Second); err != nil {
			t.Fatalf("RESET of the consumer the API calls safe: %v", err)
		}
		// The reset entry is replicated to n2; a server that could not apply
		// it would exit, as n3 does below.
		if _, err := natstest.ConsumerInfo(app, "SAFE", "all-new"); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"n1", "n2", "n3"} {
			if !sys.Running(n) {
				t.Fatalf("%s exited after a RESET the API called safe:\n%s", n, sys.LogTail(n, 10))
			}
		}
	})

	t.Run("the verdict follows a leader moved within one max_age", func(t *testing.T) {
		if err := natstest.MoveConsumerLeader(app, "MOVING", "moves", "n3"); err != nil {
			t.Fatal(err)
		}
		moved := time.Now()
		// An answer no older than the time since the move knows of it.
		maxAge := time.Since(moved).Round(time.Millisecond) + time.Millisecond
		code, c, body := d.ConsumerAt(t, "MOVING", "moves", "?max_age="+maxAge.String())
		if code != http.StatusOK || c.Reset != client.VerdictUnanswered || c.Leader != "n3" {
			t.Fatalf("after the move to n3, with max_age %s: %d %s leader %s\n%s", maxAge, code, c.Reset, c.Leader, body)
		}
		if c.Audit.Started.Before(moved.Add(-maxAge)) {
			t.Errorf("the answer's audit started at %s, before the bound %s", c.Audit.Started, moved.Add(-maxAge))
		}
	})

	t.Run("report", func(t *testing.T) {
		code, body := d.Get(t, "/api/v1/report?max_age=0s")
		var rep exporter.APIReport
		if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK {
			t.Fatalf("/api/v1/report: %d %v\n%.300s", code, err, body)
		}
		_, check := checkJSONOf(t, sys, "n1")
		if rep.Status != findings.Critical || rep.Status != check.Status || rep.Floor != check.Floor || len(rep.Servers) != 3 ||
			rep.AgeSeconds < 0 || rep.AgeSeconds > 60 {
			t.Errorf("report: status %s floor %s, %d servers, age %v; check says %s %s", rep.Status, rep.Floor, len(rep.Servers), rep.AgeSeconds, check.Status, check.Floor)
		}
		summary := func(fs []findings.Finding) []string {
			var out []string
			for _, f := range fs {
				if f.Consumer != "" {
					out = append(out, fmt.Sprintf("%s %s/%s %s", f.Code, f.Stream, f.Consumer, f.Server))
				}
			}
			return out
		}
		if got, want := summary(rep.Findings), summary(check.Findings); !slices.Equal(got, want) {
			t.Errorf("consumer findings of the report\n%s\nand of check\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("client", func(t *testing.T) {
		ctx := context.Background()
		c := &client.Client{BaseURL: d.Base}
		for _, account := range slices.Compact([]string{"APP", sys.AccountKey(natstest.AppUser)}) {
			if v, err := c.ConsumerReset(ctx, account, "SAFE", "all-new"); err != nil || v.Verdict != client.VerdictSafe || !v.Safe() {
				t.Errorf("safe consumer of %s: %s, %v", account, v, err)
			}
		}
		if v, err := c.ConsumerReset(ctx, "APP", "ORDERS", "led-by-old"); err != nil || v.Verdict != client.VerdictUnanswered || v.Safe() ||
			!strings.Contains(v.String(), "unanswered: leader n3 runs 2.12.15") {
			t.Errorf("consumer led by 2.12: %s, %v; want the reason with the verdict", v, err)
		}
		v, err := c.ConsumerReset(ctx, "APP", "ORDERS", "nope")
		var se *client.StatusError
		if v.Verdict != client.VerdictUnknown || v.Safe() || !errors.Is(err, client.ErrNotFound) || !errors.As(err, &se) || se.Code != http.StatusNotFound {
			t.Errorf("unknown consumer: %s, %v; want unknown and ErrNotFound", v, err)
		}
		// The default domain, named: these servers have no domain.
		dc := &client.Client{BaseURL: d.Base, Domain: client.DefaultDomain}
		if v, err := dc.ConsumerReset(ctx, "APP", "SAFE", "all-new"); err != nil || !v.Safe() {
			t.Errorf("in the default domain: %s, %v", v, err)
		}
		if v, err := (&client.Client{BaseURL: d.Base, Domain: client.InDomain("hub")}).ConsumerReset(ctx, "APP", "SAFE", "all-new"); v.Safe() || !errors.Is(err, client.ErrNotFound) {
			t.Errorf("in a domain the system does not have: %s, %v", v, err)
		}
		// A fresh audit: one that started after the request.
		asked := time.Now()
		fc := &client.Client{BaseURL: d.Base, Fresh: true}
		if v, err := fc.ConsumerReset(ctx, "APP", "SAFE", "all-new"); err != nil || !v.Safe() || v.Consumer.Audit.Started.Before(asked.Add(-time.Second)) {
			t.Errorf("fresh: %s, %v, audit started %v, asked at %v", v, err, v.Consumer, asked)
		}
		// Many consumers in one request: a list, and a whole stream.
		ds, err := c.ConsumerResets(ctx, client.Ref{Account: "APP", Stream: "SAFE", Consumer: "all-new"},
			client.Ref{Account: "APP", Stream: "ORDERS", Consumer: "led-by-old"}, client.Ref{Account: "APP", Stream: "ORDERS", Consumer: "nope"})
		if err != nil || len(ds) != 3 || !ds[0].Safe() || ds[1].Verdict != client.VerdictUnanswered || ds[1].Safe() ||
			!errors.Is(ds[2].Err, client.ErrNotFound) || ds[2].Safe() {
			t.Errorf("ConsumerResets: %v, %v", ds, err)
		}
		all, err := c.StreamResets(ctx, "APP", "BILLING")
		if err != nil || len(all) != 1 || all["followed-by-old"].Verdict != client.VerdictCrashesFollower || all["followed-by-old"].Safe() {
			t.Errorf("StreamResets(BILLING): %v, %v", all, err)
		}
		if _, err := c.StreamResets(ctx, "APP", "NOPE"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("StreamResets(NOPE): %v", err)
		}

		// An auditor that audits at most once an hour cannot meet a
		// max_age shorter than the age of its first audit.
		stale := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "1h")...)
		if code, _ := stale.Get(t, "/api/v1/report"); code != http.StatusOK {
			t.Fatalf("first audit: %d", code)
		}
		start := time.Now()
		code, raw, body := stale.ConsumerAt(t, "SAFE", "all-new", "?max_age=1ms")
		if code != http.StatusOK || raw.Reset != client.VerdictUnknown || !strings.Contains(raw.Reason, "max_age 1ms") || raw.Leader != "n1" {
			t.Errorf("stale answer: %d %s %q\n%s", code, raw.Reset, raw.Reason, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a bound that cannot be met took %s to answer", d)
		}
		sc := &client.Client{BaseURL: stale.Base, MaxAge: time.Millisecond}
		if v, err := sc.ConsumerReset(ctx, "APP", "SAFE", "all-new"); v.Verdict != client.VerdictUnknown || v.Safe() || !errors.Is(err, client.ErrStale) {
			t.Errorf("stale auditor: %s, %v; want unknown and ErrStale", v, err)
		}
		fresh := &client.Client{BaseURL: stale.Base, Fresh: true}
		if v, err := fresh.ConsumerReset(ctx, "APP", "SAFE", "all-new"); v.Safe() || !errors.Is(err, client.ErrStale) {
			t.Errorf("a fresh audit from an auditor that audits once an hour: %s, %v; want ErrStale", v, err)
		}
		if ds, err := fresh.ConsumerResets(ctx, client.Ref{Account: "APP", Stream: "SAFE", Consumer: "all-new"}); len(ds) != 1 || ds[0].Safe() || !errors.Is(err, client.ErrStale) {
			t.Errorf("a fresh batch from an auditor that audits once an hour: %v, %v; want ErrStale", ds, err)
		}
		if code, body := stale.Get(t, "/api/v1/report?max_age=1ms"); code != http.StatusServiceUnavailable || !strings.Contains(body, "max_age 1ms") {
			t.Errorf("stale report: %d %s", code, body)
		}

		stale.stop(t)
		if v, err := sc.ConsumerReset(ctx, "APP", "SAFE", "all-new"); v.Verdict != client.VerdictUnknown || v.Safe() || err == nil {
			t.Errorf("stopped auditor: %s, %v; want unknown and an error", v, err)
		}
	})

	t.Run("client through TLS and basic auth", func(t *testing.T) {
		webConfig, pool := tlsWebConfig(t, "orders-app", "app-pass")
		addr := natstest.FreeAddr(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		stderr := &lockedBuffer{}
		go func() {
			done <- run(ctx, append([]string{"serve", "--web.listen-address", addr, "--web.config.file", webConfig}, sys.SysArgs("n1")...), io.Discard, stderr)
		}()
		defer func() { cancel(); <-done }()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
		c := &client.Client{BaseURL: "https://" + addr, HTTPClient: hc}
		var se *client.StatusError
		err := natstest.Eventually(10*time.Second, func() error {
			_, err := c.ConsumerReset(context.Background(), "APP", "SAFE", "all-new")
			if errors.As(err, &se) {
				return nil
			}
			return fmt.Errorf("want a 401, got %v", err)
		})
		if err != nil || se.Code != http.StatusUnauthorized {
			t.Fatalf("without credentials: %v\n%s", err, stderr)
		}
		c.Username, c.Password = "orders-app", "app-pass"
		if v, err := c.ConsumerReset(context.Background(), "APP", "SAFE", "all-new"); err != nil || !v.Safe() {
			t.Errorf("with credentials: %s, %v", v, err)
		}
	})

	// Last: this one takes n3 down.
	t.Run("crashes_follower: RESET is answered and the follower dies", func(t *testing.T) {
		if err := natstest.ResetConsumer(app, "BILLING", "followed-by-old", 5*time.Second); err != nil {
			t.Fatalf("RESET through the 2.14 leader: %v", err)
		}
		if err := sys.WaitExit("n3", 20*time.Second); err != nil {
			t.Fatalf("the 2.12 follower survived a RESET the API called crashes_follower: %v", err)
		}
		if !strings.Contains(sys.Log("n3"), "Unknown group entry op type: 18") {
			t.Fatalf("n3 exited, but not with the reset-op panic:\n%s", sys.LogTail("n3", 20))
		}
		// With n3 gone, nothing about BILLING can be vouched for.
		code, c, body := d.ConsumerAt(t, "BILLING", "followed-by-old", "?max_age=0s")
		if code != http.StatusOK || c.Reset != client.VerdictUnknown || !strings.Contains(c.Reason, "n3") {
			t.Errorf("after n3 died: %d %s %q\n%s", code, c.Reset, c.Reason, body)
		}
		// Missing, and still the 2.12 server it was when last seen.
		code, body = d.Get(t, "/api/v1/report?max_age=0s")
		var rep exporter.APIReport
		if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK {
			t.Fatalf("/api/v1/report: %d %v\n%.300s", code, err, body)
		}
		var missing []findings.Finding
		for _, f := range withCode(rep.Findings, findings.ServerMissing) {
			if f.Server == "n3" {
				missing = append(missing, f)
			}
		}
		if len(missing) != 1 || missing[0].Version != "2.12.15" || missing[0].ServerLevel == nil || *missing[0].ServerLevel != 3 ||
			!strings.Contains(missing[0].Message, "last seen running 2.12.15") {
			t.Errorf("SERVER_MISSING n3 %+v", missing)
		}
		// A follower of a consumer whose leader answers RESET: the words say
		// it crashes again on restart, before it is restarted.
		if len(missing) == 1 && !strings.Contains(missing[0].Message, "if it crashed on a replicated RESET, it crashes again on every restart until it is upgraded") {
			t.Errorf("SERVER_MISSING n3 says nothing of the restart: %q", missing[0].Message)
		}
		// And it does: its leader catches it up with the reset entry again.
		sys.Relaunch("n3")
		if err := sys.WaitExit("n3", 60*time.Second); err != nil {
			t.Fatalf("the crashed 2.12 follower survived its restart: %v", err)
		}
		if n := strings.Count(sys.Log("n3"), "Unknown group entry op type: 18"); n != 2 {
			t.Fatalf("n3 exited again with %d reset-op panics logged in all, want 2:\n%s", n, sys.LogTail("n3", 20))
		}
	})
}

// TestClientVerdictsAreTheAuditors keeps the client package, which imports
// nothing of the auditor's, in step with it.
func TestClientVerdictsAreTheAuditors(t *testing.T) {
	var a, c []string
	for _, v := range findings.ResetVerdicts {
		a = append(a, string(v))
	}
	for _, v := range client.Verdicts {
		c = append(c, string(v))
	}
	if !slices.Equal(a, c) {
		t.Errorf("auditor verdicts %v, client verdicts %v", a, c)
	}
}
