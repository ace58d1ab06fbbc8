package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/bench/procstat"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// What an audit costs in CPU, the auditor's and the servers', against the
// raw fetch of the same replies.

// processRun is one run of a process: wall time, CPU (user + system) and
// peak RSS, and the CPU the servers spent meanwhile.
type processRun struct {
	wall, cpu, serverCPU time.Duration
	rss                  int64
	exit                 int
}

// runProcess runs cmd to its end, through a launcher (spawn.go), and takes
// its cost and the servers'.
func runProcess(h *natstest.Program, sys *natstest.System, cmd *exec.Cmd) processRun {
	before := serversCPU(sys)
	c, err := spawn(cmd)
	serverCPU := serversCPU(sys) - before
	if err != nil {
		h.Fatal(err)
	}
	return processRun{wall: c.Wall, cpu: c.CPU, rss: c.RSS, exit: c.Exit, serverCPU: serverCPU}
}

// rawFetchProcess runs the raw fetch as a process of its own: bin is this
// binary (the limit) or validfetch (the limit that checks its replies). A
// run a server cut off is repeated, counted in repeated, up to rawAttempts
// in all; false if every attempt was cut off. Any other failure ends the
// bench.
func rawFetchProcess(h *natstest.Program, sys *natstest.System, bin string, ids []string, repeated *atomic.Int64) (processRun, bool) {
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(bin, "-rawfetch", sys.URL("n1"), "-ids", strings.Join(ids, ","))
		var stderr strings.Builder
		cmd.Stderr = io.MultiWriter(os.Stderr, &stderr)
		r := runProcess(h, sys, cmd)
		if r.exit == 0 {
			return r, true
		}
		if !cutOff(stderr.String()) {
			h.Fatalf("%s exited %d (attempt %d): %s", bin, r.exit, attempt, stderr.String())
		}
		if attempt == rawAttempts {
			return processRun{}, false
		}
		repeated.Add(1)
		time.Sleep(settle)
	}
}

// rawFetchLimit runs the raw fetch, the limit, as a process of its own.
func rawFetchLimit(h *natstest.Program, sys *natstest.System, ids []string) processRun {
	r, ok := rawFetchProcess(h, sys, self(h), ids, &rawRepeated)
	if !ok {
		h.Fatalf("the raw fetch was cut off %d times in a row", rawAttempts)
	}
	return r
}

// startups runs the auditor's binary with --version, and the raw fetch's
// and validfetch's with -startup, cfg.runs times each, in turn: what
// starting and exiting alone cost each, of the time and CPU their whole
// processes are compared by. The auditor links more than the raw fetch
// does (jsm.go through natscontext, client_golang for serve), and every
// package's initialisation runs whichever command is given.
func startups(h *natstest.Program, sys *natstest.System, cfg config) (auditorRuns, rawRuns, validRuns []processRun) {
	run := func(cmd *exec.Cmd) processRun {
		r := runProcess(h, sys, cmd)
		if r.exit != 0 {
			h.Fatalf("%s exited %d", strings.Join(cmd.Args, " "), r.exit)
		}
		return r
	}
	// None of them asks the servers anything: nothing to let settle.
	for range cfg.runs {
		auditorRuns = append(auditorRuns, run(exec.Command(cfg.auditor, "--version")))
		rawRuns = append(rawRuns, run(exec.Command(self(h), "-startup")))
		validRuns = append(validRuns, run(exec.Command(cfg.validfetch, "-startup")))
	}
	return auditorRuns, rawRuns, validRuns
}

// self is this binary: the raw fetch's, and the launcher.
func self(h *natstest.Program) string {
	bin, err := os.Executable()
	if err != nil {
		h.Fatal(err)
	}
	return bin
}

// serversCPU is the CPU time every server process of sys has used so far,
// by thread (procstat.ThreadsCPU).
func serversCPU(sys *natstest.System) time.Duration {
	var total time.Duration
	for _, name := range []string{"n1", "n2", "n3"} {
		total += procstat.ThreadsCPU(sys.PID(name))
	}
	return total
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverBytesPerConsumer is about what the three servers need per consumer
// with memory storage (measured by hand: about 8 GB at 100,000).
const serverBytesPerConsumer = 80 << 10

// memoryFor reports whether the machine has the memory for a cluster of
// consumers, and if not, why.
func memoryFor(consumers int) (bool, string) {
	need := uint64(consumers)*serverBytesPerConsumer + 2<<30 // and room for the rest
	avail := procstat.MemAvailable()
	if avail == 0 || avail >= need {
		return true, ""
	}
	return false, fmt.Sprintf("skipped: needs about %.0f GiB of memory, %.1f GiB available", float64(need)/(1<<30), float64(avail)/(1<<30))
}

func wallOf(rs []processRun) []time.Duration {
	return mapRuns(rs, func(r processRun) time.Duration { return r.wall })
}

func cpuOf(rs []processRun) []time.Duration {
	return mapRuns(rs, func(r processRun) time.Duration { return r.cpu })
}

func serverCPUOf(rs []processRun) []time.Duration {
	return mapRuns(rs, func(r processRun) time.Duration { return r.serverCPU })
}

func mapRuns(rs []processRun, f func(processRun) time.Duration) []time.Duration {
	out := make([]time.Duration, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// compareBinaries runs the raw fetch and each auditor binary's `check` in
// turn, rotating which goes first, cfg.runs times on one cluster of
// cfg.consumers, and returns their medians: the before and after of a
// change, side by side in one run.
func compareBinaries(h *natstest.Program, cfg config, bins []string) string {
	node := func(name, version string) natstest.Spec {
		return natstest.Spec{Name: name, Version: version, Cluster: "bench", JetStream: true, ExtraAccounts: len(accounts) - 1}
	}
	sys := natstest.Start(h, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old))
	var res sizeResult
	populate(h, sys, cfg.consumers, r3Every, &res)
	ids := serverIDs(h, sys.Connect("n1", natstest.SysUser, natstest.SysPassword))
	names := append([]string{"raw fetch"}, bins...)
	runs := map[string][]processRun{}
	for i := range cfg.runs {
		for j := range names {
			name := names[(i+j)%len(names)]
			if name == "raw fetch" {
				runs[name] = append(runs[name], rawFetchLimit(h, sys, ids))
			} else {
				runs[name] = append(runs[name], runCheck(h, sys, name))
			}
			time.Sleep(settle)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d consumers, %d runs each, rotating; medians\n\n", cfg.consumers, cfg.runs)
	fmt.Fprintf(&b, "| process | time | / raw fetch | CPU | / raw fetch | servers' CPU | peak RSS |\n|---|---|---|---|---|---|---|\n")
	raw := runs["raw fetch"]
	for _, name := range names {
		rs := runs[name]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, ms(median(wallOf(rs))), ratio(median(wallOf(rs)), median(wallOf(raw))),
			ms(median(cpuOf(rs))), ratio(median(cpuOf(rs)), median(cpuOf(raw))), ms(median(serverCPUOf(rs))), mib(float64(medianInt(rssOf(rs)))))
	}
	for _, name := range names {
		fmt.Fprintf(&b, "\n%s: each run's time %v, CPU %v", name, wallOf(runs[name]), cpuOf(runs[name]))
	}
	fmt.Fprintf(&b, "\nraw fetch runs repeated (a server cut the fetch off): %d", rawRepeated.Load())
	b.WriteString("\n")
	return b.String()
}

func rssOf(rs []processRun) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.rss
	}
	return out
}
