package auditor

import (
	"slices"
	"strings"
	"testing"
)

func TestOpOutcome(t *testing.T) {
	tests := []struct {
		op      EntryOp
		version string
		want    Outcome
	}{
		{OpDeleteRange, "2.10.27", CrashesOnApply},
		{OpDeleteRange, "2.12.15", CrashesOnApply},
		{OpDeleteRange, "2.14.0-RC.1", CrashesOnApply}, // a pre-release sorts below its release
		{OpDeleteRange, "2.14.0", Supported},
		{OpDeleteRange, "2.15.3", Supported},
		{OpDeleteRange, "2.16.0", Supported}, // ops are never taken back
		{OpBatchMsg, "2.10.27", CrashesOnApply},
		{OpBatchMsg, "2.11.12", CrashesOnApply},
		{OpBatchMsg, "2.12.0", Supported},
		{OpBatchCommitMsg, "2.11.8", CrashesOnApply},
		{OpBatchCommitMsg, "2.12.15", Supported},
		{OpResetSeq, "2.12.15", CrashesOnApply},
		{OpResetSeq, "2.14.0", Supported},
		{OpResetSeq, "2.14.3-fips", Supported},
		{OpResetSeq, "banana", CrashesOnApply}, // unreadable: the worst
		{4, "2.10.27", Supported},              // streamMsgOp: every release
	}
	for _, tt := range tests {
		h := OpOutcome(tt.op, parsed(tt.version))
		if h.Apply != tt.want {
			t.Errorf("OpOutcome(%s, %s) = %s (%s), want %s", tt.op, tt.version, h.Apply, h.Evidence, tt.want)
		}
		if h.Evidence == "" {
			t.Errorf("OpOutcome(%s, %s) cites nothing", tt.op, tt.version)
		}
	}
	if got := UnknownOpOutcome(parsed("2.14.10")).Apply; got != CrashesOnApply {
		t.Errorf("an unknown op on 2.14.10: %s, want %s", got, CrashesOnApply)
	}
	if got := UnknownOpOutcome(parsed("2.15.0")).Apply; got != HaltsReplica {
		t.Errorf("an unknown op on 2.15.0: %s, want %s", got, HaltsReplica)
	}
}

// TestOpTableShape holds every row to what the judging functions assume:
// a name, a cite, older ranges that cover every version below Since, and
// a way to be proposed.
func TestOpTableShape(t *testing.T) {
	seen := map[EntryOp]bool{}
	for _, o := range ReplicatedOps {
		if o.Name == "" || o.Title == "" || o.GoName == "" || o.Source == "" || len(o.Proposed) == 0 {
			t.Errorf("row %d (%s) lacks a field", o.Op, o.Name)
		}
		if seen[o.Op] {
			t.Errorf("op %d has two rows", o.Op)
		}
		seen[o.Op] = true
		if len(o.Older) == 0 || !o.Older[0].From.IsZero() || o.Older[len(o.Older)-1].Below != o.Since {
			t.Errorf("%s: the older ranges do not cover every version below %s", o.Name, o.Since)
		}
		for i := 1; i < len(o.Older); i++ {
			if o.Older[i].From != o.Older[i-1].Below {
				t.Errorf("%s: ranges %d and %d leave a gap", o.Name, i-1, i)
			}
		}
		for _, h := range o.Older {
			if h.Evidence == "" {
				t.Errorf("%s: range below %s cites nothing", o.Name, h.Below)
			}
		}
		for _, p := range o.Proposed {
			if p.Evidence == "" || p.When == "" || (p.How != ProposedOnRequest && p.How != ProposedByItself) {
				t.Errorf("%s: a proposal without a cite, a when or a how", o.Name)
			}
			if p.Flag != "" {
				if _, ok := FlagByName(p.Flag); !ok {
					t.Errorf("%s: flag %s is not in FeatureFlags", o.Name, p.Flag)
				}
			}
		}
	}
}

// TestResetReadsItsOpRow: RESET's verdicts come from the consumer_reset row.
func TestResetReadsItsOpRow(t *testing.T) {
	row, ok := OpByValue(OpResetSeq)
	if !ok {
		t.Fatal("no row for resetSeqOp")
	}
	if row.Since != ResetVersion || row.Kind != KindConsumer {
		t.Errorf("consumer_reset row: since %s, kind %s; ResetVersion is %s", row.Since, row.Kind, ResetVersion)
	}
	for _, p := range row.Proposed {
		if p.Since != ResetVersion {
			t.Errorf("consumer_reset is proposed from %s, RESET is answered from %s", p.Since, ResetVersion)
		}
	}
	for _, v := range []string{"2.10.27", "2.12.15", "2.14.0-RC.1", "2.14.0", "2.15.3", "x"} {
		if got, want := answersReset(parsed(v)), parsed(v).AtLeast(ResetVersion); got != want {
			t.Errorf("answersReset(%s) = %t (the consumer_reset row), want %t (RESET is answered from %s)", v, got, want, ResetVersion)
		}
	}
}

func TestOpProposes(t *testing.T) {
	deleteRange, _ := OpByValue(OpDeleteRange)
	batch, _ := OpByValue(OpBatchMsg)
	reset, _ := OpByValue(OpResetSeq)
	mirror := DetectOps(KindStream, &AssetConfig{Mirror: &StreamSource{Name: "O"}})
	plain := DetectOps(KindStream, &AssetConfig{})
	consumer := DetectOps(KindConsumer, &AssetConfig{})
	atomic := DetectOps(KindStream, &AssetConfig{AllowAtomicPublish: true})
	leader := func(version string, flags map[string]bool) Server {
		return Server{Name: "n1", Version: version, Parsed: parsed(version), FeatureFlags: flags}
	}
	tests := []struct {
		name     string
		op       ReplicatedOp
		leader   Server
		ops      OpSet
		replicas int
		sourced  bool
		want     Proposing
		why      string // a part of the reason
	}{
		{"2.15 mirror leader, defaults", deleteRange, leader("2.15.3", nil), mirror, 3, false, ProposedByItself, "true by default in 2.15.3"},
		{"2.15 mirror leader, reported on", deleteRange, leader("2.15.3", map[string]bool{FlagRaftDeleteRange: true}), mirror, 3, false, ProposedByItself, "as the server reports it"},
		{"2.15 mirror leader, opted out", deleteRange, leader("2.15.3", map[string]bool{FlagRaftDeleteRange: false}), mirror, 3, false, NotProposed, ""},
		{"2.14 mirror leader, defaults", deleteRange, leader("2.14.0", map[string]bool{FlagRaftDeleteRange: false}), mirror, 3, false, NotProposed, ""},
		{"2.14 mirror leader, opted in", deleteRange, leader("2.14.0", map[string]bool{FlagRaftDeleteRange: true}), mirror, 3, false, ProposedByItself, ""},
		{"2.12 mirror leader", deleteRange, leader("2.12.15", map[string]bool{FlagRaftDeleteRange: true}), mirror, 3, false, NotProposed, ""},
		{"R1 mirror", deleteRange, leader("2.15.3", nil), mirror, 1, false, NotProposed, "single replica"},
		{"not a mirror", deleteRange, leader("2.15.3", nil), plain, 3, false, NotProposed, "admits no"},
		{"a stream's ops for a consumer", reset, leader("2.15.3", nil), mirror, 3, false, NotProposed, "admits no"},
		{"unreadable version", deleteRange, leader("x", nil), mirror, 3, false, ProposedByItself, "not a version"},
		{"atomic stream", batch, leader("2.12.15", nil), atomic, 3, false, ProposedOnRequest, "Nats-Batch-Id"},
		{"atomic stream, 2.11 leader", batch, leader("2.11.12", nil), atomic, 3, false, NotProposed, ""},
		{"plain stream", batch, leader("2.15.3", nil), plain, 3, false, NotProposed, ""},
		{"consumer", reset, leader("2.14.0", nil), consumer, 3, false, ProposedOnRequest, "CONSUMER.RESET"},
		{"sourced consumer", reset, leader("2.14.0", nil), consumer, 3, true, ProposedByItself, "durable sourcing"},
		{"consumer, 2.12 leader", reset, leader("2.12.15", nil), consumer, 3, true, NotProposed, ""},
	}
	for _, tt := range tests {
		got, why := Proposes(tt.op, tt.leader, tt.ops, tt.replicas, tt.sourced)
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, got, why, tt.want, tt.why)
		}
	}
	peers := []Server{leader("2.12.15", nil), {Name: "n2", Version: "2.15.3", Parsed: parsed("2.15.3")}, {Name: "n3", Version: "2.14.0", Parsed: parsed("2.14.0"), FeatureFlags: map[string]bool{FlagRaftDeleteRange: false}}}
	if names, how := Proposers(deleteRange, peers, mirror, 3, false); len(names) != 1 || names[0] != "n2" || how != ProposedByItself {
		t.Errorf("Proposers = %v %s, want [n2] by itself", names, how)
	}
}

// TestOpFollowerOutcome: a follower that does not run an asset's replica
// (axis a) never applies its ops (axis b).
func TestOpFollowerOutcome(t *testing.T) {
	batch, _ := OpByValue(OpBatchMsg)
	deleteRange, _ := OpByValue(OpDeleteRange)
	atomic := DetectFeatures(KindStream, &AssetConfig{AllowAtomicPublish: true})
	tests := []struct {
		op       ReplicatedOp
		version  string
		features FeatureSet
		want     Outcome
	}{
		{batch, "2.10.27", atomic, CrashesOnApply}, // runs it online without the field
		{batch, "2.11.8", atomic, CrashesOnApply},
		{batch, "2.11.12", atomic, HeldOffline}, // holds it offline: never receives op 16
		{batch, "2.14.0", atomic, Supported},
		{deleteRange, "2.12.15", 0, CrashesOnApply},
		{deleteRange, "2.14.0", 0, Supported},
	}
	for _, tt := range tests {
		if got, why := tt.op.FollowerOutcome(parsed(tt.version), tt.features); got != tt.want {
			t.Errorf("%s on %s: %s (%s), want %s", tt.op.Name, tt.version, got, why, tt.want)
		}
	}
}

func TestDetectOps(t *testing.T) {
	tests := []struct {
		kind AssetKind
		cfg  *AssetConfig
		want []string
	}{
		{KindStream, &AssetConfig{}, nil},
		{KindStream, &AssetConfig{Mirror: &StreamSource{Name: "O"}}, []string{"delete_range"}},
		// Sources never call skipMsgs; their snapshot carries their state.
		{KindStream, &AssetConfig{Sources: []*StreamSource{{Name: "O"}}}, []string{"snapshot_sources"}},
		{KindStream, &AssetConfig{AllowAtomicPublish: true}, []string{"atomic_batch_msg", "atomic_batch_commit"}},
		{KindConsumer, &AssetConfig{}, []string{"consumer_reset"}},
		{KindConsumer, nil, nil},
	}
	for _, tt := range tests {
		got := DetectOps(tt.kind, tt.cfg)
		for _, o := range ReplicatedOps {
			if want := slices.Contains(tt.want, o.Name); got.Holds(o) != want {
				t.Errorf("DetectOps(%s, %+v) holds %s: %t, want %t", tt.kind, tt.cfg, o.Name, got.Holds(o), want)
			}
		}
	}
}

// TestOlderFollowersOfALaterOp: an op a release after 2.15.0 brings halts
// the replicas of 2.15 followers and crashes older ones.
func TestOlderFollowersOfALaterOp(t *testing.T) {
	row := ReplicatedOp{Name: "later", Op: 200, Since: parsed("2.16.0"), Older: olderFollowers(parsed("2.16.0"), "")}
	for v, want := range map[string]Outcome{"2.14.10": CrashesOnApply, "2.15.0": HaltsReplica, "2.15.9": HaltsReplica, "2.16.0": Supported} {
		if got := row.HandlingBy(parsed(v)).Apply; got != want {
			t.Errorf("%s: %s, want %s", v, got, want)
		}
	}
	if got := olderFollowers(v214, ""); len(got) != 1 || got[0].Below != v214 || got[0].Apply != CrashesOnApply {
		t.Errorf("olderFollowers(2.14.0) = %+v", got)
	}
}

// TestSnapshotSourcesRow: what each follower does with the stream snapshot
// that carries sourcing state, and which leaders send it.
func TestSnapshotSourcesRow(t *testing.T) {
	row := snapshotSources
	for v, want := range map[string]Outcome{
		"2.10.27": ResetsReplica, "2.12.15": ResetsReplica, "2.14.0-RC.1": ResetsReplica,
		"2.14.0": HaltsReplica, "2.14.10": HaltsReplica, "2.15.0-RC.1": HaltsReplica,
		"2.15.0": Supported, "2.15.3": Supported, "banana": ResetsReplica,
	} {
		if h := row.HandlingBy(parsed(v)); h.Apply != want || h.Evidence == "" {
			t.Errorf("%s: %s (%s), want %s", v, h.Apply, h.Evidence, want)
		}
	}
	sources := DetectOps(KindStream, &AssetConfig{Sources: []*StreamSource{{Name: "O"}}})
	mirror := DetectOps(KindStream, &AssetConfig{Mirror: &StreamSource{Name: "O"}})
	if !sources.Holds(row) || mirror.Holds(row) {
		t.Errorf("sources hold the row: %t, a mirror: %t; want true, false", sources.Holds(row), mirror.Holds(row))
	}
	if _, ok := OpByValue(0); ok {
		t.Error("OpByValue(0) found the snapshot row")
	}
	on := srv("n1", "c1", "2.15.3", 4)
	on.FeatureFlags = map[string]bool{FlagSnapshotSources: true}
	for _, tt := range []struct {
		leader Server
		ops    OpSet
		want   Proposing
		says   string
	}{
		{on, sources, ProposedByItself, "n1 (2.15.3) sends streamStateVersionSources as the stream's leader whenever it catches up a follower from its snapshot"},
		{srv("n1", "c1", "2.15.3", 4), sources, NotProposed, "n1 (2.15.3) does not send streamStateVersionSources for it"},
		{on, mirror, NotProposed, "its config admits no streamStateVersionSources"},
		{srv("n1", "c1", "2.14.10", 4), sources, NotProposed, "does not send"},
	} {
		got, why := Proposes(row, tt.leader, tt.ops, 3, false)
		if got != tt.want || !strings.Contains(why, tt.says) {
			t.Errorf("%s %v: %s (%s), want %s saying %q", tt.leader.Version, tt.leader.FeatureFlags, got, why, tt.want, tt.says)
		}
	}
}
