package collect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestRereadPullsOnRealServers: on 2.15.3, 2.14.0 and 2.12.15 side by side,
// JSZ asked for one account lists that account alone, and an account a
// server does not have lists none (not every account: the request leaves
// accounts unset). RereadPulls reads the shards' leaders' records again,
// the pin a pull took among them, as each shard's leader answers
// CONSUMER.INFO; and names what only a full audit reads: a shard whose
// leader moved, a consumer given a priority policy, a server that stopped.
func TestRereadPullsOnRealServers(t *testing.T) {
	spec := func(name, v string) natstest.Spec {
		sp := natstest.Node(name, v, "c1")
		sp.ExtraAccounts = 1
		return sp
	}
	sys := natstest.Start(t, spec("n1", natstest.New), spec("n2", natstest.Floor), spec("n3", natstest.Old))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	other := sys.Connect("n1", "acc0001", "acc")
	shards := natstest.AddWorkShards(t, app, 2, 3, 3*time.Second)
	if err := natstest.AddStream(other, server.StreamConfig{Name: "OTHER", Subjects: []string{"other.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if err := natstest.AddConsumer(other, "OTHER", server.ConsumerConfig{Durable: "plain", AckPolicy: server.AckExplicit, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(t.Context(), sysConn, Options{})
	if err != nil || len(snap.Problems) > 0 {
		t.Fatalf("audit: %v, %+v", err, snap)
	}

	for _, s := range snap.Servers {
		for _, acc := range []string{"APP", "NOPE"} {
			js, err := rereadAccount(t.Context(), sysConn, s, acc, DefaultMaxReplyBytes)
			if err != nil {
				t.Fatalf("%s (%s), account %s: %v", s.Name, s.Version, acc, err)
			}
			var listed []string
			for _, a := range js.AccountDetails {
				listed = append(listed, a.id())
			}
			if want := map[string]string{"APP": "[APP]", "NOPE": "[]"}[acc]; fmt.Sprint(listed) != want {
				t.Errorf("%s (%s) asked for account %s listed %v, want %s", s.Name, s.Version, acc, listed, want)
			}
		}
	}

	// A pull takes shard-0's pin.
	owner := sys.ShardOwner("a", "n2")
	owner.Own("WORK", shards[0])
	js := natstest.PinWorkShards(t, app, shards[0])
	info, err := natstest.ShardInfo(t.Context(), js, "WORK", shards[0])
	if err != nil {
		t.Fatal(err)
	}
	reread, reason := RereadPulls(t.Context(), sysConn, snap, Options{Timeout: 10 * time.Second})
	if reason != "" {
		t.Fatalf("nothing but a pin changed: %s", reason)
	}
	was, now := consumersOf(snap), consumersOf(reread)
	if p := now["WORK/"+shards[0]].Pull; p == nil || !p.FromLeader || p.PinnedID != natstest.PinOf(info) || !p.At.After(was["WORK/"+shards[0]].Pull.At) {
		t.Errorf("shard-0 re-read %+v, want its leader's record now, pinned to %q as CONSUMER.INFO says", p, natstest.PinOf(info))
	}
	if p := was["WORK/"+shards[0]].Pull; p.PinnedID != "" {
		t.Errorf("the snapshot re-read changed: shard-0 pinned to %q", p.PinnedID)
	}
	if p := now["OTHER/plain"]; p.Pull != nil || p.Leader != was["OTHER/plain"].Leader {
		t.Errorf("a consumer of another account: %+v", p)
	}

	// Its leader moves: only an audit reads the new leader's record.
	leader := was["WORK/"+shards[1]].Leader
	to := map[string]string{"n1": "n2", "n2": "n1", "n3": "n1"}[leader]
	if err := natstest.MoveConsumerLeader(app, "WORK", shards[1], to); err != nil {
		t.Fatal(err)
	}
	if _, reason := RereadPulls(t.Context(), sysConn, snap, Options{Timeout: 10 * time.Second}); !strings.Contains(reason, fmt.Sprintf("is led by %q, the last audit read %q", to, leader)) {
		t.Errorf("shard-1's leader moved from %s to %s: reason %q", leader, to, reason)
	}

	// A consumer given a priority policy the audit did not see.
	if snap, err = Collect(t.Context(), sysConn, Options{}); err != nil || len(snap.Problems) > 0 {
		t.Fatalf("audit: %v", err)
	}
	if _, err := natstest.AddShards(other, "OTHER", "other", 1, 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, reason := RereadPulls(t.Context(), sysConn, snap, Options{Timeout: 10 * time.Second}); reason != "" {
		t.Errorf("a shard in an account without one: the re-read does not read it, yet says %q", reason)
	}
	if err := natstest.AddConsumer(app, "WORK", server.ConsumerConfig{Durable: "late", AckPolicy: server.AckExplicit, Replicas: 3,
		PriorityPolicy: server.PriorityOverflow, PriorityGroups: []string{natstest.ShardGroup}}); err != nil {
		t.Fatal(err)
	}
	if _, reason := RereadPulls(t.Context(), sysConn, snap, Options{Timeout: 10 * time.Second}); !strings.Contains(reason, "APP > WORK > late") || !strings.Contains(reason, "did not see it") {
		t.Errorf("a new consumer with a priority policy: reason %q", reason)
	}

	// A server stops.
	if snap, err = Collect(t.Context(), sysConn, Options{}); err != nil || len(snap.Problems) > 0 {
		t.Fatalf("audit: %v", err)
	}
	if err := sys.Stop("n3", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, reason := RereadPulls(t.Context(), sysConn, snap, Options{Timeout: 2 * time.Second}); !strings.HasPrefix(reason, "n3 did not give the shards' accounts") {
		t.Errorf("n3 stopped: reason %q", reason)
	}
}

// consumersOf indexes snap's consumers by stream/consumer.
func consumersOf(snap *snapshot.Snapshot) map[string]snapshot.Asset {
	out := map[string]snapshot.Asset{}
	for _, a := range snap.Consumers {
		out[a.Stream+"/"+a.Consumer] = a
	}
	return out
}
