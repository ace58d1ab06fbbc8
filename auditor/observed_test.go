package auditor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// observedSnapshot is three 2.14.0 servers, up a minute, and stream S led
// by n1 with peers n1, n2, n3, created a minute before the audit, with obs
// as what the replies showed.
func observedSnapshot(t *testing.T, obs *snapshot.Observation) *snapshot.Snapshot {
	t.Helper()
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	snap := &snapshot.Snapshot{Started: start, ExpectedCount: 3}
	for _, n := range []string{"n1", "n2", "n3"} {
		s := snapshot.Server{Name: n, ID: "ID" + n, Cluster: "c1", JetStream: true, APILevel: 4, Uptime: time.Minute}
		s.SetVersion("2.14.0")
		snap.Servers = append(snap.Servers, s)
	}
	if obs != nil && obs.Created.IsZero() {
		obs.Created = start.Add(-time.Minute)
	}
	if obs != nil && obs.Listed == 0 {
		obs.Listed = 3
	}
	snap.Streams = []snapshot.Asset{{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n1",
		Peers: []string{"n1", "n2", "n3"}, Replicas: 3, Observed: obs}}
	return snap
}

func TestObservedFindings(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		obs    *snapshot.Observation
		change func(*snapshot.Snapshot)
		code   findings.Code
		want   string // the message's words; empty: no finding of code
	}{
		{"a peer that answered and does not run the asset", &snapshot.Observation{Absent: []string{"n3"}}, nil, findings.AssetPeerMissing,
			"stream APP > S runs on 2 of its 3 peers; one more peer down and it stops: n3 (2.14.0) answered the audit and does not run it, though its leader n1 lists it as a peer; cause unknown: see the server's log"},
		{"two peers: below the quorum", &snapshot.Observation{Absent: []string{"n2", "n3"}}, nil, findings.AssetPeerMissing,
			"runs on 1 of its 3 peers, fewer than its quorum of 2: it stops"},
		{"nothing observed", nil, nil, findings.AssetPeerMissing, ""},
		{"a follower's stale view names a fourth peer: the leader's three count", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) { s.Streams[0].Peers = []string{"n1", "n2", "n3", "n4"} }, findings.AssetPeerMissing,
			"stream APP > S runs on 2 of its 3 peers; one more peer down and it stops: n3"},
		{"an absent peer that did not answer may run it", &snapshot.Observation{Absent: []string{"n2", "n3"}},
			func(s *snapshot.Snapshot) { s.Servers = append(s.Servers[:1], s.Servers[2]) }, findings.AssetPeerMissing,
			"stream APP > S runs on at least 1 of its 3 peers: n3 (2.14.0) answered the audit"},
		{"a peer that did not answer is SERVER_MISSING's", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) { s.Servers = s.Servers[:2] }, findings.AssetPeerMissing, ""},
		{"a peer whose reply was not read", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) {
				s.Problems = []snapshot.Problem{{Server: "n3", Request: "JSZ", Err: "timeout"}}
			}, findings.AssetPeerMissing, ""},
		{"a peer restarting", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) { s.Servers[2].Uptime = auditor.LoadAllowance - time.Second }, findings.AssetPeerMissing, ""},
		{"an asset being created", &snapshot.Observation{Absent: []string{"n3"}, Created: start.Add(-time.Second)}, nil, findings.AssetPeerMissing, ""},
		{"an asset created past the allowance", &snapshot.Observation{Absent: []string{"n3"}, Created: start.Add(-auditor.LoadAllowance)}, nil,
			findings.AssetPeerMissing, "n3 (2.14.0) answered the audit"},
		{"the table speaks for the peer", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) {
				s.Servers[2].SetVersion("2.11.12")
				s.Servers[2].APILevel = 1
				s.Streams[0].Features = releases.DetectFeatures(releases.KindStream, &releases.AssetConfig{
					SubjectTransform: &releases.SubjectMapping{Destination: "t.{{ Random(3) }}"}})
			}, findings.AssetPeerMissing, ""},
		{"a feature the table knows, but not as keeping it from running", &snapshot.Observation{Absent: []string{"n3"}},
			func(s *snapshot.Snapshot) {
				s.Servers[2].SetVersion("2.10.27")
				s.Servers[2].APILevel = 0
				s.Streams[0].Features = releases.DetectFeatures(releases.KindStream, &releases.AssetConfig{AllowMsgTTL: true})
			}, findings.AssetPeerMissing, "cause unknown: see the server's log (the feature table knows it lacks per-message TTLs, new in 2.11.0"},
		{"a peer the leader has not heard from", &snapshot.Observation{Behind: []snapshot.ReplicaLag{{Server: "n3", Active: time.Minute}}}, nil,
			findings.AssetPeerBehind, "stream APP > S: peer n3 (2.14.0) runs it, but its leader n1 has not heard from it for 1m0s and does not count it as current: 2 of its 3 peers are current, a bare quorum"},
		{"two peers behind: one current", &snapshot.Observation{Behind: []snapshot.ReplicaLag{{Server: "n2", Active: time.Second}, {Server: "n3", Active: time.Minute}}}, nil,
			findings.AssetPeerBehind, "1 of its 3 peers are current, fewer than its quorum of 2"},
		{"a silence shorter than a catch-up", &snapshot.Observation{Behind: []snapshot.ReplicaLag{{Server: "n3", Active: auditor.CatchUpAllowance - time.Second}}}, nil,
			findings.AssetPeerBehind, ""},
		{"a peer never heard from since the leader was elected", &snapshot.Observation{Behind: []snapshot.ReplicaLag{{Server: "n3"}}}, nil,
			findings.AssetPeerBehind, ""},
		{"behind and not running is missing, not behind", &snapshot.Observation{Absent: []string{"n3"}, Behind: []snapshot.ReplicaLag{{Server: "n3", Active: time.Minute}}}, nil,
			findings.AssetPeerBehind, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := observedSnapshot(t, tc.obs)
			if tc.change != nil {
				tc.change(snap)
			}
			r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.10.0")})
			found := codeFindings(r, tc.code)
			if tc.want == "" {
				if len(found) > 0 {
					t.Fatalf("%+v", found)
				}
				return
			}
			// One finding per answering peer the observation names.
			n := 0
			for _, name := range tc.obs.Absent {
				for _, s := range snap.Servers {
					if s.Name == name {
						n++
					}
				}
			}
			if n = max(n, 1); len(found) != n {
				t.Fatalf("%s findings %+v; want %d", tc.code, found, n)
			}
			for _, f := range found {
				if !strings.Contains(f.Message, tc.want) || f.Peer != "n1" || f.Severity != findings.SeverityOf(tc.code) {
					t.Errorf("finding %+v; want one saying %q about a peer of leader n1", f, tc.want)
				}
			}
		})
	}
}

// TestObservedUnderAssume: a what-if that restarts the missing peer on
// another release drops what it showed; one that changes another server
// keeps it.
func TestObservedUnderAssume(t *testing.T) {
	for _, tc := range []struct {
		target string
		keeps  bool
	}{{"n3", false}, {"n2", true}} {
		snap := observedSnapshot(t, &snapshot.Observation{Absent: []string{"n3"}})
		w, err := auditor.Assume(auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.10.0")}), auditor.Policy{Floor: mustParse(t, "2.10.0")},
			[]auditor.Assumption{{Target: tc.target, Version: mustParse(t, "2.14.10")}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(codeFindings(w.After, findings.AssetPeerMissing)) == 1; got != tc.keeps {
			t.Errorf("%s on 2.14.10: keeps the finding %t, want %t: %+v", tc.target, got, tc.keeps, w.After.Findings)
		}
		if len(codeFindings(w.Before, findings.AssetPeerMissing)) != 1 {
			t.Errorf("before: %+v", w.Before.Findings)
		}
	}
}

// TestLevelCountsOnlyWhatTheReleaseLacks: a stream calls {{left()}} in its
// own transform (level 4, not recorded in _nats.req.level, since 2.14.7 by
// the config check; 2.10 runs it). The 2.10.27 peer has no finding; the
// 2.11.12 peer's level falls short and it refuses the config; the 2.14.0
// peer's level does not tell, and the table says it refuses the config.
func TestLevelCountsOnlyWhatTheReleaseLacks(t *testing.T) {
	snap := observedSnapshot(t, nil)
	for i, v := range []struct {
		version string
		level   int
	}{{"2.10.27", 0}, {"2.11.12", 1}, {"2.14.0", 4}} {
		snap.Servers[i].SetVersion(v.version)
		snap.Servers[i].APILevel = v.level
	}
	snap.Streams[0].Features = releases.DetectFeatures(releases.KindStream, &releases.AssetConfig{
		SubjectTransform: &releases.SubjectMapping{Destination: "t.{{left(1,2)}}"}})
	if snap.Streams[0].Features == 0 {
		t.Fatal("the transform's left() is not detected")
	}
	r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.10.0")})
	got := map[string]findings.Code{}
	for _, f := range r.Findings {
		if f.Stream == "S" {
			got[f.Server] = f.Code
		}
	}
	want := map[string]findings.Code{"n2": findings.AssetAPILevelUnsupported, "n3": findings.AssetPeerNotRunning}
	if len(got) != len(want) || got["n2"] != want["n2"] || got["n3"] != want["n3"] {
		t.Errorf("findings by server %v; want %v: %+v", got, want, r.Findings)
	}
}
