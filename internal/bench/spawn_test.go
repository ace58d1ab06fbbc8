package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets this test binary be the launcher, as the bench's binary is.
func TestMain(m *testing.M) {
	if args, ok := launcherArgs(os.Args); ok {
		os.Exit(spawnMain(args))
	}
	os.Exit(m.Run())
}

// TestSpawnReportsItsOwnPeak holds 256 MiB and runs /bin/true twice: started
// by this process it reports this process's peak RSS as its own (the
// kernel's doing that the launcher is for); through the launcher, its own.
func TestSpawnReportsItsOwnPeak(t *testing.T) {
	const held = 256 << 20
	b := make([]byte, held)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}

	direct := exec.Command("/bin/true")
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	if rss := direct.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024; rss < held {
		t.Errorf("/bin/true started here: peak RSS %d MiB, want at least the %d MiB this process holds", rss>>20, held>>20)
	}

	c, err := spawn(exec.Command("/bin/true"))
	if err != nil {
		t.Fatal(err)
	}
	if c.RSS <= 0 || c.RSS >= held/2 || c.Exit != 0 || c.Wall <= 0 {
		t.Errorf("/bin/true through the launcher: %+v (peak RSS %d MiB), want its own small peak and exit 0", c, c.RSS>>20)
	}
	runtime.KeepAlive(b)
}

// TestSpawnPassesTheExitAndOutput: the program's exit code and output come
// through the launcher.
func TestSpawnPassesTheExitAndOutput(t *testing.T) {
	var out strings.Builder
	cmd := exec.Command("/bin/sh", "-c", "echo out; exit 3")
	cmd.Stdout = &out
	c, err := spawn(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if c.Exit != 3 || out.String() != "out\n" {
		t.Errorf("exit %d, output %q; want 3, \"out\\n\"", c.Exit, out.String())
	}
}
