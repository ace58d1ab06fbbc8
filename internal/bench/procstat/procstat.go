// Package procstat is the little of /proc the benchmarks read: a
// process's CPU and memory, the servers' CPU by thread, the machine's
// busy time, its free memory and load.
//
// Times in /proc/PID/stat and /proc/stat are in clock ticks: USER_HZ, 100
// on Linux whatever the kernel's own HZ (proc(5)). Each reader returns 0
// (or "unknown") when what it reads is gone, so a process that ended
// mid-measurement costs a sample, not the run.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const tick = 10 * time.Millisecond

// CPU is the CPU time (user + system) the process pid has used so far,
// including its threads that ended (utime + stime of /proc/PID/stat).
func CPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: the fields
	// are counted after the last ')'. There, field 3 (state) is the first;
	// utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * tick
}

// ThreadsCPU is the CPU time the live threads of pid have used so far, in
// nanoseconds rather than ticks (/proc/PID/task/*/schedstat). Threads that
// ended are not counted, which undercounts a little; it is the finer
// measure for short runs.
func ThreadsCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	var total time.Duration
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		total += time.Duration(ns)
	}
	return total
}

// Mem is the resident set of pid now and its peak, in bytes (VmRSS and
// VmHWM of /proc/PID/status).
func Mem(pid int) (rss, hwm int64) {
	if pid == 0 {
		return 0, 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// MachineBusy is the CPU time every core of the machine has spent on
// anything but idling and waiting for I/O so far (the "cpu" line of
// /proc/stat: user, nice, system, irq, softirq, steal).
func MachineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0
		}
		busy += n
	}
	return time.Duration(busy) * tick
}

// MemAvailable is MemAvailable of /proc/meminfo in bytes.
func MemAvailable() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// Loadavg is the first three fields of /proc/loadavg.
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
