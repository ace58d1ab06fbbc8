package auditor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestPulledByTwoOnRealServers: two processes pull one pinned shard with
// nats.go's Consume. The server gives one the pin and queues the other's
// pulls (CONSUMER.INFO: num_waiting, pinned_client_id); the audit, hearing
// the pulls through the system account's import, names both, the holder
// by the pin its pulls carry, and finds CONSUMER_PULLED_BY_TWO. A shard
// pulled by one process, which then starts a second Consume on it (a new
// inbox), stays pulled by one.
func TestPulledByTwoOnRealServers(t *testing.T) {
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			spec := func(name, v string) natstest.Spec { return natstest.ShowingPulls(natstest.Node(name, v, "c1")) }
			sys := mode.Start(t, spec("n1", natstest.Floor), spec("n2", natstest.New), spec("n3", natstest.New))
			sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
			app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
			js, err := jetstream.New(app)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Replicas: 3}); err != nil {
				t.Fatal(err)
			}
			shards, err := natstest.AddShards(app, "WORK", "work", 2, 3, 3*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			watch, err := collect.WatchPulls(t.Context(), sysConn, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Stop()

			a, b := sys.ShardOwner("a", "n2"), sys.ShardOwner("b", "n3")
			a.Own("WORK", shards[0])
			a.Own("WORK", shards[1])
			for i := range 2 {
				if _, err := natstest.Publish(app, fmt.Sprintf("work.%d", i), []byte("job"), 10*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			// a takes both pins before b pulls.
			if err := natstest.WaitPinned(t.Context(), js, "WORK", 30*time.Second, shards...); err != nil {
				t.Fatal(err)
			}
			b.Own("WORK", shards[0])
			a.Own("WORK", shards[1]) // a second Consume of the same process

			var f findings.Finding
			var pulls map[string]*snapshot.PullState
			err = natstest.Eventually(60*time.Second, func() error {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				snap, err := collect.Collect(ctx, sysConn, collect.Options{})
				if err != nil {
					return err
				}
				watch.Fill(ctx, snap, 5*time.Second)
				if snap.Pulls == nil || !snap.Pulls.Visible[sys.AccountKey(natstest.AppUser)] {
					return fmt.Errorf("pulls of APP not visible: %+v", snap.Pulls)
				}
				pulls = map[string]*snapshot.PullState{}
				for _, c := range snap.Consumers {
					pulls[c.Consumer] = c.Pull
				}
				if n := len(pulls[shards[0]].Pullers); n != 2 {
					return fmt.Errorf("%s: %d pullers heard, want 2: %+v", shards[0], n, pulls[shards[0]].Pullers)
				}
				if n := len(pulls[shards[1]].Pullers); n != 1 {
					return fmt.Errorf("%s: %d pullers heard, want 1: %+v", shards[1], n, pulls[shards[1]].Pullers)
				}
				info, err := natstest.ShardInfo(ctx, js, "WORK", shards[0])
				if err != nil {
					return err
				}
				// The server's own view: a pin, and b's pulls queued behind it.
				if natstest.PinOf(info) == "" || info.NumWaiting < 2 {
					return fmt.Errorf("%s: CONSUMER.INFO pin %q, %d waiting", shards[0], natstest.PinOf(info), info.NumWaiting)
				}
				// a's pulls carry the pin once a pull after the first
				// delivery has been heard.
				if p := pulls[shards[1]].Pullers[0]; p.Name != "a" || !p.Holder || p.Server != "n2" {
					return fmt.Errorf("%s: puller %+v, want a holding the pin on n2", shards[1], p)
				}
				if h := pulls[shards[0]].Pullers[0]; !h.Holder || h.PinID != natstest.PinOf(info) {
					return fmt.Errorf("%s: first puller %+v, the leader's pin %q", shards[0], h, natstest.PinOf(info))
				}
				found := map[string]findings.Finding{}
				for _, f := range Evaluate(snap, Policy{Floor: version.DefaultFloor}).Findings {
					if f.Code == findings.ConsumerPulledByTwo {
						found[f.Consumer] = f
					}
				}
				if len(found) != 1 {
					return fmt.Errorf("CONSUMER_PULLED_BY_TWO for %d consumers, want 1 (%s)", len(found), shards[0])
				}
				f = found[shards[0]]
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"pulled by 2 processes", "a (127.0.0.1 on n2) holds the pin", "b (127.0.0.1 on n3) pulls without it"} {
				if !strings.Contains(f.Message, want) {
					t.Errorf("the finding does not say %q: %s", want, f.Message)
				}
			}
			t.Logf("%s: %s", f.Code, f.Message)
		})
	}
}
