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

// old is n1, n2 at 2.14.0 with n3 2.12.15, n4 2.11.12 and n5 2.10.27.
func oldServers() []snapshot.Server {
	return []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.12.15", 3),
		srv("n4", "c1", "2.11.12", 1), srv("n5", "c1", "2.10.27", 0)}
}

func withFeatures(a snapshot.Asset, names ...string) snapshot.Asset {
	for i, f := range releases.Features {
		if slices.Contains(names, f.Name) {
			a.Features |= 1 << i
		}
	}
	return a
}

func mirrorOf(name, leader, origin, durable string, peers ...string) snapshot.Asset {
	a := withFeatures(stream(name, leader, peers...), "durable_sourcing")
	a.DurableSources = []releases.DurableSource{{Stream: origin, Consumer: durable, Mirror: true}}
	return a
}

// hazardFindings evaluates snap at a floor every server but n5 meets, so
// that only what this issue adds (and n5 below it) is left.
func hazardFindings(t *testing.T, snap snapshot.Snapshot) (*findings.Report, []string) {
	t.Helper()
	floor, _ := version.ParseVersion("2.11.0")
	r := Evaluate(&snap, Policy{Floor: floor})
	var got []string
	for _, f := range r.Findings {
		switch f.Code {
		case findings.AssetCrashesServer, findings.AssetHaltsMeta, findings.SourcingResetUnanswered, findings.SourcingResetCrashesFollower, findings.AssetAPILevelUnsupported:
			got = append(got, brief(f))
		}
	}
	return r, got
}

func TestAssetCrashesServer(t *testing.T) {
	tests := []struct {
		name string
		snap snapshot.Snapshot
		want []string
	}{
		{
			name: "a flow-control consumer crashes 2.12.15, peer or not, and nobody else",
			snap: snapshot.Snapshot{Servers: oldServers(), Consumers: []snapshot.Asset{
				withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control"),
			}},
			want: []string{"ASSET_CRASHES_SERVER(n3,,APP/FC/c)"},
		},
		{
			name: "a prioritized consumer crashes nobody",
			snap: snapshot.Snapshot{Servers: oldServers(), Consumers: []snapshot.Asset{
				withFeatures(consumer("PR", "c", "n1", "n1"), "priority_groups", "priority_prioritized"),
			}},
			want: nil,
		},
		{
			name: "another domain's servers do not decode it",
			snap: snapshot.Snapshot{Servers: oldServers(), Consumers: []snapshot.Asset{
				func() snapshot.Asset {
					a := withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control")
					a.Domain = "leaf"
					return a
				}(),
			}},
			want: nil,
		},
		{
			name: "a 2.12.15 server that is missing crashes on it when it comes back",
			snap: snapshot.Snapshot{Servers: oldServers()[:2],
				LastSeen:      map[string]snapshot.Server{"n3": srv("n3", "c1", "2.12.15", 3)},
				ExpectedNames: map[string][]string{"n3": {"n1"}},
				Consumers:     []snapshot.Asset{withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control")}},
			want: []string{"ASSET_CRASHES_SERVER(n3,,APP/FC/c)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, got := hazardFindings(t, tc.snap)
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %q, want %q", got, tc.want)
			}
			for _, f := range r.Findings {
				if f.Code != findings.AssetCrashesServer {
					continue
				}
				t.Log(f.Message)
				if f.Severity != findings.Critical || f.Feature != "ack_flow_control" || f.Version != "2.12.15" {
					t.Errorf("finding %+v", f)
				}
				if !strings.Contains(f.Message, "at its next meta snapshot") || !strings.Contains(f.Message, "whether it hosts the consumer or not") {
					t.Errorf("message %q", f.Message)
				}
			}
		})
	}
}

func TestAssetCrashesServerIsNotNarrowed(t *testing.T) {
	snap := snapshot.Snapshot{Servers: oldServers(), Consumers: []snapshot.Asset{withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control")}}
	floor, _ := version.ParseVersion("2.11.0")
	r := Evaluate(&snap, Policy{Floor: floor, Streams: []string{"MINE"}})
	if got := len(withCodeOf(r.Findings, findings.AssetCrashesServer)); got != 1 {
		t.Errorf("%d ASSET_CRASHES_SERVER findings for a gate narrowed to another stream, want 1: the crash takes its assets down too", got)
	}
}

func withCodeOf(fs []findings.Finding, c findings.Code) []findings.Finding {
	var out []findings.Finding
	for _, f := range fs {
		if f.Code == c {
			out = append(out, f)
		}
	}
	return out
}

func TestSourcingReset(t *testing.T) {
	servers := oldServers()[:3]
	tests := []struct {
		name     string
		snap     snapshot.Snapshot
		want     []string
		contains string
	}{
		{
			name: "durable led by 2.12.15: the mirror's RESET goes unanswered and it stalls",
			snap: snapshot.Snapshot{Servers: servers,
				Streams:   []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
				Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n3", "n1", "n2", "n3")}},
			want:     []string{"SOURCING_RESET_UNANSWERED(n3,,APP/ORIGIN/dur)"},
			contains: "leaves the RESET unanswered: the mirror stalls, with no error",
		},
		{
			name: "durable led by 2.14.0 with a 2.12.15 follower: a crash loop",
			snap: snapshot.Snapshot{Servers: servers,
				Streams:   []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
				Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2", "n3")}},
			want:     []string{"SOURCING_RESET_CRASHES_FOLLOWER(n3,n2,APP/ORIGIN/dur)"},
			contains: "follower n3 runs 2.12.15 and panics on the replicated reset (Unknown group entry op type: 18), and again on every restart: a crash loop",
		},
		{
			name: "led by 2.12.15 with a 2.12.15 follower and a 2.14 peer: both",
			snap: snapshot.Snapshot{Servers: append(servers, srv("n4", "c1", "2.12.15", 3)),
				Streams:   []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
				Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n3", "n1", "n3", "n4")}},
			want:     []string{"SOURCING_RESET_UNANSWERED(n3,,APP/ORIGIN/dur)", "SOURCING_RESET_CRASHES_FOLLOWER(n4,n3,APP/ORIGIN/dur)"},
			contains: "once n1 or another server at 2.14.0 or later leads it, follower n4",
		},
		{
			name: "a mirror led by 2.12.15 sends nothing",
			snap: snapshot.Snapshot{Servers: servers,
				Streams:   []snapshot.Asset{mirrorOf("MIRROR", "n3", "ORIGIN", "dur", "n3")},
				Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2", "n3")}},
			// It holds the mirror offline (TestDurableSourcingNeedsLevel4).
			want: []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/MIRROR/)"},
		},
		{
			name: "all peers at 2.14: nothing",
			snap: snapshot.Snapshot{Servers: servers,
				Streams:   []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1")},
				Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2")}},
			want: nil,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, got := hazardFindings(t, tc.snap)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("findings %q, want %q", got, tc.want)
			}
			found := tc.contains == ""
			for _, f := range r.Findings {
				if f.Code != findings.SourcingResetUnanswered && f.Code != findings.SourcingResetCrashesFollower {
					continue
				}
				if !slices.Equal(f.Sourcers, []string{"APP > MIRROR"}) || f.Severity != findings.Critical || !strings.Contains(f.Message, "mirror APP > MIRROR") {
					t.Errorf("finding %+v", f)
				}
				t.Log(f.Message)
				found = found || strings.Contains(f.Message, tc.contains)
			}
			if !found {
				t.Errorf("no message contains %q", tc.contains)
			}
		})
	}
}

func TestServerMissingAfterReset(t *testing.T) {
	snap := snapshot.Snapshot{Servers: oldServers()[:2],
		LastSeen:      map[string]snapshot.Server{"n3": srv("n3", "c1", "2.12.15", 3)},
		ExpectedNames: map[string][]string{"n3": {"n1", "n2"}},
		Streams:       []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
		Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2", "n3"),
			consumer("OTHER", "app", "n1", "n1", "n2", "n3")}}
	r := Evaluate(&snap, Policy{Floor: version.DefaultFloor})
	missing := withCodeOf(r.Findings, findings.ServerMissing)
	t.Log(missing)
	if len(missing) != 1 {
		t.Fatalf("SERVER_MISSING %+v", missing)
	}
	for _, w := range []string{"last seen running 2.12.15", "APP > ORIGIN > dur (RESET by mirror APP > MIRROR)", "crashes again on every restart until it is upgraded"} {
		if !strings.Contains(missing[0].Message, w) {
			t.Errorf("message %q lacks %q", missing[0].Message, w)
		}
	}
	// Without a mirror, the words stay conditional.
	snap.Streams = nil
	r = Evaluate(&snap, Policy{Floor: version.DefaultFloor})
	if m := withCodeOf(r.Findings, findings.ServerMissing)[0].Message; !strings.Contains(m, "if it crashed on a replicated RESET, it crashes again on every restart until it is upgraded") {
		t.Errorf("message %q", m)
	}
	// Last seen at 2.14: nothing to add.
	snap.LastSeen["n3"] = srv("n3", "c1", "2.14.0", 4)
	r = Evaluate(&snap, Policy{Floor: version.DefaultFloor})
	if m := withCodeOf(r.Findings, findings.ServerMissing)[0].Message; strings.Contains(m, "RESET") {
		t.Errorf("message %q", m)
	}
}

func TestIndexNamesSourcersAndCrashes(t *testing.T) {
	snap := snapshot.Snapshot{Servers: oldServers()[:3],
		Streams: []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
		Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2", "n3"),
			withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control")}}
	x := NewIndex(&snap)
	v, ok := x.Consumer(ConsumerKey{Account: "APP", Stream: "ORIGIN", Consumer: "dur"})
	if !ok || v.Reset != findings.ResetCrashesFollower || !slices.Equal(v.ResetBy, []string{"mirror APP > MIRROR"}) ||
		!strings.HasPrefix(v.Reason, "mirror APP > MIRROR sends it RESET by itself") || !strings.HasSuffix(v.Reason, "a crash loop") {
		t.Errorf("origin durable: %+v", v)
	}
	v, ok = x.Consumer(ConsumerKey{Account: "APP", Stream: "FC", Consumer: "c"})
	if !ok || len(v.ResetBy) != 0 || !slices.Equal(v.Crashes, []Crash{{Server: "n3", Version: "2.12.15", Feature: "ack_flow_control", Answered: true}}) ||
		!strings.HasSuffix(v.Reason, "; server n3 (2.12.15) cannot decode this consumer's flow-control acks (ack_policy: flow_control) and crashes on it, peer or not") {
		t.Errorf("flow-control consumer: %+v", v)
	}
	// Led by 2.12.15, the mirror stalls.
	snap.Consumers[0].Leader = "n3"
	v, _ = NewIndex(&snap).Consumer(ConsumerKey{Account: "APP", Stream: "ORIGIN", Consumer: "dur"})
	if v.Reset != findings.ResetUnanswered || !strings.HasSuffix(v.Reason, "the mirror stalls, with no error") {
		t.Errorf("origin durable led by 2.12.15: %+v", v)
	}
}

func TestHazardOwners(t *testing.T) {
	snap := snapshot.Snapshot{Servers: oldServers()[:3],
		LastSeen:      map[string]snapshot.Server{"n9": srv("n9", "c1", "2.12.15", 3)},
		ExpectedNames: map[string][]string{"n9": {"n1"}},
		Streams:       []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n2")},
		Consumers: []snapshot.Asset{consumer("ORIGIN", "dur", "n2", "n1", "n2", "n3"),
			withFeatures(consumer("FC", "c", "n1", "n1"), "ack_flow_control")}}
	r := Evaluate(&snap, Policy{Floor: version.DefaultFloor})
	var got []string
	for _, f := range r.Findings {
		switch f.Code {
		case findings.AssetCrashesServer, findings.SourcingResetCrashesFollower:
			got = append(got, string(f.Code)+" "+f.Server+" owned by "+r.Owner(f))
		}
	}
	want := []string{"ASSET_CRASHES_SERVER n3 owned by n3", "ASSET_CRASHES_SERVER n9 owned by n1", "SOURCING_RESET_CRASHES_FOLLOWER n3 owned by n2"}
	if !slices.Equal(got, want) {
		t.Errorf("owners %q, want %q", got, want)
	}
}

// TestDurableSourcingNeedsLevel4: a mirror's _nats.req.level does not count
// durable sourcing, yet a 2.12 peer holds the mirror offline and a 2.10
// peer runs it as a plain mirror.
func TestDurableSourcingNeedsLevel4(t *testing.T) {
	snap := snapshot.Snapshot{Servers: oldServers(), Streams: []snapshot.Asset{mirrorOf("MIRROR", "n1", "ORIGIN", "dur", "n1", "n3", "n5")}}
	_, got := hazardFindings(t, snap)
	want := []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/MIRROR/)", "ASSET_API_LEVEL_UNSUPPORTED(n5,,APP/MIRROR/)"}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	r := Evaluate(&snap, Policy{Floor: version.DefaultFloor})
	for _, f := range withCodeOf(r.Findings, findings.AssetAPILevelUnsupported) {
		t.Log(f.Message)
		if f.RequiredLevel != 4 || !strings.Contains(f.Message, "durable sourcing") || !strings.Contains(f.Message, "which its _nats.req.level does not record") {
			t.Errorf("finding %+v", f)
		}
	}
}

// TestUndecodableValueByVersion pins each range of what a server does with
// a config value its decoder rejects (releases/ops_source_test.go reads the decoders
// at every bound).
func TestUndecodableValueByVersion(t *testing.T) {
	want := map[string]releases.Outcome{
		"2.10.27": releases.NotLoaded, "2.11.12": releases.NotLoaded, "2.12.4": releases.NotLoaded,
		"2.12.5": releases.CrashesOnDecode, "2.14.0": releases.CrashesOnDecode, "2.14.9": releases.CrashesOnDecode,
		"2.14.10": releases.HeldOffline, "2.15.0": releases.HaltsMeta,
		"2.15.2": releases.HaltsMeta, "2.15.3": releases.HeldOffline, "2.16.0": releases.HeldOffline,
	}
	for v, o := range want {
		if h := releases.UndecodableValueBy(parsed(v)); h.Asset != o || h.Create != releases.CreateRefused || h.Evidence == "" {
			t.Errorf("%s: %s/%s (%q), want %s", v, h.Asset, h.Create, h.Evidence, o)
		}
	}
	if h := releases.UndecodableValueBy(version.Version{}); h.Asset != releases.CrashesOnDecode {
		t.Errorf("a version that is not one: %s, want the worst", h.Asset)
	}
	// undecodableValueBy reads the ranges as one run, oldest first.
	for i, h := range releases.UndecodableValue {
		if open := i == len(releases.UndecodableValue)-1; h.Below.IsZero() != open || (i == 0) != h.From.IsZero() || (i > 0 && h.From != releases.UndecodableValue[i-1].Below) {
			t.Errorf("range %d [%s, %s) does not follow on from the one before, or is open but not the last", i, h.From, h.Below)
		}
	}
}

// TestUndecodableValueHaltsMeta adds a feature of a release after every
// one the table knows, an enum value like ack_flow_control's, and holds
// each server to the range of undecodableValue its version is in: 2.15.0
// to 2.15.2 halt their meta group, 2.14.10 and 2.15.3 hold the asset
// offline, 2.12.5 to 2.14.9 crash.
func TestUndecodableValueHaltsMeta(t *testing.T) {
	future := version.Must("2.16.0")
	saved := releases.Features
	t.Cleanup(func() { releases.Features = saved })
	releases.Features = append(slices.Clone(saved), releases.Feature{Name: "future_enum", Title: "a future enum value", Kind: releases.KindConsumer,
		Level: 5, Since: future, Uses: func(*releases.AssetConfig) bool { return true }, Source: "none: a test row",
		Older: releases.ValueFeature(future)})
	servers := []snapshot.Server{srv("n1", "c1", "2.16.0", 5), srv("n2", "c1", "2.15.3", 4), srv("n3", "c1", "2.15.1", 4),
		srv("n4", "c1", "2.14.10", 4), srv("n5", "c1", "2.14.9", 4), srv("n6", "c1", "2.11.12", 1)}
	snap := snapshot.Snapshot{Servers: servers, Consumers: []snapshot.Asset{withFeatures(consumer("FC", "c", "n1", "n1", "n2", "n3"), "future_enum")}}
	r, got := hazardFindings(t, snap)
	for _, f := range r.Findings {
		if f.Code == findings.AssetHaltsMeta && !strings.Contains(f.Message, "stops applying the meta group's log") {
			t.Errorf("message: %s", f.Message)
		}
	}
	slices.Sort(got)
	// As a peer, n2 holds it offline and n3 runs nothing: their API levels
	// already say so.
	want := []string{"ASSET_API_LEVEL_UNSUPPORTED(n2,,APP/FC/c)", "ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/FC/c)",
		"ASSET_CRASHES_SERVER(n5,,APP/FC/c)", "ASSET_HALTS_META(n3,,APP/FC/c)"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for _, f := range r.Findings {
		if f.Code == findings.AssetAPILevelUnsupported && f.Server == "n2" && !strings.Contains(f.Message, "offline") {
			t.Errorf("n2 holds it offline: %s", f.Message)
		}
	}
}
