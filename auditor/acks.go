package auditor

import (
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// ackFormatV2Since is the first release whose consumer leaders subscribe
// the v2 ack subjects, beside the v1 ones, whatever the flag (2.14.0
// consumer.go:1385-1398, :1699-1706): a leader before it misses every v2
// ack.
var ackFormatV2Since = version.Must("2.14.0")

// ackTakeovers finds, in a replicated consumer, the peers before 2.14.0
// that can take over from a peer that hands out v2 acks (js_ack_fc_v2 on):
// the acks of the messages delivered before the leadership moves reach
// nobody, and those messages are delivered again after ack_wait
// (TestAckV2LostToAnOldLeader). Duplicates, not loss: WARNING. A peer
// that did not answer is judged by neither side; an unparseable version is
// VERSION_UNPARSEABLE's.
func (e *evaluation) ackTakeovers(a *snapshot.Asset) {
	if len(e.ackV2) == 0 || a.Kind != releases.KindConsumer || len(a.Peers) < 2 || a.AckNone {
		return
	}
	var givers []string
	for _, p := range a.Peers {
		if e.ackV2[p] {
			givers = append(givers, p+" ("+e.seen[p].Version+")")
		}
	}
	if len(givers) == 0 {
		return
	}
	for _, p := range a.Peers {
		s, ok := e.seen[p]
		if !ok || s.Parsed.IsZero() || !s.Parsed.Before(ackFormatV2Since) {
			continue
		}
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.ConsumerAcksLostOnTakeover, s.Name, s.Cluster, s.Version, a.Leader
		f.Message = "consumer " + a.Label() + ": " + joinSorted(givers) + " " + handVerb(len(givers)) +
			" out acks in the v2 format (" + releases.FlagAckFormatV2 + " on) while leading it, and " + s.Name + " (" + s.Version +
			"), before 2.14.0, subscribes only the v1 format as its leader: when the leadership moves to it, the acks of the messages delivered before reach nobody and those messages are delivered again after ack_wait"
		e.add(f)
	}
}

// handVerb is "hands", or "hand" after more than one name.
func handVerb(names int) string {
	if names == 1 {
		return "hands"
	}
	return "hand"
}
