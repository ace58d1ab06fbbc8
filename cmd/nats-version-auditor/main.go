// Command nats-version-auditor audits the versions of every server in a NATS
// system over $SYS and holds them, and the leaders and peers of every
// JetStream asset, against a version floor.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/natsaudit/nats-version-auditor/auditor"
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
	exitOK      = int(auditor.OK)
	exitUnknown = int(auditor.Unknown)
)

// run parses args, runs the chosen command and returns the process exit code.
// It is the only place that decides exit codes.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := kingpin.New(appName, "Audits the versions of every server in a NATS system, and the leaders and peers of every JetStream asset, against a version floor.")
	app.Version(version.Print(appName))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)

	conn := addConnFlags(app)
	audit := addAuditFlags(app)
	logCfg := &promslog.Config{Writer: stderr}
	promslogflag.AddFlags(app, logCfg)

	check := addCheckCommand(app)
	report := addReportCommand(app)
	serve := addServeCommand(app)
	plan := addPlanCommand(app)

	if len(args) == 0 {
		app.UsageWriter(stderr)
		app.Usage(nil)
		return exitUnknown
	}
	cmd, exited, err := parse(app, args)
	if exited {
		return exitOK // --help or --version printed what was asked
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: error: %v (try --help)\n", appName, err)
		return exitUnknown
	}
	a := auditing{conn: conn, flags: audit, logger: promslog.New(logCfg)}

	var status auditor.Severity
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
