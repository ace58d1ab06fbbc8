package auditor

import (
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestOpOutcome(t *testing.T) {
	tests := []struct {
		op      releases.EntryOp
		version string
		want    releases.Outcome
	}{
		{releases.OpDeleteRange, "2.10.27", releases.CrashesOnApply},
		{releases.OpDeleteRange, "2.12.15", releases.CrashesOnApply},
		{releases.OpDeleteRange, "2.14.0-RC.1", releases.CrashesOnApply}, // a pre-release sorts below its release
		{releases.OpDeleteRange, "2.14.0", releases.Supported},
		{releases.OpDeleteRange, "2.15.3", releases.Supported},
		{releases.OpDeleteRange, "2.16.0", releases.Supported}, // ops are never taken back
		{releases.OpBatchMsg, "2.10.27", releases.CrashesOnApply},
		{releases.OpBatchMsg, "2.11.12", releases.CrashesOnApply},
		{releases.OpBatchMsg, "2.12.0", releases.Supported},
		{releases.OpBatchCommitMsg, "2.11.8", releases.CrashesOnApply},
		{releases.OpBatchCommitMsg, "2.12.15", releases.Supported},
		{releases.OpResetSeq, "2.12.15", releases.CrashesOnApply},
		{releases.OpResetSeq, "2.14.0", releases.Supported},
		{releases.OpResetSeq, "2.14.3-fips", releases.Supported},
		{releases.OpResetSeq, "banana", releases.CrashesOnApply}, // unreadable: the worst
		{4, "2.10.27", releases.Supported},                       // streamMsgOp: every release
	}
	for _, tt := range tests {
		h := releases.OpOutcome(tt.op, parsed(tt.version))
		if h.Apply != tt.want {
			t.Errorf("OpOutcome(%s, %s) = %s (%s), want %s", tt.op, tt.version, h.Apply, h.Evidence, tt.want)
		}
		if h.Evidence == "" {
			t.Errorf("OpOutcome(%s, %s) cites nothing", tt.op, tt.version)
		}
	}
	if got := releases.UnknownOpOutcome(parsed("2.14.10")).Apply; got != releases.CrashesOnApply {
		t.Errorf("an unknown op on 2.14.10: %s, want %s", got, releases.CrashesOnApply)
	}
	if got := releases.UnknownOpOutcome(parsed("2.15.0")).Apply; got != releases.HaltsReplica {
		t.Errorf("an unknown op on 2.15.0: %s, want %s", got, releases.HaltsReplica)
	}
}

// TestOpTableShape holds every row to what the judging functions assume:
// a name, a cite, older ranges that cover every version below Since, and
// a way to be proposed.
func TestOpTableShape(t *testing.T) {
	seen := map[releases.EntryOp]bool{}
	for _, o := range releases.ReplicatedOps {
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
			if p.Evidence == "" || p.When == "" || (p.How != releases.ProposedOnRequest && p.How != releases.ProposedByItself) {
				t.Errorf("%s: a proposal without a cite, a when or a how", o.Name)
			}
			if p.Flag != "" {
				if _, ok := releases.FlagByName(p.Flag); !ok {
					t.Errorf("%s: flag %s is not in FeatureFlags", o.Name, p.Flag)
				}
			}
		}
	}
}

// TestResetReadsItsOpRow: RESET's verdicts come from the consumer_reset row.
func TestResetReadsItsOpRow(t *testing.T) {
	row, ok := releases.OpByValue(releases.OpResetSeq)
	if !ok {
		t.Fatal("no row for resetSeqOp")
	}
	if row.Since != releases.ResetVersion || row.Kind != releases.KindConsumer {
		t.Errorf("consumer_reset row: since %s, kind %s; ResetVersion is %s", row.Since, row.Kind, releases.ResetVersion)
	}
	for _, p := range row.Proposed {
		if p.Since != releases.ResetVersion {
			t.Errorf("consumer_reset is proposed from %s, RESET is answered from %s", p.Since, releases.ResetVersion)
		}
	}
	for _, v := range []string{"2.10.27", "2.12.15", "2.14.0-RC.1", "2.14.0", "2.15.3", "x"} {
		if got, want := answersReset(parsed(v)), parsed(v).AtLeast(releases.ResetVersion); got != want {
			t.Errorf("answersReset(%s) = %t (the consumer_reset row), want %t (RESET is answered from %s)", v, got, want, releases.ResetVersion)
		}
	}
}

func TestOpProposes(t *testing.T) {
	deleteRange, _ := releases.OpByValue(releases.OpDeleteRange)
	batch, _ := releases.OpByValue(releases.OpBatchMsg)
	reset, _ := releases.OpByValue(releases.OpResetSeq)
	mirror := releases.DetectOps(releases.KindStream, &releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}})
	plain := releases.DetectOps(releases.KindStream, &releases.AssetConfig{})
	consumer := releases.DetectOps(releases.KindConsumer, &releases.AssetConfig{})
	atomic := releases.DetectOps(releases.KindStream, &releases.AssetConfig{AllowAtomicPublish: true})
	leader := func(version string, flags map[string]bool) snapshot.Server {
		return snapshot.Server{Name: "n1", Version: version, Parsed: parsed(version), FeatureFlags: flags}
	}
	tests := []struct {
		name     string
		op       releases.ReplicatedOp
		leader   snapshot.Server
		ops      releases.OpSet
		replicas int
		sourced  bool
		want     releases.Proposing
		why      string // a part of the reason
	}{
		{"2.15 mirror leader, defaults", deleteRange, leader("2.15.3", nil), mirror, 3, false, releases.ProposedByItself, "true by default in 2.15.3"},
		{"2.15 mirror leader, reported on", deleteRange, leader("2.15.3", map[string]bool{releases.FlagRaftDeleteRange: true}), mirror, 3, false, releases.ProposedByItself, "as the server reports it"},
		{"2.15 mirror leader, opted out", deleteRange, leader("2.15.3", map[string]bool{releases.FlagRaftDeleteRange: false}), mirror, 3, false, releases.NotProposed, ""},
		{"2.14 mirror leader, defaults", deleteRange, leader("2.14.0", map[string]bool{releases.FlagRaftDeleteRange: false}), mirror, 3, false, releases.NotProposed, ""},
		{"2.14 mirror leader, opted in", deleteRange, leader("2.14.0", map[string]bool{releases.FlagRaftDeleteRange: true}), mirror, 3, false, releases.ProposedByItself, ""},
		{"2.12 mirror leader", deleteRange, leader("2.12.15", map[string]bool{releases.FlagRaftDeleteRange: true}), mirror, 3, false, releases.NotProposed, ""},
		{"R1 mirror", deleteRange, leader("2.15.3", nil), mirror, 1, false, releases.NotProposed, "single replica"},
		{"not a mirror", deleteRange, leader("2.15.3", nil), plain, 3, false, releases.NotProposed, "admits no"},
		{"a stream's ops for a consumer", reset, leader("2.15.3", nil), mirror, 3, false, releases.NotProposed, "admits no"},
		{"unreadable version", deleteRange, leader("x", nil), mirror, 3, false, releases.ProposedByItself, "not a version"},
		{"atomic stream", batch, leader("2.12.15", nil), atomic, 3, false, releases.ProposedOnRequest, "Nats-Batch-Id"},
		{"atomic stream, 2.11 leader", batch, leader("2.11.12", nil), atomic, 3, false, releases.NotProposed, ""},
		{"plain stream", batch, leader("2.15.3", nil), plain, 3, false, releases.NotProposed, ""},
		{"consumer", reset, leader("2.14.0", nil), consumer, 3, false, releases.ProposedOnRequest, "CONSUMER.RESET"},
		{"sourced consumer", reset, leader("2.14.0", nil), consumer, 3, true, releases.ProposedByItself, "durable sourcing"},
		{"consumer, 2.12 leader", reset, leader("2.12.15", nil), consumer, 3, true, releases.NotProposed, ""},
	}
	for _, tt := range tests {
		got, why := Proposes(tt.op, tt.leader, tt.ops, tt.replicas, tt.sourced)
		if got != tt.want || !strings.Contains(why, tt.why) {
			t.Errorf("%s: %s (%s), want %s with %q", tt.name, got, why, tt.want, tt.why)
		}
	}
	peers := []snapshot.Server{leader("2.12.15", nil), {Name: "n2", Version: "2.15.3", Parsed: parsed("2.15.3")}, {Name: "n3", Version: "2.14.0", Parsed: parsed("2.14.0"), FeatureFlags: map[string]bool{releases.FlagRaftDeleteRange: false}}}
	if names, how := Proposers(deleteRange, peers, mirror, 3, false); len(names) != 1 || names[0] != "n2" || how != releases.ProposedByItself {
		t.Errorf("Proposers = %v %s, want [n2] by itself", names, how)
	}
}

// TestOpFollowerOutcome: a follower that does not run an asset's replica
// (axis a) never applies its ops (axis b).
func TestOpFollowerOutcome(t *testing.T) {
	batch, _ := releases.OpByValue(releases.OpBatchMsg)
	deleteRange, _ := releases.OpByValue(releases.OpDeleteRange)
	atomic := releases.DetectFeatures(releases.KindStream, &releases.AssetConfig{AllowAtomicPublish: true})
	tests := []struct {
		op       releases.ReplicatedOp
		version  string
		features releases.FeatureSet
		want     releases.Outcome
	}{
		{batch, "2.10.27", atomic, releases.CrashesOnApply}, // runs it online without the field
		{batch, "2.11.8", atomic, releases.CrashesOnApply},
		{batch, "2.11.12", atomic, releases.HeldOffline}, // holds it offline: never receives op 16
		{batch, "2.14.0", atomic, releases.Supported},
		{deleteRange, "2.12.15", 0, releases.CrashesOnApply},
		{deleteRange, "2.14.0", 0, releases.Supported},
	}
	for _, tt := range tests {
		if got, why := tt.op.FollowerOutcome(parsed(tt.version), tt.features); got != tt.want {
			t.Errorf("%s on %s: %s (%s), want %s", tt.op.Name, tt.version, got, why, tt.want)
		}
	}
}

func TestDetectOps(t *testing.T) {
	tests := []struct {
		kind releases.AssetKind
		cfg  *releases.AssetConfig
		want []string
	}{
		{releases.KindStream, &releases.AssetConfig{}, nil},
		{releases.KindStream, &releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}}, []string{"delete_range"}},
		// Sources never call skipMsgs; their snapshot carries their state.
		{releases.KindStream, &releases.AssetConfig{Sources: []*releases.StreamSource{{Name: "O"}}}, []string{"snapshot_sources"}},
		{releases.KindStream, &releases.AssetConfig{AllowAtomicPublish: true}, []string{"atomic_batch_msg", "atomic_batch_commit"}},
		{releases.KindConsumer, &releases.AssetConfig{}, []string{"consumer_reset"}},
		{releases.KindConsumer, nil, nil},
	}
	for _, tt := range tests {
		got := releases.DetectOps(tt.kind, tt.cfg)
		for _, o := range releases.ReplicatedOps {
			if want := slices.Contains(tt.want, o.Name); got.Holds(o) != want {
				t.Errorf("DetectOps(%s, %+v) holds %s: %t, want %t", tt.kind, tt.cfg, o.Name, got.Holds(o), want)
			}
		}
	}
}

// TestOlderFollowersOfALaterOp: an op a release after 2.15.0 brings halts
// the replicas of 2.15 followers and crashes older ones.
func TestOlderFollowersOfALaterOp(t *testing.T) {
	row := releases.ReplicatedOp{Name: "later", Op: 200, Since: parsed("2.16.0"), Older: releases.OlderFollowers(parsed("2.16.0"), "")}
	for v, want := range map[string]releases.Outcome{"2.14.10": releases.CrashesOnApply, "2.15.0": releases.HaltsReplica, "2.15.9": releases.HaltsReplica, "2.16.0": releases.Supported} {
		if got := row.HandlingBy(parsed(v)).Apply; got != want {
			t.Errorf("%s: %s, want %s", v, got, want)
		}
	}
	since := version.Must("2.14.0")
	if got := releases.OlderFollowers(since, ""); len(got) != 1 || got[0].Below != since || got[0].Apply != releases.CrashesOnApply {
		t.Errorf("olderFollowers(2.14.0) = %+v", got)
	}
}

// TestSnapshotSourcesRow: what each follower does with the stream snapshot
// that carries sourcing state, and which leaders send it.
func TestSnapshotSourcesRow(t *testing.T) {
	row := releases.SnapshotSources
	for v, want := range map[string]releases.Outcome{
		"2.10.27": releases.ResetsReplica, "2.12.15": releases.ResetsReplica, "2.14.0-RC.1": releases.ResetsReplica,
		"2.14.0": releases.HaltsReplica, "2.14.10": releases.HaltsReplica, "2.15.0-RC.1": releases.HaltsReplica,
		"2.15.0": releases.Supported, "2.15.3": releases.Supported, "banana": releases.ResetsReplica,
	} {
		if h := row.HandlingBy(parsed(v)); h.Apply != want || h.Evidence == "" {
			t.Errorf("%s: %s (%s), want %s", v, h.Apply, h.Evidence, want)
		}
	}
	sources := releases.DetectOps(releases.KindStream, &releases.AssetConfig{Sources: []*releases.StreamSource{{Name: "O"}}})
	mirror := releases.DetectOps(releases.KindStream, &releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}})
	if !sources.Holds(row) || mirror.Holds(row) {
		t.Errorf("sources hold the row: %t, a mirror: %t; want true, false", sources.Holds(row), mirror.Holds(row))
	}
	if _, ok := releases.OpByValue(0); ok {
		t.Error("OpByValue(0) found the snapshot row")
	}
	on := srv("n1", "c1", "2.15.3", 4)
	on.FeatureFlags = map[string]bool{releases.FlagSnapshotSources: true}
	for _, tt := range []struct {
		leader snapshot.Server
		ops    releases.OpSet
		want   releases.Proposing
		says   string
	}{
		{on, sources, releases.ProposedByItself, "n1 (2.15.3) sends streamStateVersionSources as the stream's leader whenever it catches up a follower from its snapshot"},
		{srv("n1", "c1", "2.15.3", 4), sources, releases.NotProposed, "n1 (2.15.3) does not send streamStateVersionSources for it"},
		{on, mirror, releases.NotProposed, "its config admits no streamStateVersionSources"},
		{srv("n1", "c1", "2.14.10", 4), sources, releases.NotProposed, "does not send"},
	} {
		got, why := Proposes(row, tt.leader, tt.ops, 3, false)
		if got != tt.want || !strings.Contains(why, tt.says) {
			t.Errorf("%s %v: %s (%s), want %s saying %q", tt.leader.Version, tt.leader.FeatureFlags, got, why, tt.want, tt.says)
		}
	}
}
