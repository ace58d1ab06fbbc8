package auditor

import (
	"fmt"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Applications that shard their work over NATS make each shard a durable
// pull consumer with a priority group, and decide which process owns which
// shard themselves. While their processes disagree (a rollout that changes
// the shard count), a shard can be pulled by nobody. The servers see it:
// the consumer's leader holds its backlog, the pulls waiting on it and its
// pin. This file judges it; pulldecode.go reads it from JSZ.

// shards judges who pulls each consumer with a priority policy, on its
// leader's record.
func (e *evaluation) shards(snap *snapshot.Snapshot, p ShardPolicy) {
	after := p.unpulledAfter()
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		ps := a.Pull
		if ps == nil || !ps.FromLeader || ps.Paused || !e.selected(a) {
			continue
		}
		switch {
		case after > 0 && pulledByNobody(ps, after):
			f := e.pullFinding(a, findings.ConsumerPulledByNobody)
			f.Message = fmt.Sprintf("consumer %s (%s%s) is pulled by nobody: %d messages pending and %d delivered unacked, no pull waiting on its leader %s, %s",
				a.Label(), ps.Policy, ps.GroupLabel(), ps.Pending, ps.AckPending, a.Leader, ps.IdleLabel())
			e.add(f)
		case stuckBehindPin(ps):
			f := e.pullFinding(a, findings.ConsumerStalePin)
			f.Message = fmt.Sprintf("consumer %s (%s%s) is stuck behind a stale pin: %s holds it for %s (priority_timeout %s) and renews it, "+
				"yet its leader %s has delivered nothing for %s with %d messages pending and %d waiting pull requests: only pulls without the pin wait%s",
				a.Label(), ps.Policy, ps.GroupLabel(), ps.HolderLabel(), ps.PinAge().Round(time.Second), ps.Timeout,
				a.Leader, ps.Undelivered().Round(time.Second), ps.Pending, ps.Waiting, ps.WaitersLabel())
			e.add(f)
		case pulledByTwo(ps):
			f := e.pullFinding(a, findings.ConsumerPulledByTwo)
			f.Message = fmt.Sprintf("consumer %s (%s%s) is pulled by %d processes: %s; the others' pulls wait on the pin, so one takes the messages, but the shard has %d owners",
				a.Label(), ps.Policy, ps.GroupLabel(), len(ps.Pullers), ps.PullersLabel(), len(ps.Pullers))
			e.add(f)
		}
	}
}

func (e *evaluation) pullFinding(a *snapshot.Asset, code findings.Code) findings.Finding {
	f := assetFinding(a)
	f.Code, f.Server = code, a.Leader
	if s, ok := e.byName[a.Leader]; ok {
		f.Cluster, f.Version = s.Cluster, s.Version
	}
	return f
}

// pulledByNobody: its leader has a backlog, no pull waiting, and has
// delivered nothing and had no ack for longer than after. Unacked messages
// count: an owner that stopped holding them leaves them to nobody.
func pulledByNobody(p *snapshot.PullState, after time.Duration) bool {
	return p.Waiting == 0 && p.Backlog() > 0 && p.Idle() > after
}

// stuckBehindPin: a pinned_client consumer's leader keeps a pin older
// than priority_timeout and has delivered nothing for longer than that,
// with messages pending, pulls waiting and room under max_ack_pending.
// The leader delivers to a waiting pull that carries the pin
// (2.15.3 consumer.go:4571-4574) and passes over pulls without one
// (:4575-4581); a pin lapses priority_timeout after the last pull that
// carried it (setPinnedTimer :4494-4510, renewed only at :4873-4875). So
// the holder still pulls, yet none of the waiting pulls is its own with
// interest: they are standby pulls held back by a pin that takes nothing.
func stuckBehindPin(p *snapshot.PullState) bool {
	return p.Policy == snapshot.PriorityPinnedClient && p.PinnedID != "" && p.Timeout > 0 &&
		p.PinAge() > p.Timeout && p.Undelivered() > p.Timeout &&
		p.Pending > 0 && p.Waiting > 0 && (p.MaxAckPending <= 0 || p.AckPending < p.MaxAckPending)
}

// pulledByTwo: more than one process pulled a pinned_client consumer
// while the auditor listened. Only pinned_client: the other policies are
// made for many pullers.
func pulledByTwo(p *snapshot.PullState) bool {
	return p.Policy == snapshot.PriorityPinnedClient && len(p.Pullers) > 1
}

// PinnedLedBy counts the pinned_client consumers of snap that server leads
// and that have other peers: restarting it moves their leadership, and a
// new leader starts with no pin (setLeader, 2.12.5 consumer.go:1690-1696;
// 2.15.3 :1759-1765), so whoever pulls next takes each of them.
func PinnedLedBy(snap *snapshot.Snapshot, server string) int {
	n := 0
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		if a.Leader == server && a.Replicas > 1 && a.Pull != nil && a.Pull.Policy == snapshot.PriorityPinnedClient {
			n++
		}
	}
	return n
}

// CountPinChanges compares the pins of the pinned_client consumers of
// before and after that both audits read from their leaders: a pin given,
// taken over or dropped is a change. A consumer only one audit saw is none.
// Only the consumers led by a server of after's report count: under
// --scope server, a sidecar counts those its server leads, and the
// sidecars add up to the whole system.
func CountPinChanges(before, after *findings.Report) findings.PinChanges {
	leaders := map[string]bool{}
	for _, s := range after.Servers {
		leaders[s.Name] = true
	}
	type pin struct{ leader, holder string }
	was := map[ConsumerKey]pin{}
	for i := range before.Snapshot.Consumers {
		a := &before.Snapshot.Consumers[i]
		if p := a.Pull; p != nil && p.FromLeader && p.Policy == snapshot.PriorityPinnedClient {
			was[ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}] = pin{a.Leader, p.PinnedID}
		}
	}
	var c findings.PinChanges
	for i := range after.Snapshot.Consumers {
		a := &after.Snapshot.Consumers[i]
		p := a.Pull
		if p == nil || !p.FromLeader || p.Policy != snapshot.PriorityPinnedClient || !leaders[a.Leader] {
			continue
		}
		old, ok := was[ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}]
		switch {
		case !ok || old.holder == p.PinnedID:
		case old.leader != a.Leader:
			c.WithLeader++
		default:
			c.Pin++
		}
	}
	return c
}
