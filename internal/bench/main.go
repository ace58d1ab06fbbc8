// Command bench measures an audit against the limit the servers set, side by
// side in one run, on a real 3-server mixed-version cluster on loopback. It
// is run by `make bench` and writes its table into BENCHMARKS.md.
//
// Files: main.go, the command and the table; cost.go, an audit's CPU and
// memory, the auditor's and the servers'; freshness.go, how soon /metrics
// shows a restarted server; continuous.go, what serve scraped every 15 s
// costs the servers; lookup.go, the cost of the consumer API;
// spawn.go, each process's own peak memory.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
	"github.com/natsaudit/nats-version-auditor/internal/rawfetch"
)

func main() {
	if args, ok := launcherArgs(os.Args); ok {
		os.Exit(spawnMain(args))
	}
	sizes := flag.String("consumers", "1000,10000,30000,100000", "consumer counts to measure, comma-separated (a size the machine lacks the memory for is skipped, with a note)")
	runs := flag.Int("runs", 5, "runs of each measure (the median is reported)")
	natscliRuns := flag.Int("natscli-runs", 3, "runs of natscli's report (slow), at sizes up to -natscli-max")
	natscliMax := flag.Int("natscli-max", 10000, "largest consumer count natscli's report is run at")
	auditorBin := flag.String("auditor", "bin/nats-version-auditor", "the auditor binary")
	natsBin := flag.String("natscli", ".cache/tools/bin/nats", "natscli's nats binary")
	validBin := flag.String("validfetch", ".cache/bench/validfetch", "the raw fetch that checks its replies (go build -o PATH ./internal/bench/validfetch; make bench builds it)")
	hold := flag.Bool("hold", false, "populate a cluster of the first size, print its URL and wait for SIGINT (for profiling)")
	goBench := flag.String("gobench", "", "a file of `go test -bench` output to include in the results")
	out := flag.String("out", "", "write the results table into this Markdown file, between the bench markers")
	freshness := flag.Bool("freshness", false, "measure only how soon /metrics follows a restarted server, with and without events (see freshness.go)")
	freshnessRestarts := flag.Int("freshness-restarts", 5, "restarts measured each way (the median is reported)")
	flapFor := flag.Duration("freshness-flap", time.Minute, "how long a server restarts every second to count the audits it causes")
	continuous := flag.Bool("continuous", false, "measure only what serve scraped every 15 s costs the servers, today's design against its defaults (see continuous.go)")
	continuousSizes := flag.String("continuous-consumers", "10000,30000,100000", "with -continuous: the consumer counts")
	continuousScrapes := flag.Int("continuous-scrapes", 6, "with -continuous: the scrapes today's design is measured over")
	continuousFull := flag.String("continuous-full-interval", "", "with -continuous: give serve this --audit.full-interval instead of its default (to try the bench quickly)")
	continuousShards := flag.Int("continuous-shards", 0, "with -continuous: add this many shards (pinned_client consumers) in an account of their own, and write the table of shards")
	rawFetch := flag.String("rawfetch", "", "internal: be the raw fetch process against this URL")
	rawIDs := flag.String("ids", "", "internal: the server ids the raw fetch asks")
	startOnly := flag.Bool("startup", false, "internal: exit at once, to measure the raw fetch binary's start-up alone")
	compare := flag.String("compare", "", "instead of the table: run these auditor binaries (comma-separated) side by side with the raw fetch at the first size, alternating, and print their medians")
	flag.Parse()
	if *rawFetch != "" {
		os.Exit(rawfetch.Main(*rawFetch, *rawIDs, nil))
	}
	if *startOnly {
		os.Exit(0)
	}

	h := &natstest.Program{}
	if *continuous {
		code := h.Run(func() int {
			cfg := continuousConfig{auditor: *auditorBin, scrapeEvery: 15 * time.Second, todayScrapes: *continuousScrapes, maxCycle: 40,
				fullInterval: *continuousFull, shards: *continuousShards}
			table := runContinuous(h, parseSizes(h, "-continuous-consumers", *continuousSizes), cfg)
			fmt.Print(table)
			if *out != "" {
				begin, end := cfg.blocks()
				if err := writeBetween(*out, begin, end, table); err != nil {
					h.Fatal(err)
				}
			}
			return 0
		})
		h.RunCleanups()
		os.Exit(code)
	}
	if *freshness {
		code := h.Run(func() int {
			table := runFreshness(h, freshnessConfig{auditor: *auditorBin, restarts: *freshnessRestarts,
				scrapeInterval: 30 * time.Second, minInterval: 15 * time.Second, flapFor: *flapFor})
			fmt.Print(table)
			if *out != "" {
				if err := writeBetween(*out, freshnessBegin, freshnessEnd, table); err != nil {
					h.Fatal(err)
				}
			}
			return 0
		})
		h.RunCleanups()
		os.Exit(code)
	}
	code := h.Run(func() int {
		if _, err := os.Stat(*validBin); err != nil && *compare == "" && !*hold {
			h.Fatalf("-validfetch: %v (make bench builds it: go build -o %s ./internal/bench/validfetch)", err, *validBin)
		}
		var results []sizeResult
		for _, n := range parseSizes(h, "-consumers", *sizes) {
			cfg := config{consumers: n, runs: *runs, auditor: *auditorBin, natscli: *natsBin, validfetch: *validBin, hold: *hold}
			if n <= *natscliMax {
				cfg.natscliRuns = *natscliRuns
			}
			if *compare != "" {
				fmt.Print(compareBinaries(h, cfg, strings.Split(*compare, ",")))
				return 0
			}
			if ok, why := memoryFor(n); !ok {
				fmt.Fprintf(os.Stderr, "== %d consumers: %s\n", n, why)
				results = append(results, sizeResult{consumers: n, skipped: why})
				continue
			}
			results = append(results, measure(h, cfg))
			h.RunCleanups() // one cluster at a time
		}
		table := render(results, *runs)
		if *goBench != "" {
			b, err := os.ReadFile(*goBench)
			if err != nil {
				h.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "Benchmark") || strings.HasPrefix(l, "cpu:") {
					lines = append(lines, l)
				}
			}
			table += "\nGo benchmarks (`go test -run '^$' -bench . -benchmem ./auditor ./metrics ./cmd/nats-version-auditor/internal/render`):\n\n```\n" + strings.Join(lines, "\n") + "\n```\n"
		}
		fmt.Print(table)
		if *out != "" {
			if err := writeBetweenMarkers(*out, table); err != nil {
				h.Fatal(err)
			}
		}
		return 0
	})
	h.RunCleanups()
	os.Exit(code)
}

// parseSizes reads a flag's comma-separated consumer counts.
func parseSizes(h *natstest.Program, flagName, list string) []int {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			h.Fatalf("%s: %v", flagName, err)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

type config struct {
	consumers   int
	runs        int
	natscliRuns int
	auditor     string
	natscli     string
	validfetch  string
	hold        bool
}

// Accounts the consumers are spread over; ACC0001.. come from ExtraAccounts.
var accounts = []string{"APP", "ACC0001", "ACC0002", "ACC0003", "ACC0004"}

const (
	settle             = time.Second
	consumersPerStream = 300
	// Every r3Every-th stream (and its consumers) is R3, the rest R1.
	r3Every = 20
)

func credentials(account string) (string, string) {
	if account == "APP" {
		return natstest.AppUser, natstest.AppPassword
	}
	return "acc" + account[3:], "acc"
}

type sizeResult struct {
	consumers, streams, r3Consumers int
	// skipped says why the size was not measured.
	skipped                 string
	raw, check, scrapeAudit []time.Duration
	rawProc, checkProc      []processRun
	// The raw fetch that checks each reply (validfetch), its runs repeated
	// and its runs lost (cut off every time).
	validProc     []processRun
	validRepeated int64
	validLost     int
	// Start-up and exit alone: the auditor's binary, the raw fetch's and
	// validfetch's.
	startAuditor, startRaw, startValid []processRun
	inRaw, inAudit                     []time.Duration
	inRawCPU, inAuditCPU               []time.Duration
	scrapeCachedP99                    time.Duration
	natscli                            []time.Duration
	checkRSS                           []int64 // bytes
	requests                           int
	rawBytes, auditBytes               uint64
	peakHeap                           uint64
	allocsPerConsumer                  float64
	bytesPerConsumer                   float64
	series                             int
	checkStatus                        int
	rawRepeated                        int64
	lookup                             lookupResult
}

func measure(h *natstest.Program, cfg config) sizeResult {
	fmt.Fprintf(os.Stderr, "== %d consumers: starting a %s/%s/%s cluster\n", cfg.consumers, natstest.Floor, natstest.New, natstest.Old)
	node := func(name, version string) natstest.Spec {
		return natstest.Spec{Name: name, Version: version, Cluster: "bench", JetStream: true, ExtraAccounts: len(accounts) - 1}
	}
	sys := natstest.Start(h, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old))
	res := sizeResult{consumers: cfg.consumers}
	streams := populate(h, sys, cfg.consumers, r3Every, &res)
	res.streams = len(streams)

	if cfg.hold {
		fmt.Printf("%s (user %s, password %s); interrupt to stop\n", sys.URL("n1"), natstest.SysUser, natstest.SysPassword)
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		return res
	}
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	ids := serverIDs(h, sysConn)
	fmt.Fprintf(os.Stderr, "   measuring (%d runs)\n", cfg.runs)
	raw := func() {
		d, bytes := rawJSZ(h, sysConn, ids)
		res.raw = append(res.raw, d)
		res.rawBytes = bytes
		time.Sleep(settle)
		res.rawProc = append(res.rawProc, rawFetchLimit(h, sys, ids))
		time.Sleep(settle)
		// The checking fetch can be cut off as the raw fetch can (at
		// 100,000); it is not the limit, so a run cut off every time is
		// left out and counted rather than ending the bench.
		if r, ok := rawFetchProcess(h, sys, cfg.validfetch, ids, &validRepeated); ok {
			res.validProc = append(res.validProc, r)
		} else {
			res.validLost++
		}
	}
	check := func() {
		r := runCheck(h, sys, cfg.auditor)
		res.checkProc = append(res.checkProc, r)
		res.check = append(res.check, r.wall)
		res.checkRSS = append(res.checkRSS, r.rss)
		res.checkStatus = r.exit
	}
	rawRepeated.Store(0)
	validRepeated.Store(0)
	alternate(cfg.runs, raw, check)
	res.startAuditor, res.startRaw, res.startValid = startups(h, sys, cfg)
	inProcess(h, sys, &res)
	inProcessRuns(h, cfg, sys, sysConn, ids, &res)
	res.rawRepeated = rawRepeated.Load()
	res.validRepeated = validRepeated.Load()
	scrapes(h, cfg, sys, &res)
	lookups(h, cfg, sys, streams, &res)
	for range cfg.natscliRuns {
		res.natscli = append(res.natscli, natscliReport(h, cfg.natscli, sys, streams))
	}
	return res
}

type streamRef struct{ account, name string }

// populate creates streams of consumersPerStream consumers each, spread over
// the accounts, every r3Every-th of them R3 (none with 0).
func populate(h *natstest.Program, sys *natstest.System, consumers, r3Every int, res *sizeResult) []streamRef {
	conns := map[string]*nats.Conn{}
	for _, acc := range accounts {
		u, p := credentials(acc)
		conns[acc] = sys.Connect("n1", u, p)
	}
	var streams []streamRef
	for i := 0; len(streams)*consumersPerStream < consumers; i++ {
		acc := accounts[i%len(accounts)]
		name := fmt.Sprintf("S%04d", i)
		replicas := 1
		if r3Every > 0 && i%r3Every == 0 {
			replicas = 3
		}
		cfg := server.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Replicas: replicas, Storage: server.MemoryStorage}
		if err := natstest.AddStream(conns[acc], cfg); err != nil {
			h.Fatal(err)
		}
		streams = append(streams, streamRef{acc, name})
	}
	start := time.Now()
	var created atomic.Int64
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error] // the first create that failed for good
	for i := range consumers {
		st := streams[i/consumersPerStream]
		if r3Every > 0 && (i/consumersPerStream)%r3Every == 0 {
			res.r3Consumers++
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			cfg := server.ConsumerConfig{Durable: fmt.Sprintf("C%05d", i), AckPolicy: server.AckExplicit}
			// At 100,000 consumers on two shared cores a create can go
			// unanswered for longer than AddConsumer's 20 s: try again (a
			// create of an existing durable with the same config succeeds).
			var err error
			for range 3 {
				if err = natstest.AddConsumer(conns[st.account], st.name, cfg); err == nil {
					break
				}
			}
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
			if n := created.Add(1); n%5000 == 0 {
				fmt.Fprintf(os.Stderr, "   %d consumers created\n", n)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		h.Fatal(*err)
	}
	fmt.Fprintf(os.Stderr, "   %d consumers on %d streams created in %s\n", consumers, len(streams), time.Since(start).Round(time.Second))
	return streams
}

func serverIDs(h *natstest.Program, nc *nats.Conn) []string {
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		h.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(collect.PingSubject, inbox, nil); err != nil {
		h.Fatal(err)
	}
	var ids []string
	for len(ids) < 3 {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			h.Fatal(err)
		}
		var s server.ServerStatsMsg
		if err := json.Unmarshal(m.Data, &s); err != nil {
			h.Fatal(err)
		}
		ids = append(ids, s.Server.ID)
	}
	return ids
}

// rawJSZ is the limit: the JSZ requests an audit needs, sent to every server
// at once, timed until the last page arrives, with nothing done with them.
// A fetch that fails is repeated (see rawRepeated).
func rawJSZ(h *natstest.Program, nc *nats.Conn, ids []string) (time.Duration, uint64) {
	for attempt := 1; ; attempt++ {
		d, n, err := rawJSZOnce(nc, ids)
		if err == nil {
			return d, n
		}
		if attempt == rawAttempts || !cutOff(err.Error()) {
			h.Fatal(err)
		}
		rawRepeated.Add(1)
		fmt.Fprintf(os.Stderr, "   raw JSZ in process failed (%v); again\n", err)
		time.Sleep(settle)
	}
}

func rawJSZOnce(nc *nats.Conn, ids []string) (time.Duration, uint64, error) {
	start := time.Now()
	n, err := rawfetch.Fetch(nc, ids, 30*time.Second, nil)
	return time.Since(start), n, err
}

// The raw fetch asks every server at once, as the limit must; the replies
// can then exceed the max_pending of the server they all come through, which
// cuts the fetch off as a slow consumer when it reads them too slowly (seen
// at 100,000 consumers on a busy machine). Such a run is repeated, up to
// rawAttempts in all, and counted in rawRepeated for the table; the limit's
// median is then of the runs that were not cut off. Any other failure ends
// the bench.
const rawAttempts = 3

var rawRepeated atomic.Int64

// validRepeated counts the same for validfetch.
var validRepeated atomic.Int64

// cutOff reports whether a raw fetch's error is what a connection cut off
// by its server shows: the request's reply lost with the connection.
func cutOff(msg string) bool {
	for _, s := range []string{nats.ErrTimeout.Error(), nats.ErrConnectionClosed.Error(), nats.ErrConnectionReconnecting.Error(), "Slow Consumer"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func runCheck(h *natstest.Program, sys *natstest.System, bin string) processRun {
	cmd := exec.Command(bin, append([]string{"check", "--format", "json", "--timeout", "60s"}, natstest.SysArgs(sys.URL("n1"))...)...)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	r := runProcess(h, sys, cmd)
	if r.exit == 3 || r.exit < 0 {
		h.Fatalf("check exited %d: %s", r.exit, stderr.String())
	}
	return r
}

// inProcessRuns alternates the raw fetch and one whole audit (Collect and
// Evaluate) inside this process, each timed and its CPU taken.
func inProcessRuns(h *natstest.Program, cfg config, sys *natstest.System, nc *nats.Conn, ids []string, res *sizeResult) {
	audit := func() {
		c0, start := selfCPU(), time.Now()
		snap, err := collect.Collect(context.Background(), nc, collect.Options{Timeout: 60 * time.Second})
		if err != nil {
			h.Fatal(err)
		}
		if r := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor}); !r.Complete() {
			h.Fatalf("in-process audit incomplete: %+v", r.Findings[:min(3, len(r.Findings))])
		}
		res.inAudit = append(res.inAudit, time.Since(start))
		res.inAuditCPU = append(res.inAuditCPU, selfCPU()-c0)
	}
	raw := func() {
		c0 := selfCPU()
		d, _ := rawJSZ(h, nc, ids)
		res.inRaw = append(res.inRaw, d)
		res.inRawCPU = append(res.inRawCPU, selfCPU()-c0)
	}
	alternate(cfg.runs, raw, audit)
}

// alternate runs a and b runs times each, alternating which goes first, and
// lets the servers settle after each: a JSZ right after another meets a
// server still collecting the garbage of the first.
func alternate(runs int, a, b func()) {
	for i := range runs {
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		first()
		time.Sleep(settle)
		second()
		time.Sleep(settle)
	}
}

// inProcess runs one audit inside this process to count what it costs in Go
// terms: requests, bytes, allocations and the peak heap.
func inProcess(h *natstest.Program, sys *natstest.System, res *sizeResult) {
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := before.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
		}
	})
	in := nc.Stats().InBytes
	snap, err := collect.Collect(context.Background(), nc, collect.Options{Timeout: 30 * time.Second})
	if err != nil {
		h.Fatal(err)
	}
	r := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	close(stop)
	sampler.Wait()
	runtime.ReadMemStats(&after)
	if !r.Complete() || len(snap.Consumers) != res.consumers {
		h.Fatalf("in-process audit: complete=%v, %d consumers of %d", r.Complete(), len(snap.Consumers), res.consumers)
	}
	res.requests = snap.Requests
	res.auditBytes = nc.Stats().InBytes - in
	res.peakHeap = peak.Load() - base
	res.allocsPerConsumer = float64(after.Mallocs-before.Mallocs) / float64(res.consumers)
	res.bytesPerConsumer = float64(after.TotalAlloc-before.TotalAlloc) / float64(res.consumers)
}

// scrapes measures `serve`: a scrape that runs an audit, and scrapes served
// from the last one.
func scrapes(h *natstest.Program, cfg config, sys *natstest.System, res *sizeResult) {
	fresh := startServe(h, cfg.auditor, sys.URL("n1"), "0s")
	for range cfg.runs {
		d, _ := scrape(h, fresh)
		res.scrapeAudit = append(res.scrapeAudit, d)
		time.Sleep(settle)
	}
	cached := startServe(h, cfg.auditor, sys.URL("n1"), "1h")
	_, body := scrape(h, cached)
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			res.series++
		}
	}
	var ds []time.Duration
	for range 200 {
		d, _ := scrape(h, cached)
		ds = append(ds, d)
	}
	slices.Sort(ds)
	res.scrapeCachedP99 = ds[len(ds)*99/100-1]
}

func startServe(h *natstest.Program, bin, url, interval string) string {
	base, _ := startServeArgs(h, bin, url, "--audit.min-interval", interval, "--timeout", "30s")
	return base
}

func scrape(h *natstest.Program, base string) (time.Duration, string) {
	start := time.Now()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		h.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		h.Fatalf("scrape: %d %v", resp.StatusCode, err)
	}
	return time.Since(start), string(b)
}

// natscliReport runs what users do today: `nats consumer report` over every
// stream, one process per stream, as each account's user.
func natscliReport(h *natstest.Program, bin string, sys *natstest.System, streams []streamRef) time.Duration {
	start := time.Now()
	for _, st := range streams {
		u, p := credentials(st.account)
		cmd := exec.Command(bin, "consumer", "report", st.name, "-s", sys.URL("n1"), "--user", u, "--password", p, "--timeout", "30s")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+os.TempDir()+"/nva-bench-none")
		if out, err := cmd.CombinedOutput(); err != nil {
			h.Fatalf("nats consumer report %s: %v\n%s", st.name, err, out)
		}
	}
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func msTenth(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func ratio(a, b time.Duration) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

func render(results []sizeResult, runs int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("Measured %s on %d cores, %.0f GiB; servers %s, %s, %s (one each); medians of %d runs.",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), float64(totalMemory())/(1<<30), natstest.Floor, natstest.New, natstest.Old, runs)
	w("")
	header := "| measure |"
	sep := "|---|"
	for _, r := range results {
		header += fmt.Sprintf(" %d consumers |", r.consumers)
		sep += "---|"
	}
	plainRow := func(name string, f func(r sizeResult) string) {
		line := "| " + name + " |"
		for _, r := range results {
			line += " " + f(r) + " |"
		}
		w("%s", line)
	}
	skipped := func(f func(r sizeResult) string) func(r sizeResult) string {
		return func(r sizeResult) string {
			if r.skipped != "" {
				return "–"
			}
			return f(r)
		}
	}
	row := func(name string, f func(r sizeResult) string) { plainRow(name, skipped(f)) }
	for _, r := range results {
		if r.skipped != "" {
			w("%d consumers: %s.", r.consumers, r.skipped)
			w("")
		}
	}
	w("%s", header)
	w("%s", sep)
	row("streams (R3 consumers)", func(r sizeResult) string { return fmt.Sprintf("%d (%d)", r.streams, r.r3Consumers) })
	row("**limit**: raw JSZ fetch, whole process (server ids given)", func(r sizeResult) string { return ms(median(wallOf(r.rawProc))) })
	row("`check --format json`, whole process", func(r sizeResult) string { return ms(median(r.check)) })
	row("**check / raw fetch**, time", func(r sizeResult) string { return ratio(median(r.check), median(wallOf(r.rawProc))) })
	row("CPU of the raw fetch process", func(r sizeResult) string { return ms(median(cpuOf(r.rawProc))) })
	row("CPU of `check`", func(r sizeResult) string { return ms(median(cpuOf(r.checkProc))) })
	row("**check / raw fetch**, CPU", func(r sizeResult) string { return ratio(median(cpuOf(r.checkProc)), median(cpuOf(r.rawProc))) })
	row("start-up and exit alone, CPU: `check`'s binary (`--version`) / the raw fetch's / the checking fetch's", func(r sizeResult) string {
		return fmt.Sprintf("%s / %s / %s", msTenth(median(cpuOf(r.startAuditor))), msTenth(median(cpuOf(r.startRaw))), msTenth(median(cpuOf(r.startValid))))
	})
	row("raw fetch that checks each reply (sonic's SIMD `Valid`), whole process: time, CPU", func(r sizeResult) string {
		cut := ""
		if n := r.validRepeated; n > 0 || r.validLost > 0 {
			cut = fmt.Sprintf(" (cut off and repeated %d times; %d of %d runs lost)", n, r.validLost, len(r.validProc)+r.validLost)
		}
		if len(r.validProc) == 0 {
			return "cut off in every run" + cut
		}
		return fmt.Sprintf("%s, %s%s", ms(median(wallOf(r.validProc))), ms(median(cpuOf(r.validProc))), cut)
	})
	row("**floor** under `check` (the checking fetch, started as `check` starts) / raw fetch: time, CPU", func(r sizeResult) string {
		if len(r.validProc) == 0 {
			return "not measured"
		}
		asCheck := func(of func([]processRun) []time.Duration) time.Duration {
			return median(of(r.validProc)) - median(of(r.startValid)) + median(of(r.startAuditor))
		}
		return fmt.Sprintf("%s, %s", ratio(asCheck(wallOf), median(wallOf(r.rawProc))), ratio(asCheck(cpuOf), median(cpuOf(r.rawProc))))
	})
	row("**check / raw fetch**, CPU less start-up", func(r sizeResult) string {
		return ratio(median(cpuOf(r.checkProc))-median(cpuOf(r.startAuditor)), median(cpuOf(r.rawProc))-median(cpuOf(r.startRaw)))
	})
	row("CPU of `check` per consumer", func(r sizeResult) string {
		return fmt.Sprintf("%.1f µs", float64(median(cpuOf(r.checkProc)))/1e3/float64(r.consumers))
	})
	row("servers' CPU per `check` (all three)", func(r sizeResult) string { return ms(median(serverCPUOf(r.checkProc))) })
	row("servers' CPU per raw fetch (all three)", func(r sizeResult) string { return ms(median(serverCPUOf(r.rawProc))) })
	row("raw JSZ in process", func(r sizeResult) string { return ms(median(r.inRaw)) })
	row("one audit in process (Collect + Evaluate)", func(r sizeResult) string { return ms(median(r.inAudit)) })
	row("**audit / raw JSZ in process**, time", func(r sizeResult) string { return ratio(median(r.inAudit), median(r.inRaw)) })
	row("CPU of the audit / raw JSZ in process", func(r sizeResult) string {
		return fmt.Sprintf("%s / %s", ms(median(r.inAuditCPU)), ms(median(r.inRawCPU)))
	})
	row("`/metrics` scrape running an audit", func(r sizeResult) string { return ms(median(r.scrapeAudit)) })
	row("`/metrics` scrape from the last audit, p99 of 200", func(r sizeResult) string { return ms(r.scrapeCachedP99) })
	lookupRows(row)
	row("natscli `nats consumer report`, every stream", func(r sizeResult) string {
		if len(r.natscli) == 0 {
			return "not run"
		}
		return ms(median(r.natscli))
	})
	row("**natscli / check**", func(r sizeResult) string { return ratio(median(r.natscli), median(r.check)) })
	row("peak RSS of `check`", func(r sizeResult) string { return mib(float64(medianInt(r.checkRSS))) })
	row("peak Go heap of one audit (in process)", func(r sizeResult) string { return mib(float64(r.peakHeap)) })
	row("allocations per consumer", func(r sizeResult) string {
		return fmt.Sprintf("%.0f (%.0f B)", r.allocsPerConsumer, r.bytesPerConsumer)
	})
	row("raw fetch runs repeated: a server cut the fetch off", func(r sizeResult) string { return strconv.FormatInt(r.rawRepeated, 10) })
	row("requests per audit", func(r sizeResult) string { return strconv.Itoa(r.requests) })
	row("bytes the servers send per audit", func(r sizeResult) string { return mib(float64(r.auditBytes)) })
	row("bytes per consumer", func(r sizeResult) string { return fmt.Sprintf("%.0f B", float64(r.auditBytes)/float64(r.consumers)) })
	row("`/metrics` series", func(r sizeResult) string { return strconv.Itoa(r.series) })
	row("`check` exit code", func(r sizeResult) string { return strconv.Itoa(r.checkStatus) })
	return b.String()
}

func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return si.Totalram * uint64(si.Unit)
}

const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

// writeBetweenMarkers replaces what stands between the bench markers of a
// Markdown file with table.
func writeBetweenMarkers(path, table string) error {
	return writeBetween(path, beginMarker, endMarker, table)
}
