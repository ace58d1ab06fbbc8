package auditor

import (
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestJudgeReset(t *testing.T) {
	p := func(name, version string) Peer {
		return Peer{Name: name, Answered: true, Version: version, Parsed: parsed(version)}
	}
	tests := []struct {
		name       string
		leader     string
		peers      []Peer
		incomplete bool
		want       findings.ResetVerdict
		reason     string
	}{
		{"R1 on 2.14.0", "n1", []Peer{p("n1", "2.14.0")}, false, findings.ResetSafe, "leader n1 and every peer"},
		{"R3 all at or above", "n2", []Peer{p("n1", "2.15.3"), p("n2", "2.14.0"), p("n3", "2.14.0-fips")}, false, findings.ResetSafe, ""},
		{"R1 on 2.12", "n3", []Peer{p("n3", "2.12.15")}, false, findings.ResetUnanswered, "leader n3 runs 2.12.15"},
		{"leader 2.12 among newer followers", "n3", []Peer{p("n1", "2.15.3"), p("n2", "2.14.0"), p("n3", "2.12.15")}, false, findings.ResetUnanswered, ""},
		{"leader a 2.14 pre-release", "n1", []Peer{p("n1", "2.14.0-RC.2"), p("n2", "2.14.0")}, false, findings.ResetUnanswered, ""},
		{"2.12 follower", "n1", []Peer{p("n1", "2.15.3"), p("n2", "2.14.0"), p("n3", "2.12.15")}, false, findings.ResetCrashesFollower, "follower n3 (2.12.15)"},
		{"2.10 follower", "n1", []Peer{p("n1", "2.14.0"), p("n2", "2.10.27")}, false, findings.ResetCrashesFollower, "n2 (2.10.27)"},
		{"no leader", "", []Peer{p("n1", "2.14.0"), p("n2", "2.14.0")}, false, findings.ResetUnknown, "no leader"},
		{"a follower did not answer", "n1", []Peer{p("n1", "2.14.0"), {Name: "n2"}}, false, findings.ResetUnknown, "peer n2 did not answer"},
		{"the leader did not answer", "n2", []Peer{p("n1", "2.14.0"), {Name: "n2", Leader: true}}, false, findings.ResetUnknown, "peer n2 did not answer"},
		{"a follower's JSZ failed", "n1", []Peer{p("n1", "2.14.0"), {Name: "n2", Answered: true, Version: "2.14.0", Parsed: version.DefaultFloor, Incomplete: true}}, false, findings.ResetUnknown, "n2"},
		{"the audit failed as a whole", "n1", []Peer{p("n1", "2.14.0")}, true, findings.ResetUnknown, "did not read"},
		{"unparseable version", "n1", []Peer{p("n1", "2.14.0"), p("n2", "banana")}, false, findings.ResetUnknown, `"banana"`},
		// Missing peers outrank a leader known to be old: unknown is the
		// answer whenever an input is missing.
		{"old leader, follower missing", "n3", []Peer{p("n3", "2.12.15"), {Name: "n2"}}, false, findings.ResetUnknown, "n2"},
		{"leader not among the peers", "n9", []Peer{p("n1", "2.14.0")}, false, findings.ResetUnknown, "not among"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := JudgeReset(tt.leader, tt.peers, tt.incomplete)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("JudgeReset = %s (%s), want %s (%q)", got, reason, tt.want, tt.reason)
			}
		})
	}
}
