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

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestFeatureFlagDefaults(t *testing.T) {
	tests := []struct {
		flag, version string
		on, known     bool
	}{
		{FlagRaftDeleteRange, "2.12.15", false, false},
		{FlagRaftDeleteRange, "2.14.0", false, true},
		{FlagRaftDeleteRange, "2.14.10", false, true},
		{FlagRaftDeleteRange, "2.15.0-RC.1", false, true},
		{FlagRaftDeleteRange, "2.15.0", true, true},
		{FlagRaftDeleteRange, "2.15.3", true, true},
		{FlagAckFormatV2, "2.14.0", false, true},
		{FlagAPIReplyFormatV2, "2.14.10", false, false},
		{FlagAPIReplyFormatV2, "2.15.3", false, true},
		{FlagSnapshotSources, "2.15.3", false, true},
		{FlagRaftDeleteRange, "x", true, true}, // unreadable: on in some release
	}
	for _, tt := range tests {
		f, ok := FlagByName(tt.flag)
		if !ok {
			t.Fatalf("no flag %s", tt.flag)
		}
		d, known := f.DefaultBy(parsed(tt.version))
		if d.On != tt.on || known != tt.known || d.Evidence == "" {
			t.Errorf("%s in %s: %t (known %t, %q), want %t (known %t)", tt.flag, tt.version, d.On, known, d.Evidence, tt.on, tt.known)
		}
	}
	// What a server reports wins; else its version's default.
	if FlagOn(Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{FlagRaftDeleteRange: false}}, FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting the flag off has it on")
	}
	if !FlagOn(Server{Version: "2.15.3", Parsed: parsed("2.15.3")}, FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting no flags has the default off")
	}
	if FlagOn(Server{Version: "2.12.15", Parsed: parsed("2.12.15")}, FlagRaftDeleteRange) || FlagOn(Server{Version: "2.15.3", Parsed: parsed("2.15.3")}, "js_bogus") {
		t.Error("a flag the server's version does not know is on")
	}
	for _, tt := range []struct {
		s    Server
		want map[string]bool
	}{
		{Server{Version: "2.14.0", Parsed: parsed("2.14.0"), FeatureFlags: map[string]bool{FlagAckFormatV2: false, FlagRaftDeleteRange: true}}, map[string]bool{FlagRaftDeleteRange: true}},
		{Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{FlagAckFormatV2: false, FlagRaftDeleteRange: true}}, nil},
		{Server{Version: "2.15.3", Parsed: parsed("2.15.3"), FeatureFlags: map[string]bool{FlagRaftDeleteRange: false}}, map[string]bool{FlagRaftDeleteRange: false}},
		{Server{Version: "2.12.15", Parsed: parsed("2.12.15")}, nil},
	} {
		if got := ConfiguredFlags(tt.s); !maps.Equal(got, tt.want) {
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
	optIn.FeatureFlags = map[string]bool{FlagRaftDeleteRange: true}
	sys := natstest.Start(t, optIn, natstest.Node("n2", natstest.New, "c1"), natstest.Node("n3", natstest.Old, "c1"),
		natstest.Node("n4", natstest.Lenient, "c1"))
	if !strings.Contains(sys.Log("n1"), "js_raft_delete_range (opt-in)") {
		t.Errorf("n1 does not log the flag it was configured with:\n%s", sys.LogTail("n1", 30))
	}
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	snap, err := Collect(context.Background(), nc, Options{Expect: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Server{}
	for _, s := range snap.Servers {
		got[s.Name] = s
	}
	want := map[string]map[string]bool{
		"n1": {FlagAckFormatV2: false, FlagRaftDeleteRange: true},
		"n2": {FlagAckFormatV2: false, FlagAPIReplyFormatV2: false, FlagRaftDeleteRange: true, FlagSnapshotSources: false},
		"n3": nil,
		"n4": {FlagAckFormatV2: false, FlagRaftDeleteRange: false},
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
		if configured := ConfiguredFlags(s); !maps.Equal(configured, set) {
			t.Errorf("%s (%s): the flags its config sets read as %v, want %v", name, s.Version, configured, set)
		}
		// Every flag the config leaves alone is the table's default.
		for _, f := range FeatureFlags {
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
	deleteRange, _ := OpByValue(OpDeleteRange)
	mirror := DetectOps(KindStream, &AssetConfig{Mirror: &StreamSource{Name: "O"}})
	names, _ := deleteRange.Proposers(snap.Servers, mirror, 3, false)
	if slices.Sort(names); !slices.Equal(names, []string{"n1", "n2"}) {
		t.Errorf("servers that would propose a delete range as the mirror's leader: %v, want [n1 n2]", names)
	}

	// What the projection reads is what nats-server's own types read.
	replies, err := natstest.Gather(nc, PingSubject, []byte("{}"), 4, 10*time.Second)
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
		known := parsed(v).AtLeast(FeatureFlagsSince)
		t.Logf("%s -t: %v %s", v, err, bytes.TrimSpace(out))
		switch {
		case known && err != nil:
			t.Errorf("%s refuses the block: %v\n%s", v, err, out)
		case !known && (err == nil || !strings.Contains(string(out), `unknown field "feature_flags"`)):
			t.Errorf("%s takes the block (%v):\n%s", v, err, out)
		}
	}
}
