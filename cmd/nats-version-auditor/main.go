// Command nats-version-auditor audits the versions of every server in a NATS
// system over $SYS and holds them, and the leaders and peers of every
// JetStream asset, against a version floor.
//
// Files: main.go, main and run, which alone turns an outcome into an exit
// code; one file per command, check.go, report.go, plan.go and serve.go, with
// check_wait.go (--accept and --wait) and check_exporter.go (--exporter: a
// gate that asks a running serve); audit.go, the audit pipeline every command runs; connect.go, the
// connection flags, the natscli context and the classifier of failures;
// flags.go, the audit's own flags, the floor, the asset filters and
// --assume; typed.go, what a failed run prints of the flags as typed;
// version.go, --version and the build's release and commit.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"syscall"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes follow the Nagios plugin convention: a command returns the
// status to exit with, or an error for UNKNOWN.
const (
	exitOK      = int(findings.OK)
	exitUnknown = int(findings.Unknown)
)

// cli is the application and what its flags and commands parse into.
type cli struct {
	app    *kingpin.Application
	conn   *connFlags
	audit  *auditFlags
	logCfg *promslog.Config
	check  *checkCommand
	report *reportCommand
	serve  *serveCommand
	plan   *planCommand
}

// newCLI declares every flag and command; usage goes to stdout, parse
// errors to stderr.
func newCLI(stdout, stderr io.Writer) *cli {
	app := kingpin.New(appName, "Audits the versions of every server in a NATS system, and the leaders and peers of every JetStream asset, against a version floor.")
	app.Version(versionText())
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	c := &cli{app: app, conn: addConnFlags(app), audit: addAuditFlags(app), logCfg: &promslog.Config{Writer: stderr}}
	promslogflag.AddFlags(app, c.logCfg)
	c.check = addCheckCommand(app)
	c.report = addReportCommand(app)
	c.serve = addServeCommand(app)
	c.plan = addPlanCommand(app)
	return c
}

// run parses args, runs the chosen command and returns the process exit code.
// It is the only place that decides exit codes.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCLI(stdout, stderr)
	app, check, report, serve, plan := c.app, c.check, c.report, c.serve, c.plan
	if len(args) == 0 {
		app.UsageWriter(stderr)
		app.Usage(nil)
		return exitUnknown
	}
	started := time.Now()
	cmd, exited, err := parse(app, args)
	if exited {
		return exitOK // --help or --version printed what was asked
	}
	if err != nil {
		// A flag the parser refused still gets the one document of the
		// format asked for, as any other failure does.
		switch typedCommand(app, args, check.cmd) {
		case check.cmd.FullCommand():
			check.failed(stdout, err, started)
		case report.cmd.FullCommand():
			report.failed(stdout, err, started)
		case plan.cmd.FullCommand():
			plan.failed(stdout, err, started)
		}
		fmt.Fprintf(stderr, "%s: error: %v (try --help)\n", appName, err)
		return exitUnknown
	}
	a := auditing{conn: c.conn, flags: c.audit, logger: promslog.New(c.logCfg)}

	var status findings.Severity
	switch cmd {
	case check.cmd.FullCommand():
		if check.wait.wait == 0 {
			oneAuditHeap()
		}
		status, err = check.run(ctx, a, stdout, stderr)
	case report.cmd.FullCommand():
		oneAuditHeap()
		status, err = report.run(ctx, a, stdout)
	case plan.cmd.FullCommand():
		oneAuditHeap()
		status, err = plan.run(ctx, a, stdout)
	case serve.cmd.FullCommand():
		status, err = serve.run(ctx, a)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return int(status)
}

// terminated is what parse's Terminate hook panics with: kingpin expects
// --help and --version to end the process, and only run may decide that.
type terminated struct{}

// parse runs app.Parse and reports whether kingpin asked to terminate.
func parse(app *kingpin.Application, args []string) (cmd string, exited bool, err error) {
	app.Terminate(func(int) { panic(terminated{}) })
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(terminated); !ok {
				panic(r)
			}
			exited = true
		}
	}()
	cmd, err = app.Parse(args)
	if err != nil {
		err = nameFlag(app, args, err)
	}
	return cmd, false, err
}

// nameFlag puts the flag and its value in front of err when a flag's value
// is what kingpin refused: its own message names only the value
// (`time: invalid duration "abc"`). The flags are set again in order, as
// kingpin set them; the first that fails is the one it stopped at. (The
// parse has failed: what the values hold afterwards is not used.)
func nameFlag(app *kingpin.Application, args []string, err error) error {
	pc, perr := app.ParseContext(args)
	if perr != nil {
		return err
	}
	for _, el := range pc.Elements {
		f, ok := el.Clause.(*kingpin.FlagClause)
		if !ok || el.Value == nil {
			continue
		}
		if m := f.Model(); m.Value.Set(*el.Value) != nil {
			return fmt.Errorf("--%s %s: %w", m.Name, *el.Value, err)
		}
	}
	// Not a value on the command line: one from a flag's environment
	// variable (NATS_TIMEOUT=abc).
	m := app.Model()
	flags := m.Flags
	for _, c := range m.Commands {
		flags = append(flags, c.Flags...)
	}
	for _, f := range flags {
		if v, ok := os.LookupEnv(f.Envar); ok && f.Envar != "" && f.Value.Set(v) != nil {
			return fmt.Errorf("%s=%s (--%s): %w", f.Envar, v, f.Name, err)
		}
	}
	return err
}

// fail prints one line naming the problem and returns the UNKNOWN exit code.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: error: %v\n", appName, err)
	return exitUnknown
}

// oneAuditHeapFloor is how large the heap of a command that audits once
// may grow before its first collection. An audit's garbage is mostly reply
// bytes read once: the audit of a large system stays below it and needs no
// collection at all (BENCHMARKS.md has the figures).
const oneAuditHeapFloor = 64 << 20

// oneAuditHeap sets the collector of a process that audits once and exits
// (check without --wait, report, plan): nothing is collected until the
// runtime's memory reaches oneAuditHeapFloor, and from then on at twice the
// live heap, as GOGC=100 would. The default collects from 4 MiB on, several
// times over an audit whose garbage the exit frees anyway. GOGC or
// GOMEMLIMIT in the environment is the operator's choice, and then nothing
// is changed. It is process-wide, and set once (run runs many times in the
// tests' process).
func oneAuditHeap() {
	heapOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneAuditHeapFloor)
		followLiveHeap(oneAuditHeapFloor)
	})
}

var heapOnce sync.Once

// followLiveHeap raises the memory limit after each collection to twice
// the heap it found live (never below floor): a live heap above the floor
// would otherwise be collected again and again.
func followLiveHeap(floor int64) {
	// A finalizer runs after the collection that found its object
	// unreachable; one of more than 16 bytes, so that it is not in a tiny
	// block that something else keeps alive.
	sentinel := new([32]byte)
	runtime.SetFinalizer(sentinel, func(*[32]byte) {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live := sample[0].Value.Uint64()
			debug.SetMemoryLimit(max(floor, int64(min(live, math.MaxInt64/2))*2))
		}
		followLiveHeap(floor)
	})
}
