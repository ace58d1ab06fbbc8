package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// What continuous auditing costs the servers: `serve` scraped every 15 s,
// as today's design (every audit full: --audit.full-interval 0) and on its
// defaults (a check of every server's counts between full audits), at each
// size. The servers' CPU is taken around each scrape, less what they spend
// anyway at that moment (their rate between scrapes), so that the idle
// cost of a large cluster, which is noisy, is not counted as the
// auditor's; the bytes are what the server serve connects to sent it
// (CONNZ), which every other server's replies pass through.

const (
	continuousBegin = "<!-- continuous:begin -->"
	continuousEnd   = "<!-- continuous:end -->"
	// The table of the same run with shards: consumers with a priority
	// policy, which the defaults' checks read again.
	continuousShardsBegin = "<!-- continuous-shards:begin -->"
	continuousShardsEnd   = "<!-- continuous-shards:end -->"
	// shardAccount holds the shards, in an account of their own.
	shardAccount = "ACC0005"
	// continuousName is serve's connection name, to find it in CONNZ.
	continuousName = "nva-bench-continuous"
)

type continuousConfig struct {
	auditor string
	// scrapeEvery is Prometheus's scrape interval; todayScrapes how many
	// scrapes today's design is measured over (its cost repeats every
	// two); the defaults are measured over one whole cycle, from a full
	// audit to the next that --audit.full-interval starts.
	scrapeEvery  time.Duration
	todayScrapes int
	// maxCycle bounds the cycle's scrapes, in case no full audit comes.
	maxCycle int
	// fullInterval, if not empty, is given to the defaults' serve.
	fullInterval string
	// shards, if above 0, is how many R1 pinned_client consumers the
	// cluster holds besides, in shardAccount; the create that newSeen
	// measures is then left out.
	shards int
}

// blocks are where the table goes in BENCHMARKS.md.
func (cfg continuousConfig) blocks() (begin, end string) {
	if cfg.shards > 0 {
		return continuousShardsBegin, continuousShardsEnd
	}
	return continuousBegin, continuousEnd
}

// serveWindow is what one serve cost the servers over its scrapes.
type serveWindow struct {
	scrapes int
	dur     time.Duration // scrapes × scrapeEvery
	// serverCPU is the servers' CPU over the scrapes, less their rate
	// between scrapes; perScrape is each scrape's.
	serverCPU time.Duration
	perScrape []time.Duration
	// gapRate is the servers' CPU per second between scrapes.
	gapRate float64
	// audits and checks serve ran in the window (its counters).
	audits, checks int
	// fullCPU and checkCPU are the servers' CPU, less their rate, of the
	// scrapes that ran a full audit and of those that ran a check.
	fullCPU, checkCPU []time.Duration
	outBytes, outMsgs int64
}

// perHour scales x, an amount over the window, to an hour.
func (w serveWindow) perHour(x float64) float64 {
	return x * float64(time.Hour) / float64(w.dur)
}

func (w serveWindow) cpuPerHour() float64   { return w.perHour(w.serverCPU.Seconds()) }
func (w serveWindow) bytesPerHour() float64 { return w.perHour(float64(w.outBytes)) }

type continuousResult struct {
	consumers int
	skipped   string
	idleRate  float64 // the servers' CPU per second with no auditor
	today     serveWindow
	defaults  serveWindow
	// newSeen is how long after its create an R1 consumer was in the API,
	// on serve's defaults, with scrapes every 15 s.
	newSeen time.Duration
}

func runContinuous(h *natstest.Program, sizes []int, cfg continuousConfig) string {
	var results []continuousResult
	for _, n := range sizes {
		if ok, why := memoryFor(n); !ok {
			fmt.Fprintf(os.Stderr, "== %d consumers: %s\n", n, why)
			results = append(results, continuousResult{consumers: n, skipped: why})
			continue
		}
		results = append(results, continuousAt(h, n, cfg))
		h.RunCleanups() // one cluster at a time
	}
	return renderContinuous(cfg, results)
}

func continuousAt(h *natstest.Program, consumers int, cfg continuousConfig) continuousResult {
	fmt.Fprintf(os.Stderr, "== %d consumers, continuous: starting a %s/%s/%s cluster\n", consumers, natstest.Floor, natstest.New, natstest.Old)
	node := func(name, version string) natstest.Spec {
		// One account more than populate fills: shardAccount.
		return natstest.Spec{Name: name, Version: version, Cluster: "bench", JetStream: true, ExtraAccounts: len(accounts)}
	}
	sys := natstest.Start(h, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old))
	// Every stream and consumer R1: the raft heartbeats of thousands of
	// R3 consumers keep two shared cores busy at rest (at 100,000, 158%
	// of one core measured with the main table's one R3 stream in 20),
	// and an audit's CPU cannot be told from theirs.
	populate(h, sys, consumers, 0, &sizeResult{})
	if cfg.shards > 0 {
		addBenchShards(h, sys, cfg.shards)
	}
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	ids := serverIDs(h, sysConn)
	res := continuousResult{consumers: consumers}

	fmt.Fprintf(os.Stderr, "   no auditor for %s\n", time.Duration(cfg.todayScrapes)*cfg.scrapeEvery)
	t0, c0 := time.Now(), serversCPU(sys)
	time.Sleep(time.Duration(cfg.todayScrapes) * cfg.scrapeEvery)
	res.idleRate = (serversCPU(sys) - c0).Seconds() / time.Since(t0).Seconds()

	fmt.Fprintf(os.Stderr, "   serve --audit.full-interval 0, %d scrapes\n", cfg.todayScrapes)
	res.today = serveScrapes(h, sys, sysConn, ids, cfg, []string{"--audit.full-interval", "0"}, func(_ natstest.Metrics, i int) bool { return i >= cfg.todayScrapes }, nil)
	fmt.Fprintf(os.Stderr, "   serve on its defaults, until --audit.full-interval starts a full audit\n")
	var args []string
	if cfg.fullInterval != "" {
		args = []string{"--audit.full-interval", cfg.fullInterval}
	}
	res.defaults = serveScrapes(h, sys, sysConn, ids, cfg, args, func(m natstest.Metrics, i int) bool {
		if i >= cfg.maxCycle {
			h.Fatalf("no full audit in %d scrapes on serve's defaults", i)
		}
		return startedFor(m, "full_interval") > 0
	}, func(base string, next time.Time) {
		if cfg.shards == 0 {
			res.newSeen = newConsumerSeen(h, sys, base, next, cfg.scrapeEvery)
		}
	})
	return res
}

// addBenchShards creates n R1 shards of one stream in shardAccount, as
// natstest.AddShards makes them, and publishes one message to each: pulled
// by nobody, each is a finding, and its leader's record is what a check
// reads again.
func addBenchShards(h *natstest.Program, sys *natstest.System, n int) {
	u, p := credentials(shardAccount)
	nc := sys.Connect("n1", u, p)
	defer nc.Close()
	if err := natstest.AddStream(nc, server.StreamConfig{Name: "SHARDS", Subjects: []string{"shards.>"}, Storage: server.FileStorage}); err != nil {
		h.Fatal(err)
	}
	if _, err := natstest.AddShards(nc, "SHARDS", "shards", n, 1, time.Minute); err != nil {
		h.Fatal(err)
	}
	for i := range n {
		if _, err := natstest.Publish(nc, fmt.Sprintf("shards.%d", i), []byte("job"), 10*time.Second); err != nil {
			h.Fatal(err)
		}
	}
}

// newConsumerSeen creates an R1 consumer at a random moment between two
// scrapes, the first due at next, and scrapes on until the API has it:
// how long a create goes unseen where only the checks can see it (the
// bench's accounts do not export their asset advisories).
func newConsumerSeen(h *natstest.Program, sys *natstest.System, base string, next time.Time, every time.Duration) time.Duration {
	nc := sys.Connect("n1", "acc0001", "acc")
	defer nc.Close()
	time.Sleep(time.Until(next.Add(-time.Duration(rand.Int64N(int64(every))))))
	cfg := server.ConsumerConfig{Durable: "NEWCOMER", AckPolicy: server.AckExplicit}
	if err := natstest.AddConsumer(nc, "S0001", cfg); err != nil {
		h.Fatal(err)
	}
	created := time.Now()
	for deadline := created.Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if !time.Now().Before(next) {
			scrape(h, base)
			next = next.Add(every)
		}
		resp, err := http.Get(base + "/api/v1/consumers/ACC0001/S0001/NEWCOMER")
		if err != nil {
			h.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return time.Since(created)
		}
	}
	h.Fatalf("a consumer created was not in serve's API within 5 minutes")
	return 0
}

func startedFor(m natstest.Metrics, reason string) float64 {
	for _, s := range m["nats_version_auditor_audits_started_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == reason {
				return s.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// serveScrapes starts serve with args, waits for its first audit, then
// scrapes it every cfg.scrapeEvery until done says so after a scrape (the
// scrapes so far, and its metrics). With after, it then calls after with
// serve's base URL and the time of the next scrape due.
func serveScrapes(h *natstest.Program, sys *natstest.System, sysConn *nats.Conn, ids []string, cfg continuousConfig, args []string,
	done func(natstest.Metrics, int) bool, after func(base string, next time.Time)) serveWindow {
	base, stop := startServeArgs(h, cfg.auditor, sys.URL("n1"), append([]string{"--connection-name", continuousName, "--timeout", "30s"}, args...)...)
	defer stop()
	first := waitFor(h, base, func(m natstest.Metrics) bool { return m.Value("nats_version_auditor_audits_total") >= 1 })
	before := scrapeOnce(h, base)
	conn0 := continuousConn(h, sysConn, ids)
	var w serveWindow
	var gapCPU time.Duration
	var gapTime time.Duration
	type scrapeCost struct {
		cpu, wall      time.Duration
		audits, checks float64
	}
	var costs []scrapeCost
	last := before
	next := first.Add(cfg.scrapeEvery)
	prevEnd, prevCPU := time.Now(), serversCPU(sys)
	for i := 1; ; i++ {
		time.Sleep(time.Until(next))
		next = next.Add(cfg.scrapeEvery)
		t0, c0 := time.Now(), serversCPU(sys)
		gapCPU += c0 - prevCPU
		gapTime += t0.Sub(prevEnd)
		_, body := scrape(h, base)
		t1, c1 := time.Now(), serversCPU(sys)
		prevEnd, prevCPU = t1, c1
		m, err := natstest.ParseMetrics(body)
		if err != nil {
			h.Fatal(err)
		}
		costs = append(costs, scrapeCost{cpu: c1 - c0, wall: t1.Sub(t0),
			audits: m.Value("nats_version_auditor_audits_total") - last.Value("nats_version_auditor_audits_total"),
			checks: m.Value("nats_version_auditor_audit_checks_total") - last.Value("nats_version_auditor_audit_checks_total")})
		last = m
		if done(m, i) {
			w.scrapes = i
			break
		}
	}
	conn1 := continuousConn(h, sysConn, ids)
	if after != nil {
		after(base, next)
	}
	w.dur = time.Duration(w.scrapes) * cfg.scrapeEvery
	w.gapRate = gapCPU.Seconds() / gapTime.Seconds()
	for _, c := range costs {
		own := c.cpu - time.Duration(w.gapRate*float64(c.wall))
		w.perScrape = append(w.perScrape, own)
		w.serverCPU += own
		switch {
		case c.audits > 0:
			w.fullCPU = append(w.fullCPU, own)
		case c.checks > 0:
			w.checkCPU = append(w.checkCPU, own)
		}
	}
	w.audits = int(last.Value("nats_version_auditor_audits_total") - before.Value("nats_version_auditor_audits_total"))
	w.checks = int(last.Value("nats_version_auditor_audit_checks_total") - before.Value("nats_version_auditor_audit_checks_total"))
	w.outBytes, w.outMsgs = conn1.OutBytes-conn0.OutBytes, conn1.OutMsgs-conn0.OutMsgs
	return w
}

// continuousConn is serve's connection as the server of ids that holds it
// lists it.
func continuousConn(h *natstest.Program, nc *nats.Conn, ids []string) server.ConnInfo {
	body, _ := json.Marshal(server.ConnzEventOptions{ConnzOptions: server.ConnzOptions{Account: "SYS", Limit: 1024}})
	for _, id := range ids {
		msg, err := nc.Request("$SYS.REQ.SERVER."+id+".CONNZ", body, 10*time.Second)
		if err != nil {
			h.Fatal(err)
		}
		var resp server.ServerAPIConnzResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Data == nil {
			h.Fatalf("CONNZ of %s: %v %s", id, err, msg.Data)
		}
		for _, c := range resp.Data.Conns {
			if c.Name == continuousName {
				return *c
			}
		}
	}
	h.Fatalf("no server lists a connection named %s", continuousName)
	return server.ConnInfo{}
}

func renderContinuous(cfg continuousConfig, results []continuousResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %d cores, %.0f GiB; servers %s, %s, %s (one each); `serve` scraped every %s. ",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), float64(totalMemory())/(1<<30), natstest.Floor, natstest.New, natstest.Old, cfg.scrapeEvery)
	b.WriteString("The servers' CPU is taken around each scrape, less their own rate between scrapes; per hour is the window's cost scaled to an hour. ")
	b.WriteString("Every stream and consumer R1 (see continuous.go). ")
	if cfg.shards > 0 {
		fmt.Fprintf(&b, "Besides the consumers counted, %d shards (pinned_client consumers) in an account of their own: a check finds no change, then reads that account's JSZ again. ", cfg.shards)
	}
	b.WriteString("Today's design: `serve --audit.full-interval 0`. Defaults: `serve` as shipped")
	if cfg.fullInterval != "" {
		fmt.Fprintf(&b, " but `--audit.full-interval %s`", cfg.fullInterval)
	}
	b.WriteString(", measured over one cycle from a full audit to the next.\n\n")
	b.WriteString("| measure |")
	for _, r := range results {
		fmt.Fprintf(&b, " %d consumers |", r.consumers)
	}
	b.WriteString("\n|---|")
	for range results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(name string, f func(continuousResult) string) {
		b.WriteString("| " + name + " |")
		for _, r := range results {
			if r.skipped != "" {
				b.WriteString(" skipped: " + r.skipped + " |")
				continue
			}
			b.WriteString(" " + f(r) + " |")
		}
		b.WriteString("\n")
	}
	pct := func(cpuPerHour float64) string { return fmt.Sprintf("%.2f%%", cpuPerHour/3600*100) }
	cpuHour := func(w serveWindow) string { h := w.cpuPerHour(); return fmt.Sprintf("%.1f CPU-s (%s)", h, pct(h)) }
	row("servers' CPU with no auditor (all three, % of one core)", func(r continuousResult) string { return fmt.Sprintf("%.1f%%", r.idleRate*100) })
	row("today: scrapes, full audits in the window", func(r continuousResult) string {
		return fmt.Sprintf("%d, %d", r.today.scrapes, r.today.audits)
	})
	row("today: servers' CPU per full audit, median", func(r continuousResult) string { return ms(median(r.today.fullCPU)) })
	row("**today: servers' CPU per hour** (% of one core)", func(r continuousResult) string { return cpuHour(r.today) })
	row("today: sent to serve per hour", func(r continuousResult) string {
		return fmt.Sprintf("%.1f MB", r.today.bytesPerHour()/1e6)
	})
	// The reference: a full audit at every scrape, which today's
	// design runs only when --audit.min-interval is shorter than the
	// scrape interval (at equal intervals a scrape finds the last audit
	// younger than the interval, every other time).
	perScrape := func(r continuousResult) (cpu, bytes float64) {
		scrapes := float64(time.Hour / cfg.scrapeEvery)
		return median(r.today.fullCPU).Seconds() * scrapes, float64(r.today.outBytes) / float64(max(r.today.audits, 1)) * scrapes
	}
	row("a full audit at every scrape: servers' CPU per hour (% of one core), sent per hour", func(r continuousResult) string {
		cpu, bytes := perScrape(r)
		return fmt.Sprintf("%.1f CPU-s (%s), %.1f MB", cpu, pct(cpu), bytes/1e6)
	})
	row("defaults: scrapes in the cycle: checks, full audits", func(r continuousResult) string {
		return fmt.Sprintf("%d: %d, %d", r.defaults.scrapes, r.defaults.checks, r.defaults.audits)
	})
	row("defaults: servers' CPU per check, median", func(r continuousResult) string { return msTenth(median(r.defaults.checkCPU)) })
	row("defaults: servers' CPU per full audit", func(r continuousResult) string { return ms(median(r.defaults.fullCPU)) })
	row("**defaults: servers' CPU per hour** (% of one core)", func(r continuousResult) string { return cpuHour(r.defaults) })
	row("defaults: sent to serve per hour", func(r continuousResult) string {
		return fmt.Sprintf("%.1f MB", r.defaults.bytesPerHour()/1e6)
	})
	row("**defaults / today**: servers' CPU, bytes", func(r continuousResult) string {
		return fmt.Sprintf("%.3f, %.3f", r.defaults.cpuPerHour()/r.today.cpuPerHour(), r.defaults.bytesPerHour()/r.today.bytesPerHour())
	})
	row("**defaults / a full audit at every scrape**: servers' CPU, bytes", func(r continuousResult) string {
		cpu, bytes := perScrape(r)
		return fmt.Sprintf("%.3f, %.3f", r.defaults.cpuPerHour()/cpu, r.defaults.bytesPerHour()/bytes)
	})
	if cfg.shards == 0 {
		row("defaults: an R1 consumer created at a random moment, in the API after", func(r continuousResult) string { return fmt.Sprintf("%.1f s", r.newSeen.Seconds()) })
	}
	row("servers' CPU between scrapes, serve listening: today, defaults", func(r continuousResult) string {
		return fmt.Sprintf("%.1f%%, %.1f%%", r.today.gapRate*100, r.defaults.gapRate*100)
	})
	row("every scrape's servers' CPU in the cycle, in order", func(r continuousResult) string {
		var s []string
		for _, d := range r.defaults.perScrape {
			s = append(s, fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)))
		}
		return strings.Join(s, " ") + " ms"
	})
	return b.String()
}
