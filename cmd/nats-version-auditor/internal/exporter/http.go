package exporter

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/natsaudit/nats-version-auditor/metrics"
)

// HandlerConfig says what the exporter's HTTP handler serves.
type HandlerConfig struct {
	// Name is the program's name, the landing page's title.
	Name string
	// TelemetryPath is where the metrics are (--web.telemetry-path).
	TelemetryPath string
	// MaxAssetSeries bounds the per-asset series of one scrape.
	MaxAssetSeries int
	// System is exported as the label metrics.SystemLabel on every series.
	System string
}

// NewHandler serves the metrics (the report's, the process's and more),
// the health endpoints, the JSON API and the landing page, all from sched.
func NewHandler(sched *Scheduler, cfg HandlerConfig, logger *slog.Logger, more ...prometheus.Collector) http.Handler {
	reg := prometheus.NewRegistry()
	sysReg := metrics.WithSystem(reg, cfg.System)
	sysReg.MustRegister(
		metrics.NewCollector(sched.Latest, cfg.MaxAssetSeries),
		versioncollector.NewCollector("nats_version_auditor"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	sysReg.MustRegister(more...)
	metricsHandler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)})

	mux := http.NewServeMux()
	mux.Handle(cfg.TelemetryPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		Name:        cfg.Name,
		Description: "Audits the versions of every NATS server, and the leaders and peers of every JetStream asset, against a version floor.",
		Version:     version.Info(),
		Links: []web.LandingLinks{
			{Address: cfg.TelemetryPath, Text: "Metrics"},
			{Address: "/healthz", Text: "Liveness"},
			{Address: "/readyz", Text: "Readiness (an audit has finished)"},
			{Address: "/completez", Text: "Last audit complete (not for probes)"},
			{Address: "/api/v1/report", Text: "The last report (JSON API)"},
		},
	})
	if err != nil {
		logger.Error("landing page", "err", err)
	} else if cfg.TelemetryPath != "/" {
		mux.Handle("/", landing)
	}
	return mux
}
