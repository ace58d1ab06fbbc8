package auditor

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestFeatureFlagDefaults(t *testing.T) {
	tests := []struct {
		flag, version string
		on, known     bool
	}{
		{releases.FlagRaftDeleteRange, "2.12.15", false, false},
		{releases.FlagRaftDeleteRange, "2.14.0", false, true},
		{releases.FlagRaftDeleteRange, "2.14.10", false, true},
		{releases.FlagRaftDeleteRange, "2.15.0-RC.1", false, true},
		{releases.FlagRaftDeleteRange, "2.15.0", true, true},
		{releases.FlagRaftDeleteRange, "2.15.3", true, true},
		{releases.FlagAckFormatV2, "2.14.0", false, true},
		{releases.FlagAPIReplyFormatV2, "2.14.10", false, false},
		{releases.FlagAPIReplyFormatV2, "2.15.3", false, true},
		{releases.FlagSnapshotSources, "2.15.3", false, true},
		{releases.FlagRaftDeleteRange, "x", true, true}, // unreadable: on in some release
	}
	for _, tt := range tests {
		f, ok := releases.FlagByName(tt.flag)
		if !ok {
			t.Fatalf("no flag %s", tt.flag)
		}
		d, known := f.DefaultBy(parsed(tt.version))
		if d.On != tt.on || known != tt.known || d.Evidence == "" {
			t.Errorf("%s in %s: %t (known %t, %q), want %t (known %t)", tt.flag, tt.version, d.On, known, d.Evidence, tt.on, tt.known)
		}
	}
	// What a server reports wins; else its version's default.
	if snapshot.FlagOn(snapshot.Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{releases.FlagRaftDeleteRange: false}}, releases.FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting the flag off has it on")
	}
	if !snapshot.FlagOn(snapshot.Server{Version: "2.15.3", Parsed: parsed("2.15.3")}, releases.FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting no flags has the default off")
	}
	if snapshot.FlagOn(snapshot.Server{Version: "2.12.15", Parsed: parsed("2.12.15")}, releases.FlagRaftDeleteRange) || snapshot.FlagOn(snapshot.Server{Version: "2.15.3", Parsed: parsed("2.15.3")}, "js_bogus") {
		t.Error("a flag the server's version does not know is on")
	}
	for _, tt := range []struct {
		s    snapshot.Server
		want map[string]bool
	}{
		{snapshot.Server{Version: "2.14.0", Parsed: parsed("2.14.0"), FeatureFlags: map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: true}}, map[string]bool{releases.FlagRaftDeleteRange: true}},
		{snapshot.Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: true}}, nil},
		{snapshot.Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{releases.FlagRaftDeleteRange: false}}, map[string]bool{releases.FlagRaftDeleteRange: false}},
		{snapshot.Server{Version: "2.12.15", Parsed: parsed("2.12.15")}, nil},
	} {
		if got := snapshot.ConfiguredFlags(tt.s); !maps.Equal(got, tt.want) {
			t.Errorf("ConfiguredFlags(%s %v) = %v, want %v", tt.s.Version, tt.s.FeatureFlags, got, tt.want)
		}
	}
}

// TestFeatureFlagsFromStatsz starts a 2.14.0 server that sets
// js_raft_delete_range in its config, a 2.15.3 server that sets nothing and
// a 2.12.15 server, which has no flags, beside a 2.14.10 with the
// defaults: the snapshot holds what each
// reports, the same as nats-server's own types read from its STATSZ, and
// the table's defaults stand for every flag the config leaves alone.
func TestFeatureFlagsFromStatsz(t *testing.T) {
	optIn := natstest.Node("n1", natstest.Floor, "c1")
	optIn.FeatureFlags = map[string]bool{releases.FlagRaftDeleteRange: true}
	sys := natstest.Start(t, optIn, natstest.Node("n2", natstest.New, "c1"), natstest.Node("n3", natstest.Old, "c1"),
		natstest.Node("n4", natstest.Lenient, "c1"))
	if !strings.Contains(sys.Log("n1"), "js_raft_delete_range (opt-in)") {
		t.Errorf("n1 does not log the flag it was configured with:\n%s", sys.LogTail("n1", 30))
	}
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	snap, err := collect.Collect(context.Background(), nc, collect.Options{Expect: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]snapshot.Server{}
	for _, s := range snap.Servers {
		got[s.Name] = s
	}
	want := map[string]map[string]bool{
		"n1": {releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: true},
		"n2": {releases.FlagAckFormatV2: false, releases.FlagAPIReplyFormatV2: false, releases.FlagRaftDeleteRange: true, releases.FlagSnapshotSources: false},
		"n3": nil,
		"n4": {releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: false},
	}
	for name, flags := range want {
		s, ok := got[name]
		if !ok {
			t.Fatalf("%s did not answer: %+v", name, snap.Problems)
		}
		if !maps.Equal(s.FeatureFlags, flags) || (flags == nil) != (s.FeatureFlags == nil) {
			t.Errorf("%s (%s) reports flags %v, want %v", name, s.Version, s.FeatureFlags, flags)
		}
		var set map[string]bool
		if name == optIn.Name {
			set = optIn.FeatureFlags
		}
		if configured := snapshot.ConfiguredFlags(s); !maps.Equal(configured, set) {
			t.Errorf("%s (%s): the flags its config sets read as %v, want %v", name, s.Version, configured, set)
		}
		// Every flag the config leaves alone is the table's default.
		for _, f := range releases.FeatureFlags {
			d, known := f.DefaultBy(s.Parsed)
			on, reported := s.FeatureFlags[f.Name]
			if reported != known {
				t.Errorf("%s (%s) reports %s: %t; the table says the version knows it: %t", name, s.Version, f.Name, reported, known)
			}
			if reported && optIn.Name != name && on != d.On {
				t.Errorf("%s (%s): %s is %t, the table's default %t", name, s.Version, f.Name, on, d.On)
			}
		}
	}
	// Both 2.14.0 with the flag and 2.15.3 by default propose a delete
	// range for a replicated mirror they lead; 2.12.15 does not.
	deleteRange, _ := releases.OpByValue(releases.OpDeleteRange)
	mirror := releases.DetectOps(releases.KindStream, &releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}})
	names, _ := Proposers(deleteRange, snap.Servers, mirror, 3, false)
	if slices.Sort(names); !slices.Equal(names, []string{"n1", "n2"}) {
		t.Errorf("servers that would propose a delete range as the mirror's leader: %v, want [n1 n2]", names)
	}

	// What the projection reads is what nats-server's own types read.
	replies, err := natstest.Gather(nc, collect.PingSubject, []byte("{}"), 4, 10*time.Second)
	if err != nil || len(replies) != 4 {
		t.Fatalf("%d STATSZ replies: %v", len(replies), err)
	}
	for _, m := range replies {
		var full server.ServerStatsMsg
		if err := json.Unmarshal(m.Data, &full); err != nil {
			t.Fatal(err)
		}
		if s := got[full.Server.Name]; !maps.Equal(s.FeatureFlags, full.Server.FeatureFlags) {
			t.Errorf("%s: the snapshot has %v, server.ServerInfo.FeatureFlags %v", s.Name, s.FeatureFlags, full.Server.FeatureFlags)
		}
	}
}

// TestFactFeatureFlagsRefusedBeforeSince: a server before FeatureFlagsSince
// refuses to start with a feature_flags block (so the block must go before
// a downgrade below it); one at it takes the block.
func TestFactFeatureFlagsRefusedBeforeSince(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ff.conf")
	if err := os.WriteFile(conf, []byte("listen: \"127.0.0.1:-1\"\nfeature_flags {\n  js_raft_delete_range: true\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range natstest.Versions {
		out, err := exec.Command(natstest.Binary(t, v), "-t", "-c", conf).CombinedOutput()
		known := parsed(v).AtLeast(releases.FeatureFlagsSince)
		t.Logf("%s -t: %v %s", v, err, bytes.TrimSpace(out))
		switch {
		case known && err != nil:
			t.Errorf("%s refuses the block: %v\n%s", v, err, out)
		case !known && (err == nil || !strings.Contains(string(out), `unknown field "feature_flags"`)):
			t.Errorf("%s takes the block (%v):\n%s", v, err, out)
		}
	}
}

// TestAssumeCarriesFeatureFlags: a what-if runs a changed server on the
// flags its config sets and its new release's defaults for the rest, and a
// release before 2.14.0 with a config that sets flags is a server that
// would not start.
func TestAssumeCarriesFeatureFlags(t *testing.T) {
	server := func(name, version string, flags map[string]bool) snapshot.Server {
		s := snapshot.Server{Name: name, Cluster: "c1", JetStream: true, FeatureFlags: flags}
		s.SetVersion(version)
		return s
	}
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{
		server("n1", "2.14.0", map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: true}), // its config turns it on
		server("n2", "2.14.0", map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: false}),
	}}
	pol := Policy{Floor: parsed("2.12.0")}
	up, err := Assume(Evaluate(snap, pol), pol, []Assumption{{Target: "*", Version: parsed("2.15.3")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range up.Assumed {
		// n1 keeps its config's value; n2 gets 2.15's default, on.
		if !a.FeatureFlags[releases.FlagRaftDeleteRange] || a.FeatureFlags[releases.FlagAckFormatV2] || len(a.FeatureFlags) != 4 {
			t.Errorf("%s at 2.15.3: flags %v", a.Name, a.FeatureFlags)
		}
	}
	// Mixed versions (a cluster of one release) go; nothing appears but
	// the path from 2.14.0, before 2.14.7 (releases.go).
	if got := briefs(up.Appear); !slices.Equal(got, []string{"UPGRADE_PATH_UNSUPPORTED(n1,,//)", "UPGRADE_PATH_UNSUPPORTED(n2,,//)"}) {
		t.Errorf("upgrading finds %s", got)
	}
	down, err := Assume(Evaluate(snap, pol), pol, []Assumption{{Target: "*", Version: parsed("2.12.15")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(briefs(down.Appear), " "); !strings.Contains(got, "FEATURE_FLAGS_REFUSED(n1") || strings.Contains(got, "FEATURE_FLAGS_REFUSED(n2") || down.After.Status != findings.Critical {
		t.Errorf("downgrading below 2.14.0 finds %s (%s), want n1 refused and not n2, which sets no flag", got, down.After.Status)
	}
	for _, a := range down.Assumed {
		if a.FeatureFlags != nil {
			t.Errorf("%s at 2.12.15 has flags %v", a.Name, a.FeatureFlags)
		}
	}
}

// TestAssumeUpgradeTurnsOnDeleteRange: upgrading a mirror's 2.14 leader
// to 2.15.3 turns js_raft_delete_range on by default, and the what-if says
// that its 2.12.15 follower would crash on the delete range.
func TestAssumeUpgradeTurnsOnDeleteRange(t *testing.T) {
	n1, n2 := srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4)
	n1.FeatureFlags = map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: false}
	n2.FeatureFlags = n1.FeatureFlags
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{n1, n2, srv("n3", "c1", "2.12.15", 3)},
		Streams: []snapshot.Asset{withConfig(stream("M", "n1", "n1", "n2", "n3"), releases.AssetConfig{Mirror: &releases.StreamSource{Name: "O"}})}}
	w, err := Assume(Evaluate(snap, Policy{Floor: parsed("2.12.0")}), Policy{Floor: parsed("2.12.0")}, []Assumption{{Target: "n1", Version: parsed("2.15.3")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := briefs(w.Appear); !slices.Contains(got, "ASSET_OP_CRASHES_FOLLOWER(n3,n1,APP/M/)") {
		t.Errorf("the upgrade's what-if finds %v, want n3 crashed by n1's delete range", got)
	}
}
