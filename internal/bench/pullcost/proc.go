package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The little of /proc the bench reads: a process's CPU (utime + stime of
// /proc/PID/stat, which include its threads that ended) and memory
// (VmRSS, VmHWM of /proc/PID/status), and the machine's busy time
// (/proc/stat). Times in /proc are in clock ticks: USER_HZ, 100 on Linux
// whatever the kernel's own HZ (proc(5)).

const tick = 10 * time.Millisecond

// procCPU is the CPU time (user + system) the process pid has used so far;
// 0 when pid is 0 or gone.
func procCPU(pid int) time.Duration {
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

// procMem is the resident set of pid now and its peak, in bytes; 0 when
// pid is 0 or gone.
func procMem(pid int) (rss, hwm int64) {
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

// machineBusy is the CPU time every core of the machine has spent on
// anything but idling and waiting for I/O so far (the "cpu" line of
// /proc/stat: user, nice, system, irq, softirq, steal).
func machineBusy() time.Duration {
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

// loadavg is the first three fields of /proc/loadavg.
func loadavg() string {
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
