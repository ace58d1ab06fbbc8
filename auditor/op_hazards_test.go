package auditor

import (
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// withConfig is a with the features and ops its config c gives it.
func withConfig(a snapshot.Asset, c releases.AssetConfig) snapshot.Asset {
	a.Features, a.Ops = releases.DetectFeatures(a.Kind, &c), releases.DetectOps(a.Kind, &c)
	return a
}

func TestOpAndPeerFindings(t *testing.T) {
	mirror := releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}}
	atomic := releases.AssetConfig{AllowAtomicPublish: true}
	prioritized := releases.AssetConfig{AckPolicy: "explicit", PriorityGroups: []string{"g"}, PriorityPolicy: "prioritized"}
	flagged := srv("n1", "c1", "2.14.0", 4)
	flagged.FeatureFlags = map[string]bool{releases.FlagRaftDeleteRange: true}
	sources := releases.AssetConfig{Sources: []*releases.StreamSource{{Name: "O"}}}
	snapshotting := srv("n1", "c1", "2.15.3", 4)
	snapshotting.FeatureFlags = map[string]bool{releases.FlagSnapshotSources: true}
	tests := []struct {
		name    string
		servers []snapshot.Server
		// lastSeen are servers only an earlier audit of serve saw.
		lastSeen []snapshot.Server
		asset    snapshot.Asset
		want     []string
		says     []string
	}{
		{
			name:    "a 2.15 mirror leader's delete range crashes a 2.12 follower",
			servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("M", "n2", "n1", "n2", "n3"), mirror),
			want:    []string{"ASSET_OP_CRASHES_FOLLOWER(n3,n2,APP/M/)"},
			says: []string{"stream APP > M: follower n3 (2.12.15) panics on deleteRangeOp (Unknown group entry op type: 15), which n2 (2.15.3) proposes as the mirror's leader whenever its origin has a gap",
				"(js_raft_delete_range: true by default in 2.15.3), and again on every restart"},
		},
		{
			name:     "the crashed follower is missing: what serve last saw of it keeps the finding",
			servers:  []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4)},
			lastSeen: []snapshot.Server{srv("n3", "c1", "2.12.15", 3)},
			asset:    withConfig(stream("M", "n2", "n1", "n2", "n3"), mirror),
			want:     []string{"ASSET_OP_CRASHES_FOLLOWER(n3,n2,APP/M/)"},
			says: []string{"stream APP > M: follower n3, not answering and last seen running 2.12.15, panics on deleteRangeOp",
				"and again on every restart on that release as it replays the entry: if that is why it is down, it stays down until it is upgraded"},
		},
		{
			name:     "a missing server proposes nothing",
			servers:  []snapshot.Server{srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3)},
			lastSeen: []snapshot.Server{srv("n1", "c1", "2.15.3", 4)},
			asset:    withConfig(stream("M", "n2", "n1", "n2", "n3"), mirror),
		},
		{
			name:    "led by the 2.12 server, the crash waits for a 2.15 leader",
			servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("M", "n3", "n1", "n2", "n3"), mirror),
			want:    []string{"ASSET_OP_CRASHES_FOLLOWER(n3,,APP/M/)"},
			says:    []string{"stream APP > M: if n1 or n2 becomes its leader, n3 (2.12.15) as its follower panics on deleteRangeOp"},
		},
		{
			name:    "2.14 leaders propose no delete range by default",
			servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("M", "n2", "n1", "n2", "n3"), mirror),
		},
		{
			name:    "a 2.14 peer with the flag set would, if it led",
			servers: []snapshot.Server{flagged, srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("M", "n2", "n1", "n2", "n3"), mirror),
			want:    []string{"ASSET_OP_CRASHES_FOLLOWER(n3,n2,APP/M/)"},
			says:    []string{"if n1 becomes its leader, n3 (2.12.15) as its follower panics", "(js_raft_delete_range: true as the server reports it)"},
		},
		{
			name:    "a 2.15 leader with js_snapshot_sources halts a 2.14 follower of a stream with sources",
			servers: []snapshot.Server{snapshotting, srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.14.10", 4)},
			asset:   withConfig(stream("S", "n1", "n1", "n2", "n3"), sources),
			want:    []string{"ASSET_OP_HALTS_REPLICA(n3,n1,APP/S/)"},
			says: []string{"stream APP > S: follower n3 (2.14.10) cannot apply the stream snapshot with sourcing state (stream state encoding 2, streamStateVersionSources), " +
				"which n1 (2.15.3) sends as the stream's leader whenever it catches up a follower from its snapshot: one that was down or fell behind while the leader compacted its log, or a new peer " +
				"(js_snapshot_sources: true as the server reports it): it logs a critical write error and its replica stops voting"},
		},
		{
			name:    "a 2.12 follower resets its replica in a loop, if the flagged peer leads",
			servers: []snapshot.Server{snapshotting, srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("S", "n2", "n1", "n2", "n3"), sources),
			want:    []string{"ASSET_OP_HALTS_REPLICA(n3,n2,APP/S/)"},
			says: []string{"stream APP > S: if n1 becomes its leader, n3 (2.12.15) as its follower cannot apply the stream snapshot with sourcing state",
				"it logs the error and runs on without it, and at the next message resets its replica and is caught up from the same snapshot again, in a loop"},
		},
		{
			name:    "js_snapshot_sources is off by default in 2.15",
			servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.14.10", 4)},
			asset:   withConfig(stream("S", "n1", "n1", "n2", "n3"), sources),
		},
		{
			name:    "a mirror tracks no sourcing state",
			servers: []snapshot.Server{snapshotting, srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.14.10", 4)},
			asset:   withConfig(stream("M", "n1", "n1", "n2", "n3"), mirror),
		},
		{
			name:    "the flag on a follower alone sends nothing to itself",
			servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4), snapshotting},
			asset:   withConfig(stream("S", "n1", "n1", "n2", "n3"), sources),
		},
		{
			name:    "a single replica has no followers",
			servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(stream("M", "n1", "n1"), mirror),
		},
		{
			name:    "an atomic batch crashes a 2.10 follower, which also diverges (by its API level)",
			servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.10.27", 0)},
			asset:   withConfig(stream("S", "n1", "n1", "n2", "n3"), atomic),
			want:    []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/S/)", "ASSET_OP_CRASHES_FOLLOWER(n3,n1,APP/S/)"},
			says:    []string{"follower n3 (2.10.27) panics on batchMsgOp (Unknown group entry op type: 16), which n1 (2.14.0) proposes as the stream's leader when a client publishes an atomic batch"},
		},
		{
			name:    "a 2.11.12 peer holds an atomic stream offline: its API level says so, and it applies nothing",
			servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.11.12", 1)},
			asset:   withConfig(stream("S", "n1", "n1", "n2", "n3"), atomic),
			want:    []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/S/)"},
		},
		{
			name:    "a 2.11 peer never loads a prioritized consumer, whose level it meets",
			servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.11.12", 1)},
			asset:   withConfig(consumer("S", "C", "n1", "n1", "n2", "n3"), prioritized),
			want:    []string{"ASSET_PEER_NOT_RUNNING(n3,,APP/S/C)"},
			says:    []string{"consumer APP > S > C runs on 2 of its 3 peers; one more peer down and it stops: n3 (2.11.12) does not load it (prioritized priority policy, new in 2.12.0)"},
		},
		{
			name:    "a plain consumer's RESET stays with its own findings",
			servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3)},
			asset:   withConfig(consumer("S", "C", "n1", "n1", "n2", "n3"), releases.AssetConfig{AckPolicy: "explicit"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot.Snapshot{Servers: tt.servers}
			for _, s := range tt.lastSeen {
				if snap.LastSeen == nil {
					snap.LastSeen = map[string]snapshot.Server{}
				}
				snap.LastSeen[s.Name] = s
			}
			if tt.asset.Kind == releases.KindStream {
				snap.Streams = []snapshot.Asset{tt.asset}
			} else {
				snap.Consumers = []snapshot.Asset{tt.asset}
			}
			r, _ := hazardFindings(t, snap)
			var got []string
			var msgs []string
			for _, f := range r.Findings {
				switch f.Code {
				case findings.AssetOpCrashesFollower, findings.AssetOpHaltsReplica, findings.AssetPeerNotRunning, findings.AssetPeerDiverges, findings.AssetAPILevelUnsupported:
					got = append(got, brief(f))
					if f.Code != findings.AssetAPILevelUnsupported {
						msgs = append(msgs, f.Message)
						if f.Severity != findings.Critical {
							t.Errorf("%s: %s", f.Code, f.Severity)
						}
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
			}
			all := strings.Join(msgs, "\n")
			for _, s := range tt.says {
				if !strings.Contains(all, s) {
					t.Errorf("no finding says %q:\n%s", s, all)
				}
			}
		})
	}
}

// TestOpHaltsAFollowerOfALaterRelease: an op a release after 2.15 brings
// halts a 2.15 follower's replica and crashes an older one.
func TestOpHaltsAFollowerOfALaterRelease(t *testing.T) {
	saved := releases.ReplicatedOps
	t.Cleanup(func() { releases.ReplicatedOps = saved })
	later := version.Must("2.16.0")
	releases.ReplicatedOps = append(slices.Clone(saved), releases.ReplicatedOp{Name: "later", Op: 19, GoName: "laterOp", Kind: releases.KindStream, Since: later,
		Older:    releases.OlderFollowers(later, ""),
		Proposed: []releases.Proposal{{Since: later, How: releases.ProposedByItself, When: "as the stream's leader"}}})
	a := stream("S", "n1", "n1", "n2", "n3")
	a.Ops = releases.DetectOps(releases.KindStream, &releases.AssetConfig{})
	snap := snapshot.Snapshot{Servers: []snapshot.Server{srv("n1", "c1", "2.16.0", 5), srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.14.0", 4)}, Streams: []snapshot.Asset{a}}
	r := Evaluate(&snap, Policy{})
	var got []string
	for _, f := range r.Findings {
		if f.Op != "" {
			got = append(got, brief(f))
			t.Log(f.Message)
		}
	}
	want := []string{"ASSET_OP_CRASHES_FOLLOWER(n3,n1,APP/S/)", "ASSET_OP_HALTS_REPLICA(n2,n1,APP/S/)"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

// TestOpFindingOfAnUnreadableLeader: a peer whose version is not one may
// propose anything, and the finding says so.
func TestOpFindingOfAnUnreadableLeader(t *testing.T) {
	a := withConfig(stream("M", "n1", "n1", "n2", "n3"), releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}})
	snap := snapshot.Snapshot{Servers: []snapshot.Server{srv("n1", "c1", "custom-build", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3)}, Streams: []snapshot.Asset{a}}
	r := Evaluate(&snap, Policy{})
	for _, f := range r.Findings {
		if f.Code == findings.AssetOpCrashesFollower {
			if want := `which n1, whose version "custom-build" is not a version, may propose as its leader`; f.Server != "n3" || !strings.Contains(f.Message, want) {
				t.Errorf("%s: %s; want n3 and %q", f.Server, f.Message, want)
			}
			return
		}
	}
	t.Errorf("no %s in %v", findings.AssetOpCrashesFollower, r.Findings)
}

// TestLevelFindingSaysWhatTheTableSays: where an API level falls short, the
// finding says what the peer's version does: 2.11.0-2.11.8 run a level-2
// stream online, 2.11.12 holds it offline and never loads a flow-control
// consumer.
func TestLevelFindingSaysWhatTheTableSays(t *testing.T) {
	for _, tt := range []struct {
		version string
		asset   snapshot.Asset
		says    string
	}{
		{"2.11.8", withConfig(stream("S", "n1", "n1", "n3"), releases.AssetConfig{AllowMsgCounter: true}),
			"peer n3 supports 1: 2.11.8 decodes it leniently and runs the stream online without counters, ignoring what it does not know, and its copy diverges"},
		{"2.11.12", withConfig(stream("S", "n1", "n1", "n3"), releases.AssetConfig{AllowMsgCounter: true}),
			"peer n3 supports 1: it holds the stream offline"},
		{"2.11.12", withConfig(consumer("S", "C", "n1", "n1", "n3"), releases.AssetConfig{AckPolicy: "flow_control"}),
			"peer n3 supports 1: 2.11.12 cannot decode its flow-control acks (ack_policy: flow_control), logs the failure, runs on and never loads the consumer"},
	} {
		snap := snapshot.Snapshot{Servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n3", "c1", tt.version, 1)}}
		if tt.asset.Kind == releases.KindStream {
			snap.Streams = []snapshot.Asset{tt.asset}
		} else {
			snap.Consumers = []snapshot.Asset{tt.asset}
		}
		r := Evaluate(&snap, Policy{})
		var msgs []string
		for _, f := range r.Findings {
			if f.Code == findings.AssetAPILevelUnsupported {
				msgs = append(msgs, f.Message)
			}
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], tt.says) {
			t.Errorf("%s: %q, want one saying %q", tt.version, msgs, tt.says)
		}
	}
}

// TestSnapshotSourcesWhatIf: a what-if that takes a peer of a stream with
// sources back to 2.14.10, beside a 2.15.3 server whose config sets
// js_snapshot_sources (it reports the flag on, off by default), finds the
// halted replica. Taking the flagged server itself to 2.14.10 drops the
// flag (2.14 has none such), so no peer would send the snapshot: the row
// gives no finding. (What the snapshots it wrote on 2.15 do to its own
// recovery on 2.14 is a downgrade question this row does not judge.)
func TestSnapshotSourcesWhatIf(t *testing.T) {
	flagged := srv("n1", "c1", "2.15.3", 4)
	flagged.FeatureFlags = map[string]bool{releases.FlagSnapshotSources: true, releases.FlagRaftDeleteRange: true}
	snap := snapshot.Snapshot{Servers: []snapshot.Server{flagged, srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.15.3", 4)}, ExpectedCount: 3,
		Streams: []snapshot.Asset{withConfig(stream("S", "n2", "n1", "n2", "n3"), releases.AssetConfig{Sources: []*releases.StreamSource{{Name: "O"}}})}}
	for _, tt := range []struct {
		assume string
		want   []string
	}{
		{"n3=2.14.10", []string{"ASSET_OP_HALTS_REPLICA(n3,n2,APP/S/)"}},
		{"n1=2.14.10", nil},
	} {
		w := assume(t, &snap, Policy{}, tt.assume)
		var got []string
		for _, f := range w.Appear {
			if f.Op != "" {
				got = append(got, brief(f))
				t.Logf("%s: %s", tt.assume, f.Message)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: op findings %v, want %v", tt.assume, got, tt.want)
		}
	}
}

// TestOpFindingOwners: under --scope server each op finding has one owner
// that answered: the leader while it answers, else the follower, else the
// first-named server that answered, so a crashed follower of a group with
// no leader does not take its finding down with its sidecar.
func TestOpFindingOwners(t *testing.T) {
	mirror := releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}}
	servers := []snapshot.Server{srv("n1", "c1", "2.15.3", 4), srv("n2", "c1", "2.15.3", 4)}
	for _, tt := range []struct {
		name, leader string
		want         string
	}{
		{"led by an answering peer", "n2", "n2"},
		{"no leader, the follower missing", "", "n1"},
		{"led by a server that does not answer", "n9", "n1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapshot.Snapshot{Servers: servers, LastSeen: map[string]snapshot.Server{"n3": srv("n3", "c1", "2.12.15", 3)},
				Streams: []snapshot.Asset{withConfig(stream("M", tt.leader, "n1", "n2", "n3"), mirror)}}
			r := Evaluate(&snap, Policy{})
			var owners []string
			for _, f := range r.Findings {
				if f.Code == findings.AssetOpCrashesFollower {
					owners = append(owners, r.Owner(f))
				}
			}
			if !slices.Equal(owners, []string{tt.want}) {
				t.Errorf("ASSET_OP_CRASHES_FOLLOWER owned by %v, want [%s]", owners, tt.want)
			}
		})
	}
}
