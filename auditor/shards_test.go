package auditor

import (
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// TestShardFindings judges who pulls on made-up leader records.
func TestShardFindings(t *testing.T) {
	now := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	base := snapshot.PullState{Policy: "pinned_client", Group: "g", Timeout: time.Minute, MaxAckPending: 100, FromLeader: true,
		At: now, Created: ago(time.Hour)}
	for _, tc := range []struct {
		name   string
		policy ShardPolicy
		edit   func(*snapshot.PullState)
		want   findings.Code
	}{
		{"idle queue, backlog", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(3*time.Minute) }, findings.ConsumerPulledByNobody},
		{"only unacked", ShardPolicy{}, func(p *snapshot.PullState) { p.AckPending, p.LastDelivery = 5, ago(3*time.Minute) }, findings.ConsumerPulledByNobody},
		{"never delivered", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending = 5 }, findings.ConsumerPulledByNobody},
		{"within the default", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(time.Minute) }, ""},
		{"a recent ack", ShardPolicy{}, func(p *snapshot.PullState) {
			p.AckPending, p.LastDelivery, p.LastAck = 5, ago(time.Hour), ago(time.Second)
		}, ""},
		{"short threshold", ShardPolicy{UnpulledAfter: time.Second}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(2*time.Second) }, findings.ConsumerPulledByNobody},
		{"turned off", ShardPolicy{UnpulledAfter: -1}, func(p *snapshot.PullState) { p.Pending = 5 }, ""},
		{"a pull waits", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Waiting, p.LastDelivery = 5, 1, ago(time.Hour) }, ""},
		{"nothing pending", ShardPolicy{}, func(p *snapshot.PullState) {}, ""},
		{"paused", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Paused = 5, true }, ""},
		{"a follower's word", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.FromLeader = 5, false }, ""},
		{"overflow", ShardPolicy{}, func(p *snapshot.PullState) { p.Policy, p.Timeout, p.Pending = "overflow", 0, 5 }, findings.ConsumerPulledByNobody},
		{"stale pin", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 2, "PIN", ago(5*time.Minute), ago(3*time.Minute)
		}, findings.ConsumerStalePin},
		{"pin delivering", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 2, "PIN", ago(5*time.Minute), ago(time.Second)
		}, ""},
		{"young pin", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt = 5, 2, "PIN", ago(30*time.Second)
		}, ""},
		{"at max ack pending", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.AckPending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 100, 2, "PIN", ago(5*time.Minute), ago(3*time.Minute)
		}, ""},
		{"no pin, pulls wait", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Waiting, p.LastDelivery = 5, 2, ago(time.Hour) }, ""},
	} {
		ps := base
		tc.edit(&ps)
		snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "A", Stream: "S", Consumer: "C", Leader: "n1", Pull: &ps}}}
		e := evaluation{byName: map[string]*findings.ServerReport{"n1": {Server: snapshot.Server{Name: "n1", Cluster: "c1", Version: "2.14.0"}}}}
		e.shards(snap, tc.policy)
		var got []findings.Finding
		for _, chunk := range e.findings {
			got = append(got, chunk...)
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %+v", tc.name, got)
		case tc.want != "" && (len(got) != 1 || got[0].Code != tc.want || got[0].Server != "n1" || got[0].Cluster != "c1" || got[0].Consumer != "C"):
			t.Errorf("%s: %+v, want one %s", tc.name, got, tc.want)
		case tc.want != "":
			t.Logf("%s: %s", tc.name, got[0].Message)
		}
	}
}

// TestIndexShowsPin: the consumer view carries the pull state and, from
// the leader's record only, the pin's holder and age.
func TestIndexShowsPin(t *testing.T) {
	pull := snapshot.PullState{Policy: "pinned_client", Group: "g", Timeout: 2 * time.Minute, FromLeader: true,
		At: time.Date(2026, 1, 1, 0, 5, 0, 0, time.UTC), PinnedID: "PIN", PinnedAt: time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)}
	snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "A", Stream: "S", Consumer: "C", Pull: &pull}}}
	v, ok := NewIndex(snap).Consumer(ConsumerKey{Account: "A", Stream: "S", Consumer: "C"})
	if !ok || v.Pull == nil || v.Pull.Group != "g" || v.Pull.PinnedID != "PIN" || v.Pull.PinAge() != 4*time.Minute+30*time.Second {
		t.Fatalf("view %+v, pull %+v", v, v.Pull)
	}
	// A follower's record gives the config only (TestMergeKeepsLeadersPull).
	config := snapshot.PullState{Policy: "pinned_client", Group: "g", Timeout: 2 * time.Minute}
	snap = &snapshot.Snapshot{Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "A", Stream: "S", Consumer: "C", Pull: &config}}}
	if v, _ := NewIndex(snap).Consumer(ConsumerKey{Account: "A", Stream: "S", Consumer: "C"}); v.Pull == nil || v.Pull.FromLeader || v.Pull.PinnedID != "" {
		t.Errorf("a follower's pin shown: %+v", v.Pull)
	}
}

// TestPinnedLedBy: a restart moves the leadership, and drops the pin, of
// the replicated pinned_client consumers the server leads; an R1 consumer
// has no other peer to lead it and another policy has no pin.
func TestPinnedLedBy(t *testing.T) {
	c := func(leader string, replicas int, policy string) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Leader: leader, Replicas: replicas, Pull: &snapshot.PullState{Policy: policy}}
	}
	snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("n1", 3, snapshot.PriorityPinnedClient), c("n1", 1, snapshot.PriorityPinnedClient), c("n1", 3, "overflow"),
		c("n2", 3, snapshot.PriorityPinnedClient), {Kind: releases.KindConsumer, Leader: "n1", Replicas: 3}}}
	if got := PinnedLedBy(snap, "n1"); got != 1 {
		t.Errorf("n1 leads %d pinned consumers whose pins a restart drops, want 1", got)
	}
	if got := PinnedLedBy(snap, "n3"); got != 0 {
		t.Errorf("n3: %d, want 0", got)
	}
}

// TestGateFloor: the floor a plan's steps are gated with is the oldest
// version before or after the plan.
func TestGateFloor(t *testing.T) {
	servers := []findings.ServerReport{{}, {}}
	servers[0].SetVersion("2.14.0")
	servers[1].SetVersion("2.12.15")
	for to, want := range map[string]string{"2.15.3": "2.12.15", "2.11.12": "2.11.12"} {
		p := &Plan{To: parsed(to), Before: &findings.Report{Servers: servers}}
		if got := p.GateFloor().String(); got != want {
			t.Errorf("to %s: gate floor %s, want %s", to, got, want)
		}
	}
}

// TestCountPinChanges: a pin given, taken over or dropped between two
// audits is a change, counted apart when the leader changed too; a
// consumer one audit did not read from its leader, or another policy, is
// none.
func TestCountPinChanges(t *testing.T) {
	c := func(name, leader, pin string, fromLeader bool) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: "WORK", Consumer: name, Leader: leader,
			Pull: &snapshot.PullState{Policy: snapshot.PriorityPinnedClient, FromLeader: fromLeader, PinnedID: pin}}
	}
	before := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("same", "n1", "a", true), c("moved", "n1", "a", true), c("dropped", "n1", "a", true),
		c("newleader", "n1", "a", true), c("unread", "n1", "a", true), c("gone", "n1", "a", true)}}
	after := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("same", "n1", "a", true), c("moved", "n1", "b", true), c("dropped", "n1", "", true),
		c("newleader", "n2", "", true), c("unread", "n2", "", false), c("new", "n1", "a", true)}}
	report := func(snap *snapshot.Snapshot, servers ...string) *findings.Report {
		r := &findings.Report{Snapshot: snap}
		for _, s := range servers {
			r.Servers = append(r.Servers, findings.ServerReport{Server: snapshot.Server{Name: s}})
		}
		return r
	}
	if got, want := CountPinChanges(report(before, "n1", "n2"), report(after, "n1", "n2")), (findings.PinChanges{Pin: 2, WithLeader: 1}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	// A sidecar counts the consumers its server leads; together they
	// count the system's.
	n1, n2 := CountPinChanges(report(before, "n1"), report(after, "n1")), CountPinChanges(report(before, "n2"), report(after, "n2"))
	if n1 != (findings.PinChanges{Pin: 2}) || n2 != (findings.PinChanges{WithLeader: 1}) {
		t.Errorf("n1's sidecar %+v, n2's %+v; want the pins under n1 and the new leader n2's", n1, n2)
	}
}
