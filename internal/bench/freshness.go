package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// freshnessConfig is what -freshness measures: how soon /metrics shows a
// server restarted on another version, with serve watching the servers'
// events and as it was before (audits on scrapes only), and how many
// audits a server restarting every second causes.
type freshnessConfig struct {
	auditor  string
	restarts int
	// scrapeInterval and minInterval are what deploy/ ships: the
	// ServiceMonitor's interval and serve's --audit.min-interval.
	scrapeInterval, minInterval time.Duration
	flapFor                     time.Duration
}

const (
	freshnessBegin = "<!-- freshness:begin -->"
	freshnessEnd   = "<!-- freshness:end -->"
	pollEvery      = 50 * time.Millisecond
)

type restartTiming struct {
	fromKill, fromReady time.Duration
}

type flapResult struct {
	restarts, audits, eventAudits int
	elapsed                       time.Duration
	interval                      string
}

func runFreshness(h *natstest.Program, cfg freshnessConfig) string {
	node := func(name, version string) natstest.Spec {
		return natstest.Spec{Name: name, Version: version, Cluster: "fresh", JetStream: true}
	}
	fmt.Fprintf(os.Stderr, "== freshness: a %s/%s/%s cluster; n3 restarts on another version %d times\n",
		natstest.Floor, natstest.Floor, natstest.Old, cfg.restarts)
	sys := natstest.Start(h, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	version := natstest.Old
	next := func() string {
		if version == natstest.Old {
			version = natstest.Floor
		} else {
			version = natstest.Old
		}
		return version
	}

	// The audit's --timeout is the default (5s): after a kill the other
	// servers count the dead server for minutes (STATSZ active_servers,
	// until their orphan sweep), so audits then wait that long.
	timeout := []string{"--timeout", "5s"}
	restartOnce := func(graceful bool) (want string, kill, ready time.Time) {
		want = reported(next())
		kill = time.Now()
		if graceful {
			if err := sys.Stop("n3", 30*time.Second); err != nil {
				h.Fatal(err)
			}
		}
		sys.Restart("n3", "v"+want)
		return want, kill, time.Now()
	}

	// With events: a reader polling /metrics; --audit.min-interval 1h so
	// that no poll audits and only events can refresh it. Graceful
	// restarts first: killed servers leave counts that slow later audits.
	eventsRun := func(graceful bool) []restartTiming {
		fmt.Fprintf(os.Stderr, "   events on, graceful %v: polling /metrics every 50 ms\n", graceful)
		base, stop := startServeArgs(h, cfg.auditor, sys.URL("n1"), append(timeout, "--audit.min-interval", "1h")...)
		defer stop()
		waitFor(h, base, func(m natstest.Metrics) bool {
			return m.Value("nats_version_auditor_events_up") == 1 && m.ServerVersion("n3") == reported(version)
		})
		var ts []restartTiming
		for range cfg.restarts {
			want, kill, ready := restartOnce(graceful)
			shown := waitFor(h, base, func(m natstest.Metrics) bool { return m.ServerVersion("n3") == want })
			ts = append(ts, restartTiming{shown.Sub(kill), shown.Sub(ready)})
			fmt.Fprintf(os.Stderr, "   n3 on %s: shown %s after the stop\n", want, shown.Sub(kill).Round(time.Millisecond))
			time.Sleep(2 * time.Second) // let the restart's other events settle
		}
		return ts
	}
	graceful := eventsRun(true)

	// A server restarting every second (stopped, so that it says goodbye,
	// and started again), with the default rate limit and with almost none.
	var flaps []flapResult
	for _, interval := range []string{"1s", "1ms"} {
		fmt.Fprintf(os.Stderr, "   n3 restarting every second for %s, --audit.event-min-interval %s\n", cfg.flapFor, interval)
		base, stop := startServeArgs(h, cfg.auditor, sys.URL("n1"), append(timeout, "--audit.min-interval", "1h", "--audit.event-min-interval", interval)...)
		waitFor(h, base, func(m natstest.Metrics) bool { return m.Value("nats_version_auditor_events_up") == 1 })
		m0 := scrapeOnce(h, base)
		start := time.Now()
		res := flapResult{interval: interval}
		for tick := start; time.Since(start) < cfg.flapFor; tick = tick.Add(time.Second) {
			time.Sleep(time.Until(tick))
			if err := sys.Stop("n3", 30*time.Second); err != nil {
				h.Fatal(err)
			}
			sys.Restart("n3", "")
			res.restarts++
		}
		m1 := scrapeOnce(h, base)
		res.elapsed = time.Since(start)
		res.audits = int(m1.Value("nats_version_auditor_audits_total") - m0.Value("nats_version_auditor_audits_total"))
		res.eventAudits = int(m1.Value("nats_version_auditor_event_audits_total") - m0.Value("nats_version_auditor_event_audits_total"))
		flaps = append(flaps, res)
		stop()
	}

	events := eventsRun(false)

	// Before: no events; "Prometheus" scrapes every scrapeInterval and is
	// the only reader; a scrape audits when the last audit is older than
	// minInterval. Restarts are spread over the scrape cycle.
	fmt.Fprintf(os.Stderr, "   events off: scraped every %s, --audit.min-interval %s\n", cfg.scrapeInterval, cfg.minInterval)
	base, stop := startServeArgs(h, cfg.auditor, sys.URL("n1"), append(timeout, "--no-audit.events", "--audit.min-interval", cfg.minInterval.String())...)
	waitFor(h, base, func(m natstest.Metrics) bool { return m.ServerVersion("n3") == reported(version) })
	var before []restartTiming
	for i := range cfg.restarts {
		lastScrape := time.Now()
		scrapeOnce(h, base)
		time.Sleep(time.Duration(i) * cfg.scrapeInterval / time.Duration(cfg.restarts))
		want, kill, ready := restartOnce(false)
		for tick := lastScrape.Add(cfg.scrapeInterval); ; tick = tick.Add(cfg.scrapeInterval) {
			time.Sleep(time.Until(tick))
			if scrapeOnce(h, base).ServerVersion("n3") == want {
				shown := time.Now()
				before = append(before, restartTiming{shown.Sub(kill), shown.Sub(ready)})
				fmt.Fprintf(os.Stderr, "   n3 on %s: shown %s after the kill\n", want, shown.Sub(kill).Round(time.Millisecond))
				break
			}
		}
	}
	stop()
	return renderFreshness(cfg, graceful, events, before, flaps)
}

// reported is the version a server built from tag reports: the tag without
// its v.
func reported(tag string) string { return strings.TrimPrefix(tag, "v") }

func renderFreshness(cfg freshnessConfig, graceful, events, before []restartTiming, flaps []flapResult) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	col := func(ts []restartTiming, f func(restartTiming) time.Duration) string {
		var ds []time.Duration
		var all []string
		for _, t := range ts {
			ds = append(ds, f(t))
			all = append(all, fmt.Sprintf("%.1f", f(t).Seconds()))
		}
		return fmt.Sprintf("**%.1f s** (%s)", median(ds).Seconds(), strings.Join(all, ", "))
	}
	stop := func(t restartTiming) time.Duration { return t.fromKill }
	ready := func(t restartTiming) time.Duration { return t.fromReady }
	w("Measured %s on %d cores; servers %s, %s and n3 toggling between %s and %s; "+
		"`--timeout 5s` (the default), `serve` on its other defaults; %d restarts each way.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), natstest.Floor, natstest.Floor, natstest.Old, natstest.Floor, cfg.restarts)
	w("")
	w("| time until `/metrics` shows n3's new version: median (each run, s) | from the stop or kill | from n3 accepting clients again |")
	w("|---|---|---|")
	w("| events on, n3 stopped (SIGTERM) and started | %s | %s |", col(graceful, stop), col(graceful, ready))
	w("| events on, n3 killed and started (`System.Restart`) | %s | %s |", col(events, stop), col(events, ready))
	w("| events off (before): n3 killed and started, scraped every %s, `--audit.min-interval %s` | %s | %s |",
		cfg.scrapeInterval, cfg.minInterval, col(before, stop), col(before, ready))
	w("")
	w("| n3 stopped and started every second | restarts | audits | of them started by events | audits per minute |")
	w("|---|---|---|---|---|")
	for _, f := range flaps {
		w("| `--audit.event-min-interval %s` | %d in %.0f s | %d | %d | **%.0f** |", f.interval, f.restarts, f.elapsed.Seconds(),
			f.audits, f.eventAudits, float64(f.audits)/f.elapsed.Minutes())
	}
	return b.String()
}

func scrapeOnce(h *natstest.Program, base string) natstest.Metrics {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		h.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		h.Fatal(err)
	}
	mfs, err := natstest.ParseMetrics(string(body))
	if err != nil {
		h.Fatal(err)
	}
	return mfs
}

// waitFor polls /metrics until cond holds and returns when it first did.
func waitFor(h *natstest.Program, base string, cond func(natstest.Metrics) bool) time.Time {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if cond(scrapeOnce(h, base)) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			h.Fatalf("/metrics at %s did not show what was waited for within 2 minutes", base)
		}
		time.Sleep(pollEvery)
	}
}

// startServeArgs runs `serve` against url with args and returns its base URL
// and a function that stops it.
func startServeArgs(h *natstest.Program, bin, url string, args ...string) (string, func()) {
	addr := natstest.FreeAddr(h)
	cmd := exec.Command(bin, append(append([]string{"serve", "--web.listen-address", addr}, natstest.SysArgs(url)...), args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		h.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	h.Cleanup(stop)
	base := "http://" + addr
	err := natstest.Eventually(10*time.Second, func() error {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		h.Fatal(err)
	}
	return base, stop
}

// writeBetween replaces what stands between begin and end in a Markdown file.
func writeBetween(path, begin, end, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s markers", path, begin, end)
	}
	doc = doc[:i+len(begin)] + "\n" + text + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
