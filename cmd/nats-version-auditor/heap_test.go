package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// The collector's settings are the process's: each case runs in a process
// of its own, this test binary again with heapChildEnv set to the case.
const heapChildEnv = "NVA_HEAP_TEST_CHILD"

// heapCases are what TestOneAuditHeapChild does, by name: the environment
// it runs in, and the arguments it runs, or none to call oneAuditHeap.
var heapCases = map[string]struct {
	env  string
	args []string
	set  bool // the collector is left to the floor and the live heap
}{
	"called":                        {set: true},
	"GOGC in the environment":       {env: "GOGC=100"},
	"GOMEMLIMIT in the environment": {env: "GOMEMLIMIT=1GiB"},
	"check":                         {args: []string{"check"}, set: true},
	"report":                        {args: []string{"report"}, set: true},
	"plan":                          {args: []string{"plan", "--to", "2.14.0"}, set: true},
	"check --wait":                  {args: []string{"check", "--wait", "1s"}},
}

func TestOneAuditHeap(t *testing.T) {
	for name, tt := range heapCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestOneAuditHeapChild$", "-test.v")
			// Empty is unset, to the runtime and to oneAuditHeap.
			cmd.Env = append(os.Environ(), heapChildEnv+"="+name, "GOGC=", "GOMEMLIMIT=")
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestOneAuditHeapChild") {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestOneAuditHeapChild is TestOneAuditHeap's process for one case.
func TestOneAuditHeapChild(t *testing.T) {
	name := os.Getenv(heapChildEnv)
	if name == "" {
		t.Skip("run by TestOneAuditHeap")
	}
	tt := heapCases[name]
	if tt.args == nil {
		oneAuditHeap()
	} else {
		// A credentials file that is not there ends the command at once,
		// after it was chosen.
		args := append(tt.args, "--creds", "/nonexistent/sys.creds", "-s", "nats://127.0.0.1:1")
		if code := run(context.Background(), args, io.Discard, io.Discard); code != exitUnknown {
			t.Fatalf("%v: exit %d, want %d", args, code, exitUnknown)
		}
	}
	if tt.set {
		oneAuditHeap() // a second call: the settings below hold all the same
	}
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	wantLimit := int64(math.MaxInt64)
	if tt.env == "GOMEMLIMIT=1GiB" {
		wantLimit = 1 << 30
	}
	switch {
	case !tt.set && (percent != 100 || limit != wantLimit):
		t.Fatalf("GOGC %d and memory limit %d, want 100 and %d (the environment's or the runtime's)", percent, limit, wantLimit)
	case !tt.set:
		return
	case percent != -1 || limit != oneAuditHeapFloor:
		t.Fatalf("GOGC %d and memory limit %d, want off and %d", percent, limit, oneAuditHeapFloor)
	}
	// A live heap above the floor raises the limit to twice its size, so
	// that it is not collected again and again.
	live := make([][]byte, 0, 96)
	for range 96 {
		live = append(live, make([]byte, 1<<20))
	}
	if err := natstest.Eventually(10*time.Second, func() error {
		runtime.GC()
		if l := debug.SetMemoryLimit(-1); l < 2*96<<20 {
			return fmt.Errorf("memory limit %d with 96 MiB live, want at least twice that", l)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(live)
}
