package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

// Scopes of `serve`.
const (
	scopeCluster = "cluster"
	scopeServer  = "server"
)

// shutdownGrace bounds how long SIGTERM waits for responses in flight.
const shutdownGrace = 5 * time.Second

type serveCommand struct {
	cmd            *kingpin.CmdClause
	pol            policyFlags
	floorSet       bool
	pullWatch      time.Duration
	policyFile     string
	web            *web.FlagConfig
	telemetryPath  string
	minInterval    time.Duration
	scope          string
	maxAssetSeries int
	system         string

	events           bool
	eventMinInterval time.Duration
	fullInterval     time.Duration
	fullIntervalSet  bool
}

func addServeCommand(app *kingpin.Application) *serveCommand {
	c := &serveCommand{}
	c.cmd = app.Command("serve", "Run as a Prometheus exporter: audit on scrape, at most once per --audit.min-interval.")
	addFloorFlag(c.cmd, &c.pol).IsSetByUser(&c.floorSet)
	addUnpulledAfterFlag(c.cmd, &c.pol)
	addPullWatchFlag(c.cmd, &c.pullWatch, "Where the system account imports an account's pull requests (docs/pulls.md), listen to them all the time and count a process as a shard's puller for this long after its last pull; the default outlasts a default nats.go Consume's 30s pull expiry; 0: do not listen")
	c.cmd.Flag("policy.file", `YAML or JSON file with the floor as a string (floor: "2.14.0"), read again before every audit; excludes --floor`).
		PlaceHolder("FILE").StringVar(&c.policyFile)
	c.web = kingpinflag.AddFlags(c.cmd, ":7779")
	c.cmd.Flag("web.telemetry-path", "Path under which to expose metrics").Default("/metrics").StringVar(&c.telemetryPath)
	addMinIntervalFlag(c.cmd, serveMinInterval, &c.minInterval)
	c.cmd.Flag("scope", "cluster: audit and export everything; server: a sidecar exporting only what concerns the server it is connected to").
		Default(scopeCluster).EnumVar(&c.scope, scopeCluster, scopeServer)
	c.cmd.Flag("audit.events", "Audit as soon as the servers' $SYS events say a server went away, came back or changed (--no-audit.events: on scrapes only)").
		Default("true").BoolVar(&c.events)
	c.cmd.Flag("audit.event-min-interval", "Least time between the start of any audit and one an event starts; bursts of events share one audit").
		Default("1s").DurationVar(&c.eventMinInterval)
	c.cmd.Flag("audit.full-interval", "A scrape due an audit first asks every server its JetStream counts (one small broadcast) and audits in full only when they changed, "+
		"or when the last full audit is this old or incomplete; where consumers have a priority policy it then reads their accounts again for who pulls them. "+
		"Events and the API's max_age still audit in full. "+
		"0: every audit is full. --scope server: always 0 (docs/exporter.md)").
		Default("5m").IsSetByUser(&c.fullIntervalSet).DurationVar(&c.fullInterval)
	c.cmd.Flag("metrics.max-asset-series", "Most per-asset (stream and consumer) series one scrape exposes").Default(fmt.Sprint(metrics.DefaultMaxAssetSeries)).IntVar(&c.maxAssetSeries)
	c.cmd.Flag("metrics.system", "Name of the NATS system this auditor watches, exported as the label "+metrics.SystemLabel+
		" on every series, so that alerts tell apart systems watched from one namespace (e.g. <nats namespace>/<nats release>)").
		PlaceHolder("NAME").StringVar(&c.system)
	return c
}

// run serves until ctx ends; a bad flag or a web server that cannot listen
// is an error, anything NATS does is not.
func (c *serveCommand) run(ctx context.Context, a auditing) (findings.Severity, error) {
	logger := a.logger
	policy, err := c.policy(logger)
	if err != nil {
		return findings.Unknown, err
	}
	if !strings.HasPrefix(c.telemetryPath, "/") || c.telemetryPath == "/" {
		return findings.Unknown, fmt.Errorf("--web.telemetry-path %q: must start with / and not be /", c.telemetryPath)
	}
	if err := web.Validate(*c.web.WebConfigFile); err != nil {
		return findings.Unknown, fmt.Errorf("--web.config.file: %w", err)
	}
	if err := a.conn.validate(); err != nil {
		return findings.Unknown, err
	}
	if c.fullInterval < 0 {
		return findings.Unknown, fmt.Errorf("--audit.full-interval %s: must be 0 or positive", c.fullInterval)
	}
	if c.scope == scopeServer {
		if c.fullInterval > 0 && c.fullIntervalSet {
			return findings.Unknown, fmt.Errorf("--audit.full-interval %s: only with --scope cluster; a sidecar's audit asks its own server only", c.fullInterval)
		}
		c.fullInterval = 0
	}
	if c.eventMinInterval <= 0 {
		return findings.Unknown, fmt.Errorf("--audit.event-min-interval %s: must be positive", c.eventMinInterval)
	}
	// A natscli context that cannot be loaded is a flag error, as in check.
	if _, err := a.conn.natsContext(); err != nil {
		return findings.Unknown, err
	}
	// Neither a missing credentials file nor an unreachable server stops
	// serve: in a NATS pod that would hold NATS back. Each audit tries again.
	lc := exporter.NewLazyConn(func() (*nats.Conn, error) { return a.conn.connect(true, logger) }, logger)
	defer lc.Close()

	// The one pipeline, with serve's memory of servers gone quiet and its scope.
	p := a.pipeline(policy, lc.ForAudit)
	p.memory, p.connectedOnly = &exporter.Memory{}, c.scope == scopeServer
	if c.pullWatch > 0 {
		p.pulls = exporter.NewPullListener(c.pullWatch, logger)
		defer p.pulls.Stop()
	}
	sched := exporter.NewScheduler(ctx, p.report, c.minInterval, logger)
	if !p.connectedOnly {
		// Leader changes heard between audits apply to the last audit's
		// snapshot; a sidecar's audit, of its own server only, waits for
		// the next audit.
		sched.SetReevaluate(p.reevaluate)
		if c.fullInterval > 0 {
			sched.SetDriftCheck(p.drift, c.fullInterval)
		}
	}
	var eventMetrics []prometheus.Collector
	if c.events {
		// The audits running hear the servers' heartbeats and SHUTDOWNs: a
		// server that came back (or went) while an audit waited for it
		// ends that wait.
		p.options.Events = &collect.Events{}
		// Each connection the LazyConn makes gets its watcher before its
		// first audit runs on it.
		ev := exporter.NewEventWatch(sched, c.eventMinInterval, c.minInterval, p.options.Events, a.conn.who(), logger)
		lc.OnConnect = ev.Attach
		defer ev.Stop()
		eventMetrics = append(eventMetrics, ev.Collector())
	}
	go sched.Get(ctx) // a first audit, so that /readyz turns ready before any scrape

	handler := exporter.NewHandler(sched, exporter.HandlerConfig{Name: appName, TelemetryPath: c.telemetryPath,
		MaxAssetSeries: c.maxAssetSeries, System: c.system}, logger, eventMetrics...)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, c.web, logger) }()

	select {
	case err := <-errc:
		return findings.Unknown, fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown did not finish in time", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return findings.Unknown, fmt.Errorf("web server: %w", err)
	}
	return findings.OK, nil
}

// policy is the policy serve audits against: the --floor flag's, or, with
// --policy.file, the file's as it reads before each audit. --floor and
// --policy.file are exclusive: a floor set in two places is a floor someone
// forgets to change in one of them.
func (c *serveCommand) policy(logger *slog.Logger) (func() (auditor.Policy, error), error) {
	if c.policyFile == "" {
		pol, err := c.pol.policy()
		if err != nil {
			return nil, err
		}
		return func() (auditor.Policy, error) { return pol, nil }, nil
	}
	if c.floorSet {
		return nil, fmt.Errorf("--floor and --policy.file both set: give the floor in one place (the file, to change it without a restart)")
	}
	// The file holds the floor; --unpulled-after holds as given.
	file := exporter.NewPolicyFile(c.policyFile, logger)
	shards := c.pol.shardPolicy()
	return func() (auditor.Policy, error) {
		pol, err := file.Current()
		pol.ShardPolicy = shards
		return pol, err
	}, nil
}
