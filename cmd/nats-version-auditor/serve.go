package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/natsaudit/nats-version-auditor/auditor"
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
	policyFile     string
	web            *web.FlagConfig
	telemetryPath  string
	minInterval    time.Duration
	scope          string
	maxAssetSeries int
	system         string

	events           bool
	eventMinInterval time.Duration
}

func addServeCommand(app *kingpin.Application) *serveCommand {
	c := &serveCommand{}
	c.cmd = app.Command("serve", "Run as a Prometheus exporter: audit on scrape, at most once per --audit.min-interval.")
	addFloorFlag(c.cmd, &c.pol).IsSetByUser(&c.floorSet)
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
	c.cmd.Flag("metrics.max-asset-series", "Most per-consumer series one scrape exposes").Default(fmt.Sprint(metrics.DefaultMaxAssetSeries)).IntVar(&c.maxAssetSeries)
	c.cmd.Flag("metrics.system", "Name of the NATS system this auditor watches, exported as the label "+metrics.SystemLabel+
		" on every series, so that alerts tell apart systems watched from one namespace (e.g. <nats namespace>/<nats release>)").
		PlaceHolder("NAME").StringVar(&c.system)
	return c
}

// run serves until ctx ends; a bad flag or a web server that cannot listen
// is an error, anything NATS does is not.
func (c *serveCommand) run(ctx context.Context, a auditing) (auditor.Severity, error) {
	logger := a.logger
	pols, err := newPolicySource(&c.pol, c.floorSet, c.policyFile, logger)
	if err != nil {
		return auditor.Unknown, err
	}
	if !strings.HasPrefix(c.telemetryPath, "/") || c.telemetryPath == "/" {
		return auditor.Unknown, fmt.Errorf("--web.telemetry-path %q: must start with / and not be /", c.telemetryPath)
	}
	if err := web.Validate(*c.web.WebConfigFile); err != nil {
		return auditor.Unknown, fmt.Errorf("--web.config.file: %w", err)
	}
	if err := a.conn.validate(); err != nil {
		return auditor.Unknown, err
	}
	if c.eventMinInterval <= 0 {
		return auditor.Unknown, fmt.Errorf("--audit.event-min-interval %s: must be positive", c.eventMinInterval)
	}
	// A natscli context that cannot be loaded is a flag error, as in check.
	if _, err := a.conn.natsContext(); err != nil {
		return auditor.Unknown, err
	}
	// Neither a missing credentials file nor an unreachable server stops
	// serve: in a NATS pod that would hold NATS back. Each audit tries again.
	lc := newLazyConn(a.conn, logger)
	defer lc.Close()

	// The one pipeline, with serve's memory of servers gone quiet and its scope.
	p := a.pipeline(pols.Current, lc.forAudit)
	p.memory, p.connectedOnly = &auditor.Memory{}, c.scope == scopeServer
	sched := auditor.NewScheduler(ctx, p.report, c.minInterval, logger)
	var eventMetrics []prometheus.Collector
	if c.events {
		// The audits running hear the servers' heartbeats and SHUTDOWNs: a
		// server that came back (or went) while an audit waited for it
		// ends that wait.
		p.options.Events = &auditor.Events{}
		// Each connection lazyConn makes gets its watcher before its first
		// audit runs on it.
		ev := newServeEvents(sched, c.eventMinInterval, p.options.Events, logger)
		lc.onConnect = ev.attach
		defer ev.stop()
		eventMetrics = append(eventMetrics, ev.collector())
	}
	go sched.Get(ctx) // a first audit, so that /readyz turns ready before any scrape

	srv := &http.Server{Handler: c.handler(sched, logger, eventMetrics...), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, c.web, logger) }()

	select {
	case err := <-errc:
		return auditor.Unknown, fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("shutdown did not finish in time", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return auditor.Unknown, fmt.Errorf("web server: %w", err)
	}
	return auditor.OK, nil
}

// handler serves the metrics (the report's, the process's and more), the
// health endpoints, the JSON API and the landing page.
func (c *serveCommand) handler(sched *auditor.Scheduler, logger *slog.Logger, more ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	sysReg := metrics.WithSystem(reg, c.system)
	sysReg.MustRegister(
		metrics.NewCollector(sched.Latest, c.maxAssetSeries),
		versioncollector.NewCollector("nats_version_auditor"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	sysReg.MustRegister(more...)
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)})

	mux := http.NewServeMux()
	mux.Handle(c.telemetryPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scrape waits for a fresh audit (or the one already running)
		// unless the last one is younger than --audit.min-interval.
		sched.Get(r.Context())
		metricsHandler.ServeHTTP(w, r)
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// Readiness is "this process can answer": once the first audit has
	// finished, whatever it found, /metrics and the API answer from it. A
	// rolling upgrade of NATS leaves audits incomplete exactly when
	// applications ask whether a RESET is safe, so completeness stays in the
	// answers (complete: false, reset: unknown), the metrics and the alerts,
	// never in the Service's endpoints.
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if sched.Latest().Report == nil {
			http.Error(w, "no audit has finished yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	// For scripts and people, not for probes: whether the last audit saw
	// every expected server and read every reply.
	mux.HandleFunc("/completez", func(w http.ResponseWriter, _ *http.Request) {
		res := sched.Latest()
		if res.Report == nil || !complete(res.Report) {
			http.Error(w, "the last audit did not complete", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	registerAPI(mux, sched, logger)
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        appName,
		Description: "Audits the versions of every NATS server, and the leaders and peers of every JetStream asset, against a version floor.",
		Version:     version.Info(),
		Links: []web.LandingLinks{
			{Address: c.telemetryPath, Text: "Metrics"},
			{Address: "/healthz", Text: "Liveness"},
			{Address: "/readyz", Text: "Readiness (an audit has finished)"},
			{Address: "/completez", Text: "Last audit complete (not for probes)"},
			{Address: "/api/v1/report", Text: "The last report (JSON API)"},
		},
	})
	if err != nil {
		logger.Error("landing page", "err", err)
	} else if c.telemetryPath != "/" {
		mux.Handle("/", landing)
	}
	return mux
}
