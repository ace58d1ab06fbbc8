package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A process the bench starts itself reports the bench's peak RSS as its own
// when that is the larger: Go starts a process with vfork, so the memory
// its exec replaces is the bench's, and Linux keeps the peak of the memory
// an exec replaces in the new program's (fs/exec.c exec_mmap:
// setmax_mm_hiwater_rss(&tsk->signal->maxrss, old_mm)). At 100,000
// consumers the bench holds as much as `check` does, and the peak RSS of
// `check` was the larger of the two (TestSpawnReportsItsOwnPeak). So every
// measured process is started by a launcher, this binary again, small: it
// runs the process and writes what it cost to file descriptor 3.

// spawnCost is what one process cost, as the launcher writes it.
type spawnCost struct {
	Wall, CPU time.Duration
	RSS       int64 // bytes
	Exit      int
}

// launcherArgs returns the program and arguments of a launcher's command
// line (`bench -spawn -- PROGRAM ARGS...`), if it is one.
func launcherArgs(args []string) ([]string, bool) {
	if len(args) < 4 || args[1] != "-spawn" || args[2] != "--" {
		return nil, false
	}
	return args[3:], true
}

// spawnMain is the launcher: it runs the program with its own standard
// streams and writes its cost to file descriptor 3.
func spawnMain(args []string) int {
	syscall.CloseOnExec(3) // the program itself does not hold the report open
	out := os.NewFile(3, "cost")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	c := spawnCost{Wall: wall, CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), RSS: ru.Maxrss * 1024, Exit: cmd.ProcessState.ExitCode()}
	if err := json.NewEncoder(out).Encode(c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// spawn runs cmd through a launcher and returns its cost.
func spawn(cmd *exec.Cmd) (spawnCost, error) {
	self, err := os.Executable()
	if err != nil {
		return spawnCost{}, err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return spawnCost{}, err
	}
	defer rd.Close()
	l := exec.Command(self, append([]string{"-spawn", "--", cmd.Path}, cmd.Args[1:]...)...)
	l.Stdin, l.Stdout, l.Stderr, l.Env, l.Dir = cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env, cmd.Dir
	l.ExtraFiles = []*os.File{wr}
	err = l.Start()
	wr.Close()
	if err != nil {
		return spawnCost{}, fmt.Errorf("start the launcher: %w", err)
	}
	var c spawnCost
	decodeErr := json.NewDecoder(rd).Decode(&c)
	if err := l.Wait(); err != nil {
		return spawnCost{}, fmt.Errorf("launcher of %s: %w", cmd.Path, err)
	}
	if decodeErr != nil {
		return spawnCost{}, fmt.Errorf("launcher of %s: no cost reported: %w", cmd.Path, decodeErr)
	}
	return c, nil
}
