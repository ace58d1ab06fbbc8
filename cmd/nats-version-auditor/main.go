// Command nats-version-auditor audits the versions of every server in a NATS
// system over $SYS and holds them, and the leaders and peers of every
// JetStream asset, against a version floor.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

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

// Exit codes follow the Nagios plugin convention.
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
	logCfg := &promslog.Config{Writer: stderr}
	promslogflag.AddFlags(app, logCfg)

	check := addCheckCommand(app)
	report := addReportCommand(app)
	serve := addServeCommand(app)

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
	logger := promslog.New(logCfg)

	switch cmd {
	case check.cmd.FullCommand():
		return check.run(ctx, conn, logger, stdout, stderr)
	case report.cmd.FullCommand():
		return report.run(ctx, conn, logger, stdout, stderr)
	case serve.cmd.FullCommand():
		return serve.run(ctx, conn, logger, stderr)
	}
	fmt.Fprintf(stderr, "%s: error: unknown command %q\n", appName, cmd)
	return exitUnknown
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
	return cmd, false, err
}

// fail prints one line naming the problem and returns the UNKNOWN exit code.
func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: error: %v\n", appName, err)
	return exitUnknown
}

// audit connects, collects and evaluates one audit.
func audit(ctx context.Context, conn *connFlags, pol auditor.Policy, logger *slog.Logger) (*auditor.Report, error) {
	nc, err := conn.connect(false, logger)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	snap, err := auditor.Collect(ctx, nc, conn.auditOptions(logger))
	if err != nil {
		if errors.Is(err, auditor.ErrNotSystemAccount) {
			return nil, fmt.Errorf("not a system account user: %w", err)
		}
		return nil, fmt.Errorf("audit: %w", err)
	}
	r := auditor.Evaluate(snap, pol)
	logger.Debug("audit evaluated", "servers", len(snap.Servers), "consumers", len(snap.Consumers),
		"findings", len(r.Findings), "collect", snap.Duration, "evaluate", time.Since(snap.Started)-snap.Duration)
	return r, nil
}
