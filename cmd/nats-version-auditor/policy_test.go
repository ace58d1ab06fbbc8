package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func TestServePolicyFileExcludesFloor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	res := runCmd(t, "serve", "--web.listen-address", natstest.FreeAddr(t), "--policy.file", path, "--floor", "2.14")
	if res.code != exitUnknown || !strings.Contains(res.stderr, "--floor and --policy.file both set") {
		t.Errorf("exit %d, %q; want 3 and a message naming both flags", res.code, res.stderr)
	}
}

// TestServePolicyFile changes the floor of a running serve through a file
// laid out and updated as a ConfigMap volume, on a real 2.14.0/2.12.15
// cluster: each change takes effect at the next audit, floor_info follows,
// and a file that cannot be trusted fails the audit closed.
func TestServePolicyFile(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	vol := &configMapVolume{t: t, dir: t.TempDir()}
	path := filepath.Join(vol.dir, "policy.yaml")
	d := startServe(t, append(sys.SysArgs("n1"), "--policy.file", path, "--audit.min-interval", "0s")...)

	type state struct {
		up, status float64
		floor      []string
	}
	waitFor := func(what string, want state) {
		t.Helper()
		var got state
		err := natstest.Eventually(30*time.Second, func() error {
			mfs := d.scrape(t)
			got = state{value(mfs, "nats_version_auditor_up"), value(mfs, "nats_version_auditor_status"),
				series(mfs, "nats_version_auditor_floor_info")}
			if got.up != want.up || got.status != want.status || !slices.Equal(got.floor, want.floor) {
				return fmt.Errorf("%s: up %v, status %v, floor_info %v; want up %v, status %v, floor_info %v\n%s",
					what, got.up, got.status, got.floor, want.up, want.status, want.floor, d.stderr)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		d.running(t)
	}
	floorInfo := func(v string) []string { return []string{"nats_version_auditor_floor_info{floor=" + v + "} 1"} }

	// An optional ConfigMap not created yet: no floor, no audit.
	waitFor("no policy file", state{up: 0, status: 3})
	if !strings.Contains(d.stderr.String(), path) {
		t.Errorf("no log line names the missing %s:\n%s", path, d.stderr)
	}

	vol.write("policy.yaml", "floor: \"2.14.0\"\n")
	waitFor("floor 2.14.0, n3 at 2.12.15", state{up: 1, status: 2, floor: floorInfo("2.14.0")})

	// Mixed versions all at or above 2.12.0: a WARNING, no longer CRITICAL.
	vol.write("policy.yaml", "floor: \"2.12.0\"\n")
	waitFor("floor lowered to 2.12.0", state{up: 1, status: 1, floor: floorInfo("2.12.0")})

	// A number is refused, not read as 2.1: the audit fails closed.
	vol.write("policy.yaml", "floor: 2.10\n")
	waitFor("a number floor", state{up: 0, status: 3})
	if log := d.stderr.String(); !strings.Contains(log, path) || !strings.Contains(log, "floor must be a quoted string") {
		t.Errorf("no log line names %s and its number floor:\n%s", path, log)
	}

	vol.write("policy.yaml", `{"floor": "2.14.0"}`)
	waitFor("floor back to 2.14.0, as JSON", state{up: 1, status: 2, floor: floorInfo("2.14.0")})
}
