package auditor

import (
	"fmt"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Peer is one member of a consumer's RAFT group as the audit saw it.
type Peer struct {
	Name string `json:"name"`
	// Answered is false for a peer some server named but which did not
	// answer the audit: its version is not known.
	Answered bool `json:"answered"`
	// Version is as the peer reported it; Parsed is what it parses as
	// (Server.Parsed).
	Version string          `json:"version,omitempty"`
	Parsed  version.Version `json:"-"`
	// APILevel is the highest JetStream API level the peer supports (0 when
	// it reports none, as 2.10 does).
	APILevel int  `json:"api_level"`
	Leader   bool `json:"leader"`
	// Incomplete is set when a request of the audit to this peer failed, so
	// what it hosts may not have been read.
	Incomplete bool `json:"incomplete,omitempty"`
}

// JudgeReset decides what RESET would do to a consumer led by leader (a
// server name, empty when there is none) whose RAFT group is peers, leader
// included. It is unknown whenever anything it needs is missing. incomplete
// says that the audit could not read everything about the consumer.
func JudgeReset(leader string, peers []Peer, incomplete bool) (findings.ResetVerdict, string) {
	if incomplete {
		return findings.ResetUnknown, "the last audit did not read every server's reply about this consumer"
	}
	if leader == "" {
		return findings.ResetUnknown, "the consumer has no leader"
	}
	var lead *Peer
	for i := range peers {
		p := &peers[i]
		if p.Name == leader {
			lead = p
		}
		if !p.Answered {
			return findings.ResetUnknown, fmt.Sprintf("peer %s did not answer the audit", p.Name)
		}
		if p.Incomplete {
			return findings.ResetUnknown, fmt.Sprintf("the audit could not read all of peer %s's replies", p.Name)
		}
		if p.Parsed.IsZero() {
			return findings.ResetUnknown, fmt.Sprintf("peer %s reports version %q, which is not a version", p.Name, p.Version)
		}
	}
	if lead == nil {
		return findings.ResetUnknown, fmt.Sprintf("leader %s is not among the consumer's peers", leader)
	}
	if !answersReset(lead.Parsed) {
		return findings.ResetUnanswered, fmt.Sprintf("leader %s runs %s, below %s: it does not answer RESET", lead.Name, lead.Version, releases.ResetVersion)
	}
	var old []string
	for _, p := range peers {
		if !answersReset(p.Parsed) {
			old = append(old, p.Name+" ("+p.Version+")")
		}
	}
	if len(old) > 0 {
		return findings.ResetCrashesFollower, fmt.Sprintf("leader %s runs %s and answers RESET, but follower %s would crash on the replicated reset",
			lead.Name, lead.Version, strings.Join(old, ", "))
	}
	return findings.ResetSafe, fmt.Sprintf("leader %s and every peer run %s or later", lead.Name, releases.ResetVersion)
}

// answersReset reports whether a server of version v knows RESET: whether
// it applies the replicated reset (the consumer_reset row of
// ReplicatedOps), which the release that first answers RESET brought. A
// pre-release of ResetVersion counts as below it.
func answersReset(v version.Version) bool {
	return releases.OpOutcome(releases.OpResetSeq, v).Apply == releases.Supported
}
