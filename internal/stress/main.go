// Command stress runs the fault tests again and again while every core is
// kept busy, as on a CI machine shared with other jobs, and reports runs and
// failures per test. A failure whose output says the audit exited 0 is
// counted apart: that is the gate saying OK while a server was down.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// failOpen matches what the fault tests print when check exited 0.
var failOpen = regexp.MustCompile(`\bexit(ed)? 0\b`)

func main() {
	runs := flag.Int("runs", 20, "runs of each test")
	pattern := flag.String("run", `^(TestFault.*|TestPausedServerIsMissing|TestFactLameDuck|TestSuperclusterOfTwoVersions|TestEvent(Restart|GracefulStop|Killed).*|TestLeaderChangeShowsWithoutAnAudit|TestServeChecksBetweenFullAudits|TestServeHearsAssetAdvisories|TestServePolicyFile|TestServeRereadsShardsBetweenAudits)$`, "tests to run (go test -run syntax)")
	pkg := flag.String("pkg", "./cmd/nats-version-auditor", "package of the tests")
	burners := flag.Int("burners", runtime.NumCPU(), "CPU burners kept running beside the tests")
	race := flag.Bool("race", true, "build the tests with the race detector, as make test does")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := stress(ctx, *pkg, *pattern, *runs, *burners, *race); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

type tally struct {
	runs, failed, failedOpen int
	slowest                  time.Duration
	lastFailure              string
}

func stress(ctx context.Context, pkg, pattern string, runs, burners int, race bool) error {
	dir, err := os.MkdirTemp("", "stress")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tests")
	args := []string{"test", "-c", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	if out, err := exec.CommandContext(ctx, "go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("build the tests: %w\n%s", err, out)
	}
	list, err := exec.CommandContext(ctx, bin, "-test.list", pattern).Output()
	if err != nil {
		return fmt.Errorf("list the tests: %w", err)
	}
	var tests []string
	for _, l := range strings.Fields(string(list)) {
		if strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	if len(tests) == 0 {
		return fmt.Errorf("no test matches %s", pattern)
	}

	burnCtx, stopBurning := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range burners {
		wg.Go(func() { burn(burnCtx) })
	}
	defer func() { stopBurning(); wg.Wait() }()

	// The package directory, so that the tests find the module root and its
	// nats-server cache as under go test.
	pkgDir, err := filepath.Abs(pkg)
	if err != nil {
		return err
	}
	results := map[string]*tally{}
	start := time.Now()
	for i := 1; i <= runs && ctx.Err() == nil; i++ {
		for _, name := range tests {
			r := results[name]
			if r == nil {
				r = &tally{}
				results[name] = r
			}
			cmd := exec.CommandContext(ctx, bin, "-test.run", "^"+name+"$", "-test.count=1", "-test.timeout=10m")
			cmd.Dir = pkgDir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			t0 := time.Now()
			err := cmd.Run()
			took := time.Since(t0)
			if ctx.Err() != nil {
				break
			}
			r.runs++
			r.slowest = max(r.slowest, took)
			if err != nil {
				r.failed++
				r.lastFailure = failureLines(out.String())
				if failOpen.MatchString(r.lastFailure) {
					r.failedOpen++
				}
				fmt.Printf("run %d %s FAILED after %s:\n%s\n", i, name, took.Round(time.Millisecond), r.lastFailure)
			} else {
				fmt.Printf("run %d %s ok (%s)\n", i, name, took.Round(time.Millisecond))
			}
		}
	}
	report(os.Stdout, tests, results, burners, time.Since(start))
	for _, r := range results {
		if r.failedOpen > 0 {
			return fmt.Errorf("an audit exited 0 while a server was down")
		}
	}
	return nil
}

// failureLines keeps the test's own error lines, not the servers' log tails.
func failureLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--- FAIL") || regexp.MustCompile(`^\w+_test\.go:\d+:`).MatchString(t) || strings.HasPrefix(t, "panic:") {
			keep = append(keep, t)
		}
	}
	return strings.Join(keep, "\n")
}

func report(w *os.File, tests []string, results map[string]*tally, burners int, took time.Duration) {
	fmt.Fprintf(w, "\nstress: %d CPU burners on %d cores, %s in all\n\n", burners, runtime.NumCPU(), took.Round(time.Second))
	fmt.Fprintln(w, "| test | runs | failed | exit 0 while a server was down | slowest run |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	slices.Sort(tests)
	for _, name := range tests {
		r := results[name]
		if r == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s |\n", name, r.runs, r.failed, r.failedOpen, r.slowest.Round(100*time.Millisecond))
	}
}

// burn spins until ctx ends.
func burn(ctx context.Context) {
	runtime.LockOSThread()
	x := 1.0
	for i := 0; ; i++ {
		x = x*1.0000001 + 1e-9
		if i%(1<<20) == 0 && ctx.Err() != nil {
			_ = x
			return
		}
	}
}
