package collect_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestCollectHearsARestartedServerByItsHeartbeat starts an audit while a
// server is down, a meta peer and a peer of an R3 stream, so that the audit
// waits for it, then restarts that server on another version. The audit
// pinged before the server came back: without heartbeats it could only
// wait out its timeout and report the server missing. With serve's
// heartbeats it takes the new process's first heartbeat as its answer, asks
// it for LEAFZ and JSZ, and ends complete with the server's new version,
// long before the timeout.
func TestCollectHearsARestartedServerByItsHeartbeat(t *testing.T) {
	for _, tt := range []struct {
		name     string
		graceful bool
		// down is how long the audit runs before the server starts again.
		down time.Duration
	}{
		{"killed", false, 2 * time.Second},
		{"stopped", true, 2 * time.Second},
		// Started again at once, the server may answer the ping itself
		// while it knows of no other server yet: its later heartbeats
		// complete its count of active servers.
		{"killed and started at once", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sys := natstest.Start(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
				natstest.Node("n3", natstest.Old, "c1"))
			app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
			if err := natstest.AddStream(app, server.StreamConfig{Name: "R3", Subjects: []string{"r3"}, Replicas: 3, Storage: server.MemoryStorage}); err != nil {
				t.Fatal(err)
			}
			nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
			var events collect.Events
			sub, err := nc.Subscribe(collect.StatszEventSubject, func(m *nats.Msg) {
				if hb, err := collect.ParseHeartbeat(m.Data); err == nil {
					events.Heartbeat(hb)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe() //nolint:errcheck // the connection closes with the test
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			if tt.graceful {
				if err := sys.Stop("n3", 30*time.Second); err != nil {
					t.Fatal(err)
				}
			} else {
				sys.Kill("n3")
			}

			const timeout = 60 * time.Second
			type result struct {
				snap *snapshot.Snapshot
				err  error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				snap, err := collect.Collect(context.Background(), nc, collect.Options{Timeout: timeout, Events: &events})
				done <- result{snap, err}
			}()
			// The audit waits for n3 (its routes' peers and the meta group name
			// it) until it comes back: it must not end before.
			select {
			case r := <-done:
				t.Fatalf("the audit ended while n3 was down, after %s: %+v", time.Since(start), r.snap.Servers)
			case <-time.After(tt.down):
			}
			sys.Restart("n3", natstest.New)
			back := time.Now()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			took := time.Since(start)
			t.Logf("audit took %s, %s after n3 accepted clients again", took.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
			if took > timeout/2 {
				t.Errorf("the audit took %s of its %s timeout", took, timeout)
			}
			rep := auditor.Evaluate(r.snap, auditor.Policy{Floor: version.DefaultFloor})
			if !rep.Complete() {
				t.Errorf("incomplete: %+v", rep.Findings)
			}
			var n3 *snapshot.Server
			for i, s := range r.snap.Servers {
				if s.Name == "n3" {
					n3 = &r.snap.Servers[i]
				}
			}
			if n3 == nil || n3.Version != natstest.New[1:] {
				t.Fatalf("n3 is %+v, want it at %s", n3, natstest.New)
			}
			for _, s := range r.snap.Streams {
				if s.Stream == "R3" && len(s.Peers) != 3 {
					t.Errorf("stream R3 has peers %v", s.Peers)
				}
			}
		})
	}
}

// TestCollectStopsWaitingForAServerThatShutDown has an audit ask a server
// that answers nothing (paused, as a server on its way down can be), then
// tells it the server's SHUTDOWN: the audit fails that server's requests at
// once, as the timeout would have, and reports them, instead of waiting out
// its timeout.
func TestCollectStopsWaitingForAServerThatShutDown(t *testing.T) {
	sys := natstest.Start(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.Floor, "c1"))
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	replies, err := natstest.Gather(nc, collect.PingSubject, nil, 3, 10*time.Second)
	if err != nil || len(replies) != 3 {
		t.Fatalf("%d STATSZ replies: %v", len(replies), err)
	}
	var heartbeat []byte
	var id string
	for _, m := range replies {
		var s server.ServerStatsMsg
		if err := json.Unmarshal(m.Data, &s); err != nil {
			t.Fatal(err)
		}
		if s.Server.Name == "n3" {
			heartbeat, id = m.Data, s.Server.ID
		}
	}
	sys.Pause("n3")
	defer sys.Resume("n3")

	var events collect.Events
	const timeout = 60 * time.Second
	done := make(chan *snapshot.Snapshot, 1)
	start := time.Now()
	go func() {
		snap, err := collect.Collect(context.Background(), nc, collect.Options{Timeout: timeout, Events: &events})
		if err != nil {
			t.Error(err)
		}
		done <- snap
	}()
	// n3 cannot answer the ping; its heartbeat (as it was) has the audit ask
	// it for LEAFZ and JSZ, which it cannot answer either.
	time.Sleep(time.Second)
	hb, err := collect.ParseHeartbeat(heartbeat)
	if err != nil {
		t.Fatal(err)
	}
	events.Heartbeat(hb)
	select {
	case snap := <-done:
		t.Fatalf("the audit ended before n3's SHUTDOWN, after %s: %+v", time.Since(start), snap.Problems)
	case <-time.After(time.Second):
	}
	events.Shutdown(strings.Replace(collect.ShutdownEventSubject, "*", id, 1))
	snap := <-done
	if took := time.Since(start); took > timeout/2 {
		t.Errorf("the audit took %s of its %s timeout after n3's SHUTDOWN", took, timeout)
	}
	var failed []string
	for _, p := range snap.Problems {
		if p.Server == "n3" && strings.Contains(p.Err, "shut down during the audit") {
			failed = append(failed, p.Request)
		}
	}
	slices.Sort(failed)
	if !slices.Equal(failed, []string{"JSZ", "LEAFZ"}) {
		t.Errorf("n3's requests failed: %v; problems %+v", failed, snap.Problems)
	}
	if auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor}).Complete() {
		t.Error("an audit with n3's requests unanswered is complete")
	}
}
