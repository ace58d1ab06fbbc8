package natstest

import (
	"fmt"
	"os"
)

// Program runs the harness outside a test (the demo, the benchmarks): Fatal
// prints and unwinds to Recover, and cleanups run at Cleanup.
type Program struct {
	cleanups []func()
	dirs     []string
	failed   bool
}

type fatal struct{}

// Helper does nothing: there is no test to attribute lines to.
func (p *Program) Helper() {}

// Logf prints to stderr.
func (p *Program) Logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// Fatal prints and unwinds to Recover.
func (p *Program) Fatal(a ...any) {
	p.failed = true
	fmt.Fprintln(os.Stderr, a...)
	panic(fatal{})
}

// Fatalf is Fatal with a format.
func (p *Program) Fatalf(format string, a ...any) { p.Fatal(fmt.Sprintf(format, a...)) }

// Failed reports whether Fatal was called.
func (p *Program) Failed() bool { return p.failed }

// Cleanup registers f to run at RunCleanups.
func (p *Program) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

// TempDir makes a directory removed at RunCleanups.
func (p *Program) TempDir() string {
	d, err := os.MkdirTemp("", "natstest-")
	if err != nil {
		p.Fatal(err)
	}
	p.dirs = append(p.dirs, d)
	return d
}

// RunCleanups runs the registered cleanups, last first, and removes the
// temporary directories.
func (p *Program) RunCleanups() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	p.cleanups = nil
	for _, d := range p.dirs {
		os.RemoveAll(d)
	}
	p.dirs = nil
}

// Run calls f, turning a Fatal inside it into exit code 1.
func (p *Program) Run(f func() int) (code int) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatal); !ok {
				panic(r)
			}
			code = 1
		}
	}()
	return f()
}
