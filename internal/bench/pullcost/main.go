// Command pullcost measures what hearing the pulls costs (issue 34): the
// servers' extra CPU and the auditor's own, at 10,000 pinned_client
// consumers and their pullers (docs/pulls.md).
//
// Three 2.15.3 servers on loopback, with the step of docs/pulls.md
// (natstest.ShowingPulls), hold -streams R1 file streams, one per server,
// and -consumers R1 pinned_client consumers over them
// (natstest.AddShards, priority_timeout 2 min). The pullers are -conns
// connections of this program, spread over the servers, each with its own
// name and inbox prefix, as so many processes: each Consumes its share of
// the shards with nats.go jetstream Consume in the shards' priority group
// and Consume's defaults otherwise (30 s expiry, 15 s heartbeat, 500
// messages). One message per shard gives each shard its pin; then the
// shards are idle and each puller pulls again at every expiry, as a
// default client on an idle shard does.
//
// The conditions:
//
//   - (A) nothing listens;
//   - (C) `serve --pull-watch 0`: it audits, but does not listen;
//   - (D) a bare subscriber (this binary again, -subscribe) to the system
//     account's import of the pulls on n1: the floor of listening;
//   - (B) `serve` with its defaults (--pull-watch 35s: it listens to the
//     pulls all the time), connected to n1.
//
// (A), (C) and (D) take one window each per round, in an order that
// rotates from round to round; (C) starts serve anew, and its window
// starts after 2 scrapes. (B) runs once, between the rounds in the middle
// of the run, as one serve process: its first windows, from its start,
// until its API says that CONNZ has named every puller (serve asks CONNZ
// once per new inbox, and names only those whose answers came within its
// wait), then -steady windows more. Naming 10,000 inboxes takes minutes,
// which is why (B) is not restarted in every round.
//
// In (B) and (C) the bench scrapes /metrics every -scrape, as Prometheus
// would, from serve's start; serve audits on a scrape at most once per
// --audit.min-interval (15 s) after the last audit ended, so every other
// scrape audits. Each window ends a second before a scrape. Per window:
// the CPU (utime + stime of /proc/PID/stat) of the three servers, of the
// process under measurement and of this program (the pullers), their RSS,
// the machine's busy time, the pull requests the pullers sent (their
// connections' OutMsgs), what the measured process's connection published
// and was sent (CONNZ of n1: the subscriber is sent the pulls only, serve
// the pulls and the replies to its requests), the audits, the servers'
// slow consumers (VARZ) and the pullers' errors.
//
// Run it from the module root, after `make build`:
//
//	go run ./internal/bench/pullcost -auditor bin/nats-version-auditor
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/internal/bench/procstat"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

const (
	cluster = "bench"
	// pinTimeout is the shards' priority_timeout: the servers' default.
	pinTimeout = 2 * time.Minute
	// importSubject is the system account's import of APP's pulls.
	importSubject  = "APP.$JS.API.CONSUMER.MSG.NEXT.>"
	auditorName    = "pullcost-auditor"
	subscriberName = "pullcost-subscriber"
	// at is where the auditor and the bare subscriber connect.
	at = "n1"
)

var servers = []string{"n1", "n2", "n3"}

type config struct {
	auditor                           string
	consumers, streams, conns, rounds int
	window, scrapeEvery               time.Duration
	only                              string
	steady, maxStart                  int
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-subscribe" {
		os.Exit(subscribeMain(os.Args[2]))
	}
	var cfg config
	flag.StringVar(&cfg.auditor, "auditor", "bin/nats-version-auditor", "the auditor binary (make build)")
	flag.IntVar(&cfg.consumers, "consumers", 10000, "pinned_client consumers")
	flag.IntVar(&cfg.streams, "streams", 3, "R1 streams the consumers are spread over, placed round-robin on n1, n2, n3")
	flag.IntVar(&cfg.conns, "conns", 10, "puller connections (processes), each with its own inbox prefix")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds: one window per condition each")
	flag.DurationVar(&cfg.window, "window", 60*time.Second, "length of a window")
	flag.DurationVar(&cfg.scrapeEvery, "scrape", 15*time.Second, "scrape interval of serve in (B) and (C)")
	flag.StringVar(&cfg.only, "only", "ABCDE", "the conditions to run")
	flag.IntVar(&cfg.steady, "steady", 3, "(B): windows once every puller is named")
	flag.IntVar(&cfg.maxStart, "max-start", 12, "(B): most windows to wait, from serve's start, for CONNZ to name every puller")
	flag.Parse()
	h := &natstest.Program{}
	code := h.Run(func() int { return run(h, cfg) })
	h.RunCleanups()
	os.Exit(code)
}

// condition is what runs beside the servers and the pullers in a window.
type condition struct {
	key, name string
	// warmup is how long the condition runs before its window starts.
	warmup func(cfg config) time.Duration
	start  func(b *bench) *measured
}

// conditions are those the rounds rotate through. (B) is not among them:
// see serveRun.
var conditions = []condition{
	{"A", "(A) no auditor", func(config) time.Duration { return 0 }, func(*bench) *measured { return nil }},
	{"C", "(C) serve --pull-watch 0", func(c config) time.Duration { return 2*c.scrapeEvery - time.Second },
		func(b *bench) *measured { return b.startServe(false) }},
	{"E", "(E) serve --pull-watch 0 --audit.full-interval 5m", func(c config) time.Duration { return 2*c.scrapeEvery - time.Second },
		func(b *bench) *measured { return b.startServe(false, "--audit.full-interval", "5m") }},
	{"D", "(D) bare subscriber on the import", func(config) time.Duration { return 0 },
		func(b *bench) *measured { return b.startSubscriber() }},
}

// condB is serve with its defaults, listening; condBStart is its first
// minutes, until CONNZ has named every puller.
var (
	condB      = condition{key: "B", name: "(B) serve, --pull-watch 35s (default), all named"}
	condBStart = condition{key: "b", name: "(B) serve, --pull-watch 35s (default), from its start"}
)

// bench is the system, its pullers and what the windows measured.
type bench struct {
	h       *natstest.Program
	sys     *natstest.System
	cfg     config
	sysConn *nats.Conn // on at
	atID    string
	pullers []*nats.Conn
	errs    errCounts
	dir     string
}

func run(h *natstest.Program, cfg config) int {
	started := time.Now()
	fmt.Printf("pullcost: nats-server %s ×3 on loopback, %d R1 pinned_client consumers over %d R1 streams, pulled by %d connections with nats.go v1.55.0 Consume's defaults (expiry %s)\n",
		natstest.New, cfg.consumers, cfg.streams, cfg.conns, jetstream.DefaultExpires)
	fmt.Printf("auditor %s; windows of %s, %d rounds, scrapes every %s\n", cfg.auditor, cfg.window, cfg.rounds, cfg.scrapeEvery)
	fmt.Printf("started %s, load average %s\n", started.UTC().Format(time.RFC3339), procstat.Loadavg())
	if _, err := os.Stat(cfg.auditor); err != nil {
		h.Fatalf("the auditor binary: %v (make build)", err)
	}
	b := &bench{h: h, cfg: cfg, dir: h.TempDir()}
	b.setup()
	fmt.Printf("set up in %s, load average %s\n\n", time.Since(started).Round(time.Second), procstat.Loadavg())

	var conds []condition
	for _, c := range conditions {
		if strings.Contains(cfg.only, c.key) {
			conds = append(conds, c)
		}
	}
	b.settleIn()
	var results []window
	for r := range cfg.rounds {
		for i := range conds {
			c := conds[(i+r)%len(conds)]
			w := b.window(c, r+1)
			results = append(results, w)
			fmt.Println(w.line())
		}
		// (B) between the rounds, in the middle of the run.
		if r+1 == (cfg.rounds+1)/2 && strings.Contains(cfg.only, "B") {
			results = append(results, b.serveRun()...)
		}
	}
	if strings.Contains(cfg.only, "B") {
		conds = append(conds, condB)
	}
	fmt.Printf("\nended %s, load average %s; took %s\n\n", time.Now().UTC().Format(time.RFC3339), procstat.Loadavg(), time.Since(started).Round(time.Second))
	printTables(results, conds)
	return 0
}

func must(h *natstest.Program, err error) {
	if err != nil {
		h.Fatal(err)
	}
}

func streamName(s int) string    { return "W" + strconv.Itoa(s) }
func subjectPrefix(s int) string { return "w" + strconv.Itoa(s) }

// shardsOf is how many shards stream s holds: shard k of the whole is
// shard-(k/streams) of stream k%streams.
func (cfg config) shardsOf(s int) int { return (cfg.consumers - s + cfg.streams - 1) / cfg.streams }

// setup starts the servers, creates the streams and the shards, starts the
// pullers, gives every shard its pin and waits until each has one and a
// pull waiting.
func (b *bench) setup() {
	h, cfg := b.h, b.cfg
	var specs []natstest.Spec
	for _, n := range servers {
		specs = append(specs, natstest.ShowingPulls(natstest.Node(n, natstest.New, cluster)))
	}
	t0 := time.Now()
	b.sys = natstest.Start(h, specs...)
	sys := b.sys
	app := sys.Connect(at, natstest.AppUser, natstest.AppPassword)
	b.sysConn = sys.Connect(at, natstest.SysUser, natstest.SysPassword)
	b.atID = b.sysConn.ConnectedServerId()
	fmt.Printf("servers up in %s\n", time.Since(t0).Round(100*time.Millisecond))

	t0 = time.Now()
	// From 2.15 a stream holds at most 1,000 consumers unless its config
	// (or the server's default_max_consumers) says otherwise
	// (JSDefaultMaxConsumersPerStream); -1 does not lift it.
	for s := range cfg.streams {
		must(h, natstest.AddStream(app, server.StreamConfig{Name: streamName(s), Subjects: []string{subjectPrefix(s) + ".>"},
			Replicas: 1, Storage: server.FileStorage, MaxConsumers: cfg.shardsOf(s),
			Placement: &server.Placement{Tags: []string{"node:" + servers[s%len(servers)]}}}))
	}
	// One creator per stream, each creating its shards one by one.
	errc := make(chan error, cfg.streams)
	for s := range cfg.streams {
		go func() {
			_, err := natstest.AddShards(app, streamName(s), subjectPrefix(s), cfg.shardsOf(s), 1, pinTimeout)
			errc <- err
		}()
	}
	for range cfg.streams {
		must(h, <-errc)
	}
	fmt.Printf("%d consumers created in %s\n", cfg.consumers, time.Since(t0).Round(100*time.Millisecond))
	// Interest travels each route in order: once every server knows the
	// last shard of a stream, it knows the others.
	for s := range cfg.streams {
		last := "shard-" + strconv.Itoa(cfg.shardsOf(s)-1)
		for _, n := range servers {
			must(h, sys.WaitPullable(n, sys.AccountKey(natstest.AppUser), streamName(s), last, 60*time.Second))
		}
	}

	t0 = time.Now()
	b.startPullers()
	fmt.Printf("%d Consumes started on %d connections in %s\n", cfg.consumers, cfg.conns, time.Since(t0).Round(100*time.Millisecond))

	// One message per shard: its first delivery gives the shard its pin
	// (2.15.3 consumer.go nextWaiting assigns it only on a delivery).
	pub := sys.Connect("n2", natstest.AppUser, natstest.AppPassword, nats.Name("pullcost-publisher"))
	for k := range cfg.consumers {
		must(h, pub.Publish(subjectPrefix(k%cfg.streams)+"."+strconv.Itoa(k/cfg.streams), []byte("pin")))
	}
	must(h, pub.Flush())
	pub.Close()

	t0 = time.Now()
	deadline := t0.Add(3 * time.Minute)
	for {
		st, err := b.shardState()
		if err == nil && st.ready == cfg.consumers {
			fmt.Printf("every shard pinned, its message acked and a pull waiting, %s after publishing\n", time.Since(t0).Round(100*time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			h.Fatalf("shards not all pinned and pulled after 3 min: %+v, %v; puller errors %v", st, err, b.errs.snapshot())
		}
		fmt.Printf("  waiting for the shards: %+v %v\n", st, err)
		time.Sleep(3 * time.Second) // JSZ with 10,000 consumers is no request to repeat at once
	}
	if e := b.errs.snapshot(); len(e) > 0 {
		fmt.Printf("puller errors during the setup: %s\n", fmtErrs(e))
	}
}

// shards counts the shards by what their leaders say, in JSZ.
type shards struct{ seen, pinned, waiting, acked, ready int }

func (b *bench) shardState() (shards, error) {
	var st shards
	resp, err := natstest.JSZ(b.sysConn, server.JSzOptions{Accounts: true, Streams: true, Consumer: true}, len(servers), 10*time.Second)
	if err != nil {
		return st, err
	}
	for _, r := range resp {
		if r.Data == nil {
			continue
		}
		for _, a := range r.Data.AccountDetails {
			for _, sd := range a.Streams {
				for _, ci := range sd.Consumer {
					st.seen++
					pinned := len(ci.PriorityGroups) > 0 && ci.PriorityGroups[0].PinnedClientID != ""
					waiting := ci.NumWaiting > 0
					acked := ci.Delivered.Stream > 0 && ci.NumAckPending == 0
					if pinned {
						st.pinned++
					}
					if waiting {
						st.waiting++
					}
					if acked {
						st.acked++
					}
					if pinned && waiting && acked {
						st.ready++
					}
				}
			}
		}
	}
	return st, nil
}

// startPullers connects the pullers and starts a Consume for every shard,
// each connection its share, in parallel.
func (b *bench) startPullers() {
	h, cfg, sys := b.h, b.cfg, b.sys
	per := make([][]int, cfg.conns)
	for k := range cfg.consumers {
		j := k * cfg.conns / cfg.consumers
		per[j] = append(per[j], k)
	}
	errc := make(chan error, cfg.conns)
	for j := range cfg.conns {
		name := fmt.Sprintf("puller-%d", j)
		nc := sys.Connect(servers[j%len(servers)], natstest.AppUser, natstest.AppPassword,
			nats.Name(name), nats.CustomInboxPrefix("_INBOX_p"+strconv.Itoa(j)))
		b.pullers = append(b.pullers, nc)
		go func() { errc <- b.consumeAll(nc, per[j]) }()
	}
	for range cfg.conns {
		must(h, <-errc)
	}
}

func (b *bench) consumeAll(nc *nats.Conn, ks []int) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// The Consumes start spread over one pull expiry, as processes that
	// started at different times: their pulls, repeated at every expiry,
	// then come at an even rate rather than in one burst every 30 s.
	t0 := time.Now()
	for i, k := range ks {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * jetstream.DefaultExpires / time.Duration(len(ks))))) // pacing, not a wait for a condition
		stream, shard := streamName(k%b.cfg.streams), "shard-"+strconv.Itoa(k/b.cfg.streams)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cons, err := js.Consumer(ctx, stream, shard)
		cancel()
		if err != nil {
			return fmt.Errorf("%s %s: %w", stream, shard, err)
		}
		if _, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack() },
			jetstream.PullPriorityGroup(natstest.ShardGroup), jetstream.ConsumeErrHandler(b.errs.onErr)); err != nil {
			return fmt.Errorf("%s %s: %w", stream, shard, err)
		}
	}
	return nil
}

// pullsSent is how many messages the pullers have published: pull
// requests, and the acks of the setup's messages.
func (b *bench) pullsSent() uint64 {
	var n uint64
	for _, nc := range b.pullers {
		n += nc.Stats().OutMsgs
	}
	return n
}

// errCounts counts the errors the pullers' Consumes report, by kind.
type errCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

func (e *errCounts) onErr(_ jetstream.ConsumeContext, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = map[string]int64{}
	}
	e.n[errKind(err)]++
}

func (e *errCounts) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.n)
}

func errKind(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		return "missed heartbeats"
	case errors.Is(err, nats.ErrNoResponders):
		return "503 no responders"
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		return "409 leadership change"
	case errors.Is(err, jetstream.ErrPinIDMismatch):
		return "423 pin id mismatch"
	}
	return err.Error()
}

// measured is the process a condition runs beside the servers: serve or
// the bare subscriber.
type measured struct {
	cmd      *exec.Cmd
	exited   chan struct{}
	started  time.Time
	connName string
	log      string
	// serve's
	base string
	scr  *scraper
	// the subscriber's
	stdin io.WriteCloser
	out   chan string
}

func (m *measured) pid() int {
	if m == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// stop ends the process: SIGTERM for serve, end of input for the
// subscriber; killed if it has not exited after 15 s.
func (m *measured) stop() {
	if m.scr != nil {
		m.scr.halt()
	}
	if m.stdin != nil {
		_ = m.stdin.Close()
	} else {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-m.exited:
	case <-time.After(15 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

func (b *bench) launch(cmd *exec.Cmd, connName, log string) *measured {
	m := &measured{cmd: cmd, exited: make(chan struct{}), connName: connName, log: log}
	if err := cmd.Start(); err != nil {
		b.h.Fatalf("start %s: %v", cmd.Path, err)
	}
	m.started = time.Now()
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	b.h.Cleanup(func() {
		select {
		case <-m.exited:
		default:
			_ = cmd.Process.Kill()
			<-m.exited
		}
	})
	return m
}

// startServe starts `serve` connected to at, listening to the pulls or not,
// waits until it answers /healthz and starts scraping it.
func (b *bench) startServe(pullWatch bool, extra ...string) *measured {
	h := b.h
	addr := natstest.FreeAddr(h)
	args := append([]string{"serve"}, b.sys.SysArgs(at)...)
	args = append(args, "--connection-name", auditorName, "--web.listen-address", addr)
	if !pullWatch {
		args = append(args, "--pull-watch", "0")
	}
	args = append(args, extra...)
	log := filepath.Join(b.dir, fmt.Sprintf("serve-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(log)
	must(h, err)
	defer logf.Close()
	cmd := exec.Command(b.cfg.auditor, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	m := b.launch(cmd, auditorName, log)
	m.base = "http://" + addr
	must(h, natstest.Eventually(20*time.Second, func() error {
		select {
		case <-m.exited:
			return errors.New("serve exited")
		default:
		}
		resp, err := http.Get(m.base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	}))
	m.scr = startScraper(m.base+"/metrics", b.cfg.scrapeEvery)
	return m
}

// startSubscriber starts the bare subscriber (this binary, -subscribe) and
// waits until it subscribed.
func (b *bench) startSubscriber() *measured {
	h := b.h
	self, err := os.Executable()
	must(h, err)
	cmd := exec.Command(self, "-subscribe", b.sys.URL(at))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(h, err)
	stdout, err := cmd.StdoutPipe()
	must(h, err)
	m := b.launch(cmd, subscriberName, "")
	m.stdin = stdin
	m.out = make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m.out <- sc.Text()
		}
		close(m.out)
	}()
	select {
	case line := <-m.out:
		if line != "ready" {
			h.Fatalf("the subscriber said %q", line)
		}
	case <-time.After(20 * time.Second):
		h.Fatal("the subscriber did not subscribe within 20 s")
	}
	return m
}

// subCount is what the bare subscriber heard over its life.
type subCount struct {
	Msgs      int64 `json:"msgs"`
	Consumers int   `json:"consumers"`
	Pinned    int   `json:"consumers_pulled_with_pin_id"`
	Dropped   int   `json:"dropped"`
}

// subscribeMain is the bare subscriber: the system account's import of
// APP's pulls, counted, until its input ends.
func subscribeMain(url string) int {
	nc, err := nats.Connect(url, nats.UserInfo(natstest.SysUser, natstest.SysPassword), nats.Name(subscriberName))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	var mu sync.Mutex
	var c subCount
	seen := map[string]bool{}
	sub, err := nc.Subscribe(importSubject, func(m *nats.Msg) {
		pinned := bytes.Contains(m.Data, []byte(`"id":`))
		mu.Lock()
		defer mu.Unlock()
		c.Msgs++
		if p, ok := seen[m.Subject]; !ok || (pinned && !p) {
			seen[m.Subject] = pinned
		}
	})
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	d, _ := sub.Dropped()
	_ = sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	c.Consumers, c.Dropped = len(seen), d
	for _, p := range seen {
		if p {
			c.Pinned++
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(c)
	return 0
}

// scraper scrapes /metrics at a fixed interval from its start, with
// Prometheus's default timeout (10 s).
type scraper struct {
	url  string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	got  []scrape
}

type scrape struct {
	at, done time.Time
	audits   float64
	duration float64
	bytes    int
	err      error
}

func startScraper(url string, every time.Duration) *scraper {
	s := &scraper{url: url, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		client := &http.Client{Timeout: 10 * time.Second}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.scrapeOnce(client)
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *scraper) scrapeOnce(client *http.Client) {
	sc := scrape{at: time.Now(), audits: -1, duration: -1}
	resp, err := client.Get(s.url)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		sc.bytes = len(body)
		if err == nil {
			var m natstest.Metrics
			if m, err = natstest.ParseMetrics(string(body)); err == nil {
				sc.audits = m.Value("nats_version_auditor_audits_total")
				sc.duration = m.Value("nats_version_auditor_audit_duration_seconds")
			}
		}
	}
	sc.err, sc.done = err, time.Now()
	s.mu.Lock()
	s.got = append(s.got, sc)
	s.mu.Unlock()
}

func (s *scraper) halt() {
	close(s.stop)
	<-s.done
}

// between are the audits counted by the scrapes that finished in
// [from, to): how many, and the duration of each.
func (s *scraper) between(from, to time.Time) (audits int, durations []float64, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := -1.0
	for _, sc := range s.got {
		if sc.done.Before(from) {
			if sc.audits >= 0 {
				last = sc.audits
			}
			continue
		}
		if !sc.done.Before(to) {
			break
		}
		if sc.err != nil {
			failed++
			continue
		}
		if last >= 0 && sc.audits > last {
			audits += int(sc.audits - last)
			durations = append(durations, sc.duration)
		}
		last = sc.audits
	}
	return audits, durations, failed
}

// sample is what the counters say at one moment.
type sample struct {
	at       time.Time
	servers  [3]time.Duration
	proc     time.Duration
	rss, hwm int64
	self     time.Duration
	machine  time.Duration
	sent     uint64
	errs     map[string]int64
	// conn is the measured process's connection on at, as CONNZ lists it;
	// nil when there is none or CONNZ did not answer.
	conn *server.ConnInfo
	// slow is the servers' slow consumers so far (-1: unknown).
	slow int64
}

func (b *bench) sample(m *measured) sample {
	s := sample{at: time.Now()}
	for i, n := range servers {
		s.servers[i] = procstat.CPU(b.sys.PID(n))
	}
	s.proc = procstat.CPU(m.pid())
	s.rss, s.hwm = procstat.Mem(m.pid())
	s.self = procstat.CPU(os.Getpid())
	s.machine = procstat.MachineBusy()
	s.sent = b.pullsSent()
	s.errs = b.errs.snapshot()
	if m != nil {
		s.conn = b.connOf(m.connName)
	}
	s.slow = b.slowConsumers()
	return s
}

// connOf is the system-account connection named name on at, as CONNZ
// lists it with its subscriptions.
func (b *bench) connOf(name string) *server.ConnInfo {
	body, _ := json.Marshal(server.ConnzEventOptions{ConnzOptions: server.ConnzOptions{Account: "SYS", SubscriptionsDetail: true, Limit: 1024}})
	msg, err := b.sysConn.Request("$SYS.REQ.SERVER."+b.atID+".CONNZ", body, 10*time.Second)
	if err != nil {
		return nil
	}
	var resp server.ServerAPIConnzResponse
	if json.Unmarshal(msg.Data, &resp) != nil || resp.Data == nil {
		return nil
	}
	for _, c := range resp.Data.Conns {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// slowConsumers is the sum of the servers' slow_consumers (VARZ); -1 when
// a server did not answer.
func (b *bench) slowConsumers() int64 {
	msgs, err := natstest.Gather(b.sysConn, "$SYS.REQ.SERVER.PING.VARZ", nil, len(servers), 5*time.Second)
	if err != nil || len(msgs) < len(servers) {
		return -1
	}
	var n int64
	for _, m := range msgs {
		var resp struct {
			Data *struct {
				SlowConsumers int64 `json:"slow_consumers"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &resp) != nil || resp.Data == nil {
			return -1
		}
		n += resp.Data.SlowConsumers
	}
	return n
}

// window is what one condition cost over one window.
type window struct {
	cond    condition
	round   int
	label   string
	dur     time.Duration
	servers [3]time.Duration
	proc    time.Duration
	rss     int64
	hwm     int64
	self    time.Duration
	machine time.Duration
	sent    uint64
	// connIn, connOut and connOutBytes are the messages the measured
	// process's connection published, and the messages and bytes it was
	// sent (-1: unknown). The bare subscriber is sent the pulls only;
	// serve, the pulls and the replies to its requests. (A subscription
	// through an import counts its messages on a shadow subscription,
	// which CONNZ does not list.)
	connIn, connOut, connOutBytes int64
	// slow is how many slow consumers the servers counted in the window
	// (-1: unknown).
	slow          int64
	audits        int
	auditSecs     []float64
	failedScrapes int
	errs          map[string]int64
	// warm is the warm-up before the window: serve's start and first
	// audits; nil where there is none.
	warm *window
	// api is what serve's API said after the window; sub what the
	// subscriber heard over its life.
	api        *apiView
	sub        *subCount
	serveWarns []string
}

// diff is the window from s0 to s1; fromZero takes a measured process's
// connection counters from zero when s0 has none (it started after s0).
func diff(cond condition, round int, s0, s1 sample, fromZero bool) window {
	w := window{cond: cond, round: round, dur: s1.at.Sub(s0.at), proc: s1.proc - s0.proc, rss: s1.rss, hwm: s1.hwm,
		self: s1.self - s0.self, machine: s1.machine - s0.machine, sent: s1.sent - s0.sent, connIn: -1, connOut: -1, connOutBytes: -1,
		slow: -1, errs: map[string]int64{}}
	if s0.slow >= 0 && s1.slow >= 0 {
		w.slow = s1.slow - s0.slow
	}
	for i := range servers {
		w.servers[i] = s1.servers[i] - s0.servers[i]
	}
	for k, v := range s1.errs {
		if d := v - s0.errs[k]; d > 0 {
			w.errs[k] = d
		}
	}
	if s0.conn == nil && fromZero {
		s0.conn = &server.ConnInfo{}
		if s1.conn != nil {
			s0.conn.Cid = s1.conn.Cid
		}
	}
	if s0.conn != nil && s1.conn != nil && s0.conn.Cid == s1.conn.Cid {
		w.connIn, w.connOut, w.connOutBytes = s1.conn.InMsgs-s0.conn.InMsgs, s1.conn.OutMsgs-s0.conn.OutMsgs, s1.conn.OutBytes-s0.conn.OutBytes
	}
	return w
}

// window runs one condition: it waits until the servers are idle, starts
// the condition's process, lets it warm up, and measures a window.
func (b *bench) window(c condition, round int) window {
	b.settle()
	s0 := b.sample(nil)
	m := c.start(b)
	if m != nil {
		s0.at = m.started
	}
	time.Sleep(time.Until(s0.at.Add(c.warmup(b.cfg)))) // a fixed length, not a condition
	s1 := b.sample(m)
	time.Sleep(b.cfg.window) // a fixed length, not a condition
	s2 := b.sample(m)
	w := diff(c, round, s1, s2, false)
	if m != nil && c.warmup(b.cfg) > 0 {
		warm := diff(c, round, s0, s1, true)
		w.warm = &warm
	}
	if m != nil && m.scr != nil {
		w.audits, w.auditSecs, w.failedScrapes = m.scr.between(s1.at, s2.at)
		m.scr.halt()
		m.scr = nil
		w.api = b.apiView(m)
	}
	if m != nil {
		m.stop()
		if m.out != nil {
			for line := range m.out {
				var sc subCount
				if json.Unmarshal([]byte(line), &sc) == nil {
					w.sub = &sc
				}
			}
		}
		if m.log != "" {
			w.serveWarns = warnings(m.log)
		}
	}
	return w
}

// settleIn waits, after the setup, until the servers' CPU is steady: 10 s
// slices until one is within 15% of the one before (at most 9).
func (b *bench) settleIn() {
	cpu := func() time.Duration {
		var t time.Duration
		for _, n := range servers {
			t += procstat.CPU(b.sys.PID(n))
		}
		return t
	}
	var said []string
	prev, last := -1.0, cpu()
	for range 9 {
		t0 := time.Now()
		time.Sleep(10 * time.Second) // a slice of fixed length
		now := cpu()
		p := pct(now-last, time.Since(t0))
		said = append(said, fmt.Sprintf("%.0f%%", p))
		last = now
		if prev > 0 && p <= 1.15*prev && p >= 0.85*prev {
			break
		}
		prev = p
	}
	fmt.Printf("settling in after the setup, the servers' CPU by 10 s slices: %s\n\n", strings.Join(said, ", "))
}

// serveRun runs (B): serve with its defaults, scraped every -scrape, in
// windows of -window from its start (each ending a second before a
// scrape). A window counts as (B) proper once the API said, after the
// window before, that CONNZ has named every puller; the windows before
// are serve's start. The API is asked after each window until then, and
// after the last one. It ends after -steady windows of (B) proper, or
// after -max-start windows of the start and -steady more.
func (b *bench) serveRun() []window {
	b.settle()
	s0 := b.sample(nil)
	m := b.startServe(true)
	s0.at = m.started
	boundary := func(k int) time.Time { return m.started.Add(time.Duration(k)*b.cfg.window - time.Second) }
	var out []window
	prev, named, steady := s0, false, 0
	for k := 1; steady < b.cfg.steady && k <= b.cfg.maxStart+b.cfg.steady; k++ {
		time.Sleep(time.Until(boundary(k))) // a window of fixed length
		s := b.sample(m)
		var w window
		if named {
			steady++
			w = diff(condB, 0, prev, s, false)
			w.label = fmt.Sprintf("(B) serve, all named, window %d", steady)
		} else {
			w = diff(condBStart, k, prev, s, k == 1)
			w.label = fmt.Sprintf("(B) serve's start, window %d", k)
		}
		w.audits, w.auditSecs, w.failedScrapes = m.scr.between(prev.at, s.at)
		last := steady == b.cfg.steady || k == b.cfg.maxStart+b.cfg.steady
		if !named || last {
			w.api = b.apiView(m)
			named = named || (w.api.err == nil && w.api.named == b.cfg.consumers)
		}
		if last {
			m.scr.halt()
			m.scr = nil
			m.stop()
			w.serveWarns = warnings(m.log)
		}
		fmt.Println(w.line())
		out = append(out, w)
		prev = s
	}
	if m.scr != nil {
		m.scr.halt()
		m.stop()
	}
	return out
}

// settle waits until every server has worked through the system requests
// queued before (a VARZ ping is answered on the same queue as CONNZ).
func (b *bench) settle() {
	must(b.h, natstest.Eventually(2*time.Minute, func() error {
		msgs, err := natstest.Gather(b.sysConn, "$SYS.REQ.SERVER.PING.VARZ", nil, len(servers), time.Second)
		if err != nil {
			return err
		}
		if len(msgs) < len(servers) {
			return fmt.Errorf("%d of %d servers answered VARZ within 1 s", len(msgs), len(servers))
		}
		return nil
	}))
}

// warnings are serve's WARN and ERROR log lines, counted by message.
func warnings(log string) []string {
	b, err := os.ReadFile(log)
	if err != nil {
		return nil
	}
	count := map[string]int{}
	for line := range strings.Lines(string(b)) {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			continue
		}
		msg := line
		if i := strings.Index(line, "msg="); i >= 0 {
			msg = line[i:]
		}
		msg = strings.TrimSpace(msg)
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		count[msg]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%d× %s", count[k], k))
	}
	return out
}

// apiView is what serve's API says of the shards and the pulls after a
// window.
type apiView struct {
	consumers, pinned, pulled, named, holders, two int
	dropped                                        uint64
	watched                                        float64
	heardPulls                                     bool
	err                                            error
}

func (b *bench) apiView(m *measured) *apiView {
	v := &apiView{}
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string, into any) error {
		resp, err := client.Get(m.base + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(into)
	}
	var report struct {
		Pulls *struct {
			Watched float64 `json:"watched_seconds"`
			Dropped uint64  `json:"dropped"`
		} `json:"pulls"`
	}
	if v.err = get("/api/v1/report", &report); v.err != nil {
		return v
	}
	if report.Pulls != nil {
		v.heardPulls, v.watched, v.dropped = true, report.Pulls.Watched, report.Pulls.Dropped
	}
	for s := range b.cfg.streams {
		var batch struct {
			Consumers []struct {
				Pull *struct {
					PinnedID string `json:"pinned_client_id"`
					Pullers  []struct {
						Name   string `json:"name"`
						Holder bool   `json:"pin_holder"`
					} `json:"pullers"`
				} `json:"pull"`
			} `json:"consumers"`
		}
		if v.err = get("/api/v1/consumers/APP/"+streamName(s), &batch); v.err != nil {
			return v
		}
		for _, c := range batch.Consumers {
			v.consumers++
			if c.Pull == nil {
				continue
			}
			if c.Pull.PinnedID != "" {
				v.pinned++
			}
			if len(c.Pull.Pullers) > 0 {
				v.pulled++
			}
			if len(c.Pull.Pullers) > 1 {
				v.two++
			}
			named, holder := true, false
			for _, p := range c.Pull.Pullers {
				named = named && p.Name != ""
				holder = holder || p.Holder
			}
			if len(c.Pull.Pullers) > 0 && named {
				v.named++
			}
			if holder {
				v.holders++
			}
		}
	}
	return v
}

// pct is d as a percentage of one core over over.
func pct(d, over time.Duration) float64 { return 100 * d.Seconds() / over.Seconds() }

func (w window) serversTotal() time.Duration { return w.servers[0] + w.servers[1] + w.servers[2] }

func (w window) line() string {
	var b strings.Builder
	label := fmt.Sprintf("round %d %s", w.round, w.cond.name)
	if w.label != "" {
		label = w.label
	}
	fmt.Fprintf(&b, "%-44s %5.1fs  servers %5.1f%% (n1 %.1f, n2 %.1f, n3 %.1f)", label, w.dur.Seconds(),
		pct(w.serversTotal(), w.dur), pct(w.servers[0], w.dur), pct(w.servers[1], w.dur), pct(w.servers[2], w.dur))
	if w.cond.key != "A" {
		fmt.Fprintf(&b, "  process %.2f%% rss %.0f MiB (peak %.0f)", pct(w.proc, w.dur), mib(w.rss), mib(w.hwm))
	}
	fmt.Fprintf(&b, "  pullers %.1f%%  machine %.0f%%  pulls sent %.0f/s", pct(w.self, w.dur), pct(w.machine, w.dur), float64(w.sent)/w.dur.Seconds())
	if w.connIn >= 0 {
		fmt.Fprintf(&b, "  its connection published %d, was sent %d msgs (%.0f/s), %.1f MB", w.connIn, w.connOut,
			float64(w.connOut)/w.dur.Seconds(), float64(w.connOutBytes)/1e6)
	} else if w.cond.key != "A" {
		fmt.Fprint(&b, "  its connection: CONNZ did not say")
	}
	if w.slow != 0 {
		fmt.Fprintf(&b, "  slow consumers %d", w.slow)
	}
	if w.cond.key == "B" || w.cond.key == "b" || w.cond.key == "C" {
		fmt.Fprintf(&b, "  audits %d %s", w.audits, fmtSecs(w.auditSecs))
		if w.failedScrapes > 0 {
			fmt.Fprintf(&b, " (%d scrapes failed)", w.failedScrapes)
		}
	}
	if len(w.errs) > 0 {
		fmt.Fprintf(&b, "  puller errors: %s", fmtErrs(w.errs))
	}
	if w.warm != nil {
		fmt.Fprintf(&b, "\n        warm-up %.1fs: servers %.1f%% (%.1f CPU-s), serve %.1f%% (%.1f CPU-s, peak RSS %.0f MiB), its connection published %d, was sent %d msgs, %.1f MB",
			w.warm.dur.Seconds(), pct(w.warm.serversTotal(), w.warm.dur), w.warm.serversTotal().Seconds(), pct(w.warm.proc, w.warm.dur), w.warm.proc.Seconds(),
			mib(w.warm.hwm), w.warm.connIn, w.warm.connOut, float64(w.warm.connOutBytes)/1e6)
		if w.warm.slow != 0 {
			fmt.Fprintf(&b, ", slow consumers %d", w.warm.slow)
		}
		if len(w.warm.errs) > 0 {
			fmt.Fprintf(&b, ", puller errors: %s", fmtErrs(w.warm.errs))
		}
	}
	if v := w.api; v != nil {
		if v.err != nil {
			fmt.Fprintf(&b, "\n        API: %v", v.err)
		} else {
			fmt.Fprintf(&b, "\n        API after the window: %d consumers, %d pinned (leader)", v.consumers, v.pinned)
			if v.heardPulls {
				fmt.Fprintf(&b, "; pulls watched %.0fs, dropped %d; %d with pullers heard, %d all named by CONNZ, %d with the holder heard, %d with two or more",
					v.watched, v.dropped, v.pulled, v.named, v.holders, v.two)
			}
		}
	}
	if w.sub != nil {
		fmt.Fprintf(&b, "\n        subscriber over its life: %d pulls of %d consumers, %d of them pulled with a pin id, %d dropped",
			w.sub.Msgs, w.sub.Consumers, w.sub.Pinned, w.sub.Dropped)
	}
	for _, l := range w.serveWarns {
		fmt.Fprintf(&b, "\n        serve logged %s", l)
	}
	return b.String()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func fmtSecs(s []float64) string {
	if len(s) == 0 {
		return ""
	}
	var p []string
	for _, v := range s {
		p = append(p, fmt.Sprintf("%.1fs", v))
	}
	return "(" + strings.Join(p, ", ") + ")"
}

func fmtErrs(m map[string]int64) string {
	var p []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p = append(p, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(p, ", ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// printTables prints, per condition, the medians of its windows and the
// servers' extra CPU over (A); then (B)'s start window by window; then
// each server's share.
func printTables(results []window, conds []condition) {
	byCond := map[string][]window{}
	byRound := map[int]map[string]window{}
	for _, w := range results {
		byCond[w.cond.key] = append(byCond[w.cond.key], w)
		if w.round > 0 && w.cond.key != "b" {
			if byRound[w.round] == nil {
				byRound[w.round] = map[string]window{}
			}
			byRound[w.round][w.cond.key] = w
		}
	}
	medOf := func(ws []window, f func(window) float64) float64 {
		var v []float64
		for _, w := range ws {
			v = append(v, f(w))
		}
		return median(v)
	}
	serversPct := func(w window) float64 { return pct(w.serversTotal(), w.dur) }
	baseA := medOf(byCond["A"], serversPct)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "condition\twindows\tservers' CPU (% of one core)\textra over (A)\tratio to (A)\tservers' extra CPU-s per hour\tprocess CPU (%)\tprocess CPU-s per hour\tprocess RSS (MiB)\tpulls sent /s\tmsgs to the process /s\taudits per window\tmachine busy (%)")
	for _, c := range conds {
		ws := byCond[c.key]
		if len(ws) == 0 {
			continue
		}
		// Paired with (A) of the same round where there is one; (B)'s
		// windows are not in the rounds: the difference of the medians.
		var extras []float64
		for _, w := range ws {
			if a, ok := byRound[w.round]["A"]; ok && w.round > 0 {
				extras = append(extras, serversPct(w)-serversPct(a))
			}
		}
		extra, paired := median(extras), "(paired)"
		if len(extras) == 0 {
			extra, paired = medOf(ws, serversPct)-baseA, "(of medians)"
		}
		ratio := 0.0
		if baseA > 0 {
			ratio = medOf(ws, serversPct) / baseA
		}
		proc := medOf(ws, func(w window) float64 { return pct(w.proc, w.dur) })
		toProc, procS, procH, rssS, extraS, extraH := "-", "-", "-", "-", "-", "-"
		if c.key != "A" {
			toProc = fmt.Sprintf("%.0f", medOf(ws, func(w window) float64 { return float64(max(w.connOut, 0)) / w.dur.Seconds() }))
			procS, procH = fmt.Sprintf("%.2f", proc), fmt.Sprintf("%.0f", proc*36)
			rssS = fmt.Sprintf("%.0f", medOf(ws, func(w window) float64 { return mib(w.rss) }))
			extraS, extraH = fmt.Sprintf("%+.2f %s", extra, paired), fmt.Sprintf("%+.0f", extra*36)
		}
		audits := "-"
		if c.key == "B" || c.key == "C" {
			audits = fmt.Sprintf("%.0f", medOf(ws, func(w window) float64 { return float64(w.audits) }))
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.2f\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%.0f\n", c.name, len(ws), medOf(ws, serversPct), extraS, ratio, extraH,
			procS, procH, rssS, medOf(ws, func(w window) float64 { return float64(w.sent) / w.dur.Seconds() }), toProc, audits,
			medOf(ws, func(w window) float64 { return pct(w.machine, w.dur) }))
	}
	_ = tw.Flush()

	if start := byCond["b"]; len(start) > 0 {
		fmt.Println()
		tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "(B) from serve's start\tlength\tservers' CPU (%)\textra over (A) median (CPU-s)\tserve CPU (%)\tserve peak RSS (MiB)\tits connection published\twas sent (MB)\taudits\tpullers named after\tslow consumers\tpuller errors")
		var extraSum, serveSum float64
		for _, w := range start {
			extra := (serversPct(w) - baseA) * w.dur.Seconds() / 100
			extraSum += extra
			serveSum += w.proc.Seconds()
			named := "?"
			if w.api != nil && w.api.err == nil {
				named = fmt.Sprintf("%d of %d", w.api.named, w.api.consumers)
			}
			fmt.Fprintf(tw, "window %d\t%.0fs\t%.1f\t%+.1f\t%.2f\t%.0f\t%d\t%.1f\t%d\t%s\t%d\t%s\n", w.round, w.dur.Seconds(), serversPct(w), extra,
				pct(w.proc, w.dur), mib(w.hwm), w.connIn, float64(w.connOutBytes)/1e6, w.audits, named, w.slow, fmtErrs(w.errs))
		}
		_ = tw.Flush()
		fmt.Printf("over those %d windows: the servers %+.0f CPU-s over (A)'s median, serve %.1f CPU-s\n", len(start), extraSum, serveSum)
	}

	fmt.Println()
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "condition\tn1 (%)\tn2 (%)\tn3 (%)\tpullers (this program, %)")
	for _, c := range append(slices.Clone(conds), condBStart) {
		ws := byCond[c.key]
		if len(ws) == 0 {
			continue
		}
		var per [3]float64
		for i := range servers {
			per[i] = medOf(ws, func(w window) float64 { return pct(w.servers[i], w.dur) })
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\n", c.name, per[0], per[1], per[2],
			medOf(ws, func(w window) float64 { return pct(w.self, w.dur) }))
	}
	_ = tw.Flush()
}
