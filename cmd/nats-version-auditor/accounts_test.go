package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestAccountsOfOneName runs an operator-mode 2.15.3/2.14.0/2.12.15 cluster
// with two accounts whose JWTs are both named APP, each with ORDERS >
// worker led by the 2.12.15 server: the same stream, consumer and leader,
// told apart only by the account's public key. Findings, metrics and the
// API keep them apart; the API answers each by its key and neither by the
// name they share.
func TestAccountsOfOneName(t *testing.T) {
	t.Parallel()
	sys := natstest.StartOperator(t, natstest.OperatorConfig{Twin: true},
		node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.Old))
	keys := []string{sys.AccountKey(natstest.AppUser), sys.AccountKey(natstest.TwinUser)}
	slices.Sort(keys)
	for _, user := range []string{natstest.AppUser, natstest.TwinUser} {
		nc := sys.Connect("n1", user, "")
		addStreamAndConsumer(t, nc, "ORDERS", "worker", 3)
		if err := natstest.MoveConsumerLeader(nc, "ORDERS", "worker", "n3"); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("findings", func(t *testing.T) {
		// A complete audit: two accounts of one name are not one with
		// half its JetStream accounts unlisted (AUDIT_INCOMPLETE).
		var out render.Check
		err := natstest.Eventually(30*time.Second, func() error {
			var res result
			res, out = checkJSONOf(t, sys, "n1")
			if res.code != int(findings.Critical) || out.Audit.ServersResponded != 3 ||
				len(withCode(out.Findings, findings.AuditIncomplete))+len(withCode(out.Findings, findings.ServerMissing)) > 0 {
				return fmt.Errorf("exit %d, %d servers:%s", res.code, out.Audit.ServersResponded, codes(out.Findings))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range withCode(out.Findings, findings.ConsumerLeaderBelowFloor) {
			got = append(got, f.Account+" "+f.AccountName+" "+f.Stream+" "+f.Consumer+" "+f.Server)
			if want := "consumer APP (" + f.Account + ") > ORDERS > worker is led by n3"; !strings.HasPrefix(f.Message, want) {
				t.Errorf("message %q, want it to start %q", f.Message, want)
			}
		}
		want := []string{keys[0] + " APP ORDERS worker n3", keys[1] + " APP ORDERS worker n3"}
		if !slices.Equal(got, want) {
			t.Errorf("CONSUMER_LEADER_BELOW_FLOOR findings %q, want %q", got, want)
		}
	})

	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "0s")...)

	t.Run("metrics", func(t *testing.T) {
		var want []string
		for _, k := range keys {
			want = append(want, fmt.Sprintf("nats_version_auditor_consumer_leader_below_floor{account=%s,account_name=APP,consumer=worker,server_name=n3,stream=ORDERS} 1", k))
		}
		err := natstest.Eventually(30*time.Second, func() error {
			mfs := d.scrape(t)
			if v := value(mfs, "nats_version_auditor_up"); v != 1 {
				return fmt.Errorf("up = %v", v)
			}
			if got := series(mfs, "nats_version_auditor_consumer_leader_below_floor"); !slices.Equal(got, want) {
				return fmt.Errorf("series\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})

	t.Run("API", func(t *testing.T) {
		for _, k := range keys {
			err := natstest.Eventually(30*time.Second, func() error {
				code, c, body := d.ConsumerIn(t, k, "ORDERS", "worker", "?max_age=0s")
				if code != http.StatusOK || c.Account != k || c.AccountName != "APP" || c.Reset != "unanswered" || c.Leader != "n3" {
					return fmt.Errorf("by key %s: %d %s %s (%q)\n%s", k, code, c.Reset, c.Account, c.AccountName, body)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
		code, body := d.Get(t, "/api/v1/consumers/APP/ORDERS/worker")
		var e exporter.APIError
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != http.StatusConflict || e.Reset != findings.ResetUnknown ||
			!slices.Equal(e.Accounts, keys) || !strings.Contains(e.Error, keys[0]) || !strings.Contains(e.Error, keys[1]) {
			t.Errorf("by the name both have: %d %v, want 409 naming %v\n%s", code, err, keys, body)
		}
		// A name no account has is not an account either.
		if code, body := d.Get(t, "/api/v1/consumers/NOPE/ORDERS/worker"); code != http.StatusNotFound {
			t.Errorf("an account nobody has: %d %s", code, body)
		}

		// Many at once: by name, 409 for each; by key, each its own. The
		// client says ErrAmbiguous, with both keys.
		ctx := context.Background()
		c := &client.Client{BaseURL: d.Base}
		var se *client.StatusError
		if _, err := c.StreamResets(ctx, "APP", "ORDERS"); !errors.Is(err, client.ErrAmbiguous) || !errors.As(err, &se) || !slices.Equal(se.Accounts, keys) {
			t.Errorf("StreamResets by the name both have: %v, want ErrAmbiguous naming %v", err, keys)
		}
		ds, err := c.ConsumerResets(ctx, client.Ref{Account: "APP", Stream: "ORDERS", Consumer: "worker"},
			client.Ref{Account: keys[0], Stream: "ORDERS", Consumer: "worker"}, client.Ref{Account: keys[1], Stream: "ORDERS", Consumer: "worker"})
		if err != nil || len(ds) != 3 || !errors.Is(ds[0].Err, client.ErrAmbiguous) || ds[0].Safe() ||
			ds[1].Err != nil || ds[1].Consumer.Account != keys[0] || ds[2].Err != nil || ds[2].Consumer.Account != keys[1] {
			t.Errorf("ConsumerResets by name and by each key: %v, %v", ds, err)
		}
	})
}
