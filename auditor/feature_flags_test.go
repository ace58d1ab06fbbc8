package auditor

import "testing"

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
		d, known := f.DefaultBy(tt.version)
		if d.On != tt.on || known != tt.known || d.Evidence == "" {
			t.Errorf("%s in %s: %t (known %t, %q), want %t (known %t)", tt.flag, tt.version, d.On, known, d.Evidence, tt.on, tt.known)
		}
	}
	// What a server reports wins; else its version's default.
	if FlagOn(Server{Version: "2.15.3", FeatureFlags: map[string]bool{FlagRaftDeleteRange: false}}, FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting the flag off has it on")
	}
	if !FlagOn(Server{Version: "2.15.3"}, FlagRaftDeleteRange) {
		t.Error("a 2.15.3 server reporting no flags has the default off")
	}
	if FlagOn(Server{Version: "2.12.15"}, FlagRaftDeleteRange) || FlagOn(Server{Version: "2.15.3"}, "js_bogus") {
		t.Error("a flag the server's version does not know is on")
	}
}
