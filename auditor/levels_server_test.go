package auditor_test

import (
	"context"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestLevelTableAgainstRealServers holds the version → API level table to
// what a real server of every version the harness runs reports, read the way
// the audit reads it.
func TestLevelTableAgainstRealServers(t *testing.T) {
	for _, v := range natstest.Versions {
		sp := natstest.Spec{Name: "solo", Version: v, JetStream: true}
		sys := natstest.Start(t, sp)
		nc := sys.Connect(sp.Name, natstest.SysUser, natstest.SysPassword)
		snap, err := collect.Collect(context.Background(), nc, collect.Options{})
		nc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Servers) != 1 {
			t.Fatalf("%s: %d servers answered, want 1", sp.Name, len(snap.Servers))
		}
		s := snap.Servers[0]
		tag, err := version.ParseVersion(sp.Version)
		if err != nil {
			t.Fatal(err)
		}
		if s.Parsed != tag {
			t.Fatalf("%s reports version %s", sp.Name, s.Version)
		}
		want, why := releases.LevelOf(tag)
		if s.APILevel != want {
			t.Errorf("%s reports API level %d; the table says %d (%s)", sp.Version, s.APILevel, want, why)
		}
	}
}
