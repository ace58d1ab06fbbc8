// Package natstest starts real nats-server processes of several versions on
// loopback for the auditor's tests. It is a test harness only.
//
// Files: build.go, the versions the tests run and building them; system.go,
// a system of servers and what a test does to them; operator.go, operator
// (JWT) mode; jetstream.go, publish.go and interest.go, the JetStream
// requests and waits tests share; shards.go, sharded applications pulling
// with priority groups; fleet.go, the seed's fleet and who owns each shard
// mid-rollout; metrics.go, a /metrics page parsed; buffer.go, a
// buffer a process writes and a test reads; program.go, the harness outside
// a test.
package natstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

// The server versions the tests run side by side. Old is below the default
// floor, Floor is the first release at it, New is above it. NoLevels is the
// last release line before JetStream API levels (2.11): it reports none and
// runs assets it does not fully understand online. FirstLevels is the last
// release of the first line with API levels (level 1): unlike Old, its
// decoder logs an assignment it cannot read and runs on. Lenient is the
// last 2.14 release, the first with the lenient config decoder
// (decodeConfig in jetstream_versioning.go, absent in 2.14.0-2.14.9): an
// asset with an enum value it does not know is held offline as a config
// error rather than not loaded, and its meta snapshot does not panic on it.
const (
	NoLevels    = "v2.10.27"
	FirstLevels = "v2.11.12"
	Old         = "v2.12.15"
	Floor       = "v2.14.0"
	Lenient     = "v2.14.10"
	New         = "v2.15.3"
)

// Versions lists every version the tests run side by side.
var Versions = []string{NoLevels, FirstLevels, Old, Floor, Lenient, New}

// The releases of one defect, each run by one test alone rather than beside
// every other version: BadIdempotentCreate is a release the audit holds as
// known bad (releases.BadReleases, nats-server #8413), IdempotentCreateFixed
// the patch release that fixes it (#8449).
const (
	BadIdempotentCreate   = "v2.14.4"
	IdempotentCreateFixed = "v2.14.5"
)

// Pinned lists the versions some tests run alone, which the harness builds
// up front with Versions.
var Pinned = []string{BadIdempotentCreate, IdempotentCreateFixed}

// CacheDir is where built nats-server binaries are kept: $NATS_SERVER_CACHE,
// else .cache/nats-server at the module root (git-ignored).
func CacheDir() (string, error) {
	if d := os.Getenv("NATS_SERVER_CACHE"); d != "" {
		return d, nil
	}
	root, err := modroot.Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "nats-server"), nil
}

// TB is the part of testing.TB the harness uses, so that the demo can drive
// it outside a test.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
	Cleanup(func())
	Failed() bool
}

var buildMu sync.Mutex

// Build returns the path of a nats-server binary of the given version,
// building it with `go install` into the cache the first time. A file lock
// keeps test binaries of several packages from building the same version at once.
func Build(version string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another process built it while we waited
	}
	cmd := exec.Command("go", "install", "github.com/nats-io/nats-server/v2@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0")
	cmd.Dir = os.TempDir() // outside this module: its go.mod must not pin the server's dependencies
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install nats-server@%s: %w\n%s", version, err, out)
	}
	return bin, nil
}

// Binary is Build for tests: it fails the test when the build fails.
func Binary(t TB, version string) string {
	t.Helper()
	bin, err := Build(version)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
