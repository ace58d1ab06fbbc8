package releases

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestLevelOf(t *testing.T) {
	tests := []struct {
		version string
		want    int
	}{
		{"2.9.25", 0},
		{"2.10.27", 0},
		{"v2.10.29", 0},
		{"2.10.30", LevelUnknown}, // not released when the table was read
		{"2.11.0", 1},
		{"2.11.12", 1},
		{"2.11.17", 1},
		{"2.11.18", LevelUnknown},
		{"2.12.0", 2},
		{"2.12.4", 2},
		{"2.12.5", 3}, // the level moves within a minor version
		{"2.12.15", 3},
		{"2.12.16", LevelUnknown},
		{"2.13.0", LevelUnknown}, // there is no 2.13
		{"2.14.0", 4},
		{"2.14.3-fips", 4},
		{"2.14.10", 4},
		{"2.14.11", LevelUnknown},
		{"2.15.0", 5},
		{"2.15.3", 5},
		{"2.15.4", LevelUnknown},
		{"2.16.0", LevelUnknown},
		{"3.0.0", LevelUnknown},
		{"2.14.0-RC.1", LevelUnknown}, // pre-releases are not in the table
		{"2.12.5-RC.2", LevelUnknown},
		{"", LevelUnknown},
		{"banana", LevelUnknown},
	}
	for _, tt := range tests {
		got, why := LevelOf(parsedRelease(tt.version))
		if got != tt.want {
			t.Errorf("LevelOf(%q) = %d (%s), want %d", tt.version, got, why, tt.want)
		}
		if why == "" {
			t.Errorf("LevelOf(%q) gives no source or reason", tt.version)
		}
	}
}

// TestLevelTableAgainstSource reads JSApiLevel from the nats-server source at
// every tag the table names (downloaded into the module cache), and checks
// that each range's first and last releases are among them.
func TestLevelTableAgainstSource(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads nats-server sources")
	}
	level := regexp.MustCompile(`JSApiLevel\s+int\s*=\s*(\d+)`)
	for _, r := range levelRanges {
		for _, end := range []version.Version{r.First, r.Last} {
			if !end.IsZero() && !slices.Contains(r.Checked, end) {
				t.Errorf("range %s..%s: its end %s was not read", r.First, r.Last, end)
			}
		}
		for _, release := range r.Checked {
			tag := "v" + release.String()
			dir := moduleSource(t, tag)
			src, err := os.ReadFile(filepath.Join(dir, "server", "jetstream_versioning.go"))
			if r.Level == 0 {
				if err == nil {
					t.Errorf("%s has server/jetstream_versioning.go, the table says it has no levels", tag)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			m := level.FindSubmatch(src)
			if m == nil {
				t.Fatalf("%s: no JSApiLevel in server/jetstream_versioning.go", tag)
			}
			if got, _ := strconv.Atoi(string(m[1])); got != r.Level {
				t.Errorf("%s: JSApiLevel = %d, the table says %d", tag, got, r.Level)
			}
			if got, _ := LevelOf(release); got != r.Level {
				t.Errorf("LevelOf(%s) = %d, the table says %d", tag, got, r.Level)
			}
		}
	}
}

// moduleSource downloads nats-server at tag into the module cache and
// returns its directory.
func moduleSource(t *testing.T, tag string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/nats-io/nats-server/v2@"+tag)
	cmd.Dir = t.TempDir() // outside this module: its go.mod stays as it is
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download nats-server@%s: %v\n%s", tag, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download nats-server@%s: %v %s", tag, err, mod.Error)
	}
	return mod.Dir
}

// parsedRelease is s as a Version, the zero Version when it is none.
func parsedRelease(s string) version.Version {
	v, _ := version.ParseVersion(s)
	return v
}
