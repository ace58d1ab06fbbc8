package auditor

import (
	"fmt"
	"strconv"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// asset judges one stream or consumer: who leads it, who follows it, and
// whether every peer can run it.
func (e *evaluation) asset(a *snapshot.Asset) {
	leader, hasLeader := e.byName[a.Leader]
	if hasLeader {
		if a.Kind == releases.KindConsumer {
			leader.ConsumersLed++
		} else {
			leader.StreamsLed++
		}
	}
	if !e.selected(a) {
		return
	}
	e.assetLeader(a, leader)
	for _, peer := range a.Peers {
		s, ok := e.byName[peer]
		if !ok {
			continue // a peer that did not answer is a SERVER_MISSING finding
		}
		if a.Kind == releases.KindConsumer && peer != a.Leader {
			e.consumerFollower(a, leader, s)
		}
		required, unrecorded := a.LevelNeeded(s.Parsed)
		e.apiLevel(a, s, required, unrecorded)
	}
	e.peerFindings(a)
	e.ackTakeovers(a)
	e.observed(a)
}

// assetLeader judges an asset's leader (nil when it did not answer or there
// is none): below the floor, or missing where a consumer needs one.
func (e *evaluation) assetLeader(a *snapshot.Asset, leader *findings.ServerReport) {
	// Most assets have no finding: their names are made only for one. A
	// finding can be on a large share of the consumers: its message is one
	// concatenation, not a Sprintf with its boxed arguments.
	switch {
	case leader != nil && leader.Verdict == version.VerdictBelow && a.Kind == releases.KindConsumer:
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version = findings.ConsumerLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		if answersReset(leader.Parsed) {
			f.Message = "consumer " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ", below the floor " + e.p.Floor.String()
		} else {
			f.Message = "consumer " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ": RESET (first in 2.14.0) to it goes unanswered"
		}
		e.add(f)
	case leader != nil && leader.Verdict == version.VerdictBelow:
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version = findings.StreamLeaderBelowFloor, leader.Name, leader.Cluster, leader.Version
		f.Message = "stream " + a.Label() + " is led by " + leader.Name + " running " + leader.Version + ", below the floor " + e.p.Floor.String()
		e.add(f)
	case a.Kind == releases.KindConsumer && a.Leader == "" && a.Replicas > 1:
		f := assetFinding(a)
		f.Code = findings.ConsumerNoLeader
		f.Message = "consumer " + a.Label() + " (R" + strconv.Itoa(a.Replicas) + ") has no leader"
		e.add(f)
	}
}

// consumerFollower judges follower s of a consumer led by leader (nil when
// it did not answer or there is none).
func (e *evaluation) consumerFollower(a *snapshot.Asset, leader, s *findings.ServerReport) {
	// A follower is at risk while its leader would accept a RESET; a leader
	// that does not know RESET never replicates one. A leaderless consumer
	// may get a new leader that does.
	if s.Verdict != version.VerdictBelow || (leader != nil && !answersReset(leader.Parsed)) {
		return
	}
	f := assetFinding(a)
	f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.ConsumerReplicaBelowFloor, s.Name, s.Cluster, s.Version, a.Leader
	if answersReset(s.Parsed) {
		f.Message = "consumer " + a.Label() + " has follower " + s.Name + " running " + s.Version + ", below the floor " + e.p.Floor.String()
	} else {
		f.Message = "consumer " + a.Label() + " has follower " + s.Name + " running " + s.Version + ": a RESET answered by a leader at 2.14.0 or later crashes it"
	}
	e.add(f)
}

// apiLevel judges whether peer s supports the asset's required API level
// (required, and unrecorded, from Asset.LevelNeeded).
func (e *evaluation) apiLevel(a *snapshot.Asset, s *findings.ServerReport, required int, unrecorded string) {
	if !levelSpeaks(required, s.APILevel) {
		return
	}
	name := a.Label()
	if unrecorded != "" {
		name += " (" + unrecorded + ", which its _nats.req.level does not record)"
	}
	level := s.APILevel
	f := assetFinding(a)
	f.Code, f.Server, f.Cluster, f.Version = findings.AssetAPILevelUnsupported, s.Name, s.Cluster, s.Version
	f.RequiredLevel, f.ServerLevel = required, &level
	f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: it holds the %s offline",
		a.Kind, name, required, s.Name, level, a.Kind)
	o, ft := worstFeature(a.Features, s.Parsed)
	switch {
	case o == releases.NotCreated && required != snapshot.LevelUnreadable:
		// Nothing in the config tells the peer its level falls short: it
		// tries to create the asset and fails.
		f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s refuses the config as it creates the %s, logs the error, runs on and never runs the %s",
			a.Kind, name, required, s.Name, level, s.Version, a.Kind, a.Kind)
	case required == snapshot.LevelUnreadable:
		f.Message = fmt.Sprintf("%s %s has a _nats.req.level that is not a number: peer %s, like every server from 2.11 on, holds the %s offline",
			a.Kind, name, s.Name, a.Kind)
	case level == 0:
		f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s runs %s, from before API levels: it runs the %s online, ignoring what it does not know, and its copy diverges",
			a.Kind, name, required, s.Name, s.Version, a.Kind)
	default:
		// The level says the peer falls short; the feature table says
		// what its version does about it, where the two differ: 2.11
		// before 2.11.9 has no unsupported state, and a value a decoder
		// rejects is never loaded.
		switch o {
		case releases.IgnoredOnline:
			f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s decodes it leniently and runs the %s online without %s, ignoring what it does not know, and its copy diverges",
				a.Kind, name, required, s.Name, level, s.Version, a.Kind, ft.Title)
		case releases.NotLoaded:
			f.Message = fmt.Sprintf("%s %s needs JetStream API level %d but peer %s supports %d: %s cannot decode its %s, logs the failure, runs on and never loads the %s",
				a.Kind, name, required, s.Name, level, s.Version, ft.Title, a.Kind)
		}
	}
	if heldOffline(o, required, level) {
		f.Message += stopsItsStream(a, s.Server)
	}
	e.add(f)
}
