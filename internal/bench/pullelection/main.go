// Command pullelection measures what a nats.go puller with Consume's
// default options sees while its consumer elects a new leader, with and
// without the auditor listening to the pulls (issue 34; docs/pulls.md,
// Limits, "No "no responders" while the auditor listens").
//
// Three 2.15.3 servers on loopback hold one R3 stream and R3 consumers:
// shard-0 and shard-1 (pinned_client, as natstest.AddShards makes them) and
// fetcher (no priority policy). Each shard has one puller that consumes it
// with jetstream Consume and its defaults (30 s expiry, 15 s heartbeat);
// a publisher (on n2) sends a message to each shard's subject every 50 ms.
// A round forces an election of the consumer under measurement, led by n1,
// and measures the delivery gap: from the event to the first message
// published at or after it that its puller receives. The stream and the
// meta group are led by n2 throughout. The conditions alternate round by
// round: (a) nobody subscribes to the system account's import of the pull
// subject; (b) a system-account connection (on n2) runs collect.WatchPulls.
//
// The events:
//
//   - step-down: shard-0's leader steps down; its puller is on n3.
//   - kill leader: n1, shard-0's leader, is killed (and started again
//     after the round); the puller is on n3.
//   - kill puller's server: n1, leader of shard-1 and of fetcher, is
//     killed; shard-1's puller is connected to n1, reconnects to another
//     server and pulls again while shard-1 has no leader. A client on n3
//     sends two Fetches (nats.go's defaults: 30 s expiry, 5 s heartbeat) to
//     fetcher, which has no leader then: one right after the kill, one once
//     n3 has dropped its routes to n1.
//
// Run it from the module root:
//
//	go run ./internal/bench/pullelection [-rounds 6]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/internal/bench/procstat"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

const (
	stream  = "WORK"
	subject = "work"
	cluster = "bench"
	// leader leads the consumer under measurement before each event, and
	// is killed in the kill rounds.
	leader = "n1"
	// steady leads the stream, the meta group and the consumers not under
	// measurement; the publisher and the watch connect to it.
	steady = "n2"
	// survivor is where the puller of shard-0 and the probes connect.
	survivor = "n3"
	// fetcher is the consumer without priority policy that one Fetch
	// pulls in the kill-puller's-server rounds.
	fetcher = "fetcher"
	// publishEvery is the publisher's interval.
	publishEvery = 50 * time.Millisecond
	// pinTimeout is the shards' priority_timeout: the servers' default.
	pinTimeout = 2 * time.Minute
	// probeSubject is a pull subject no consumer listens to: a request to
	// it is answered 503 unless someone subscribes to the imported pulls.
	probeSubject = "$JS.API.CONSUMER.MSG.NEXT.NOSUCH.probe"
)

var servers = []string{"n1", "n2", "n3"}

func main() {
	rounds := flag.Int("rounds", 6, "rounds per condition per event")
	resumeWait := flag.Duration("resume-wait", 100*time.Second, "how long a round waits for delivery to resume")
	flag.Parse()
	h := &natstest.Program{}
	code := h.Run(func() int { return run(h, *rounds, *resumeWait) })
	h.RunCleanups()
	os.Exit(code)
}

// event is what a round does, and to which consumer.
type event struct {
	name string
	// shard is the consumer under measurement, led by leader at the
	// event; at is where its puller connects.
	shard, at string
	// fetch sends Fetches to fetcher after the event, which fetcher's
	// leader must then be leader for.
	fetch bool
	do    func() error
}

// condition is whether the auditor listens to the pulls during the round.
type condition struct {
	name   string
	listen bool
}

var conditions = []condition{{"(a) nobody listens", false}, {"(b) WatchPulls listens", true}}

// round is one measurement.
type round struct {
	event, condition string
	n                int
	at               time.Time
	gap              time.Duration
	resumed          bool
	newLeader        string
	errs             []errEvent
	// fetches are how the Fetches ended, in the rounds that send them:
	// by fetchWhen.
	fetches [2]fetchResult
}

// fetchWhen says when each Fetch of a round is sent.
var fetchWhen = [2]string{"right after the kill", "once n3 dropped its routes to n1"}

// fetchResult is how one Fetch ended: sent how long after the event, and
// ended how long after it was sent.
type fetchResult struct {
	ended      string
	sent, took time.Duration
}

// bench is the system and its clients.
type bench struct {
	h          *natstest.Program
	sys        *natstest.System
	app        *nats.Conn // on steady: the API requests
	sysConn    *nats.Conn // on steady: the meta leader
	watchConn  *nats.Conn // on steady: the auditor's watch
	probeConn  *nats.Conn // on survivor
	fetchCons  jetstream.Consumer
	pullers    map[string]*puller
	resumeWait time.Duration
}

func run(h *natstest.Program, rounds int, resumeWait time.Duration) int {
	started := time.Now()
	fmt.Printf("pullelection: nats-server %s ×3 on loopback, nats.go v1.55.0 Consume with its defaults (expiry %s, heartbeat %s)\n",
		natstest.New, jetstream.DefaultExpires, jetstream.DefaultExpires/2)
	fmt.Printf("started %s, load average %s\n", started.UTC().Format(time.RFC3339), procstat.Loadavg())
	var specs []natstest.Spec
	for _, n := range servers {
		specs = append(specs, natstest.ShowingPulls(natstest.Node(n, natstest.New, cluster)))
	}
	b := &bench{h: h, sys: natstest.Start(h, specs...), pullers: map[string]*puller{}, resumeWait: resumeWait}
	sys := b.sys
	b.app = sys.Connect(steady, natstest.AppUser, natstest.AppPassword)
	b.sysConn = sys.Connect(steady, natstest.SysUser, natstest.SysPassword)
	b.watchConn = sys.Connect(steady, natstest.SysUser, natstest.SysPassword, nats.Name("auditor-watch"))
	b.probeConn = sys.Connect(survivor, natstest.AppUser, natstest.AppPassword, nats.Name("probe"))
	must(h, natstest.AddStream(b.app, server.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}, Replicas: 3, Storage: server.FileStorage}))
	shards, err := natstest.AddShards(b.app, stream, subject, 2, 3, pinTimeout)
	must(h, err)
	must(h, natstest.AddConsumer(b.app, stream, server.ConsumerConfig{Durable: fetcher, FilterSubject: subject + ".0",
		AckPolicy: server.AckExplicit, Replicas: 3}))
	must(h, natstest.MoveMetaLeader(b.sysConn, steady, servers...))
	must(h, natstest.MoveStreamLeader(b.app, stream, steady))

	// The publisher: one message to each shard every publishEvery, its
	// payload the time it was sent.
	pubConn := sys.Connect(steady, natstest.AppUser, natstest.AppPassword, nats.Name("publisher"))
	stopPub := make(chan struct{})
	pubDone := make(chan struct{})
	go func() {
		defer close(pubDone)
		tick := time.NewTicker(publishEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopPub:
				return
			case <-tick.C:
				now := []byte(strconv.FormatInt(time.Now().UnixNano(), 10))
				for i := range shards {
					_ = pubConn.Publish(subject+"."+strconv.Itoa(i), now)
				}
			}
		}
	}()
	defer func() { close(stopPub); <-pubDone }()

	events := []event{
		{name: "step-down", shard: shards[0], at: survivor, do: func() error { return stepDown(b.app, shards[0]) }},
		{name: "kill leader", shard: shards[0], at: survivor, do: func() error { sys.Kill(leader); return nil }},
		{name: "kill puller's server", shard: shards[1], at: leader, fetch: true, do: func() error { sys.Kill(leader); return nil }},
	}
	// The pullers, each on the server of the first event that measures it.
	for _, ev := range events {
		if b.pullers[ev.shard] == nil {
			b.pullers[ev.shard] = &puller{shard: ev.shard}
			b.startPuller(b.pullers[ev.shard], ev.at)
		}
	}
	fc := sys.Connect(survivor, natstest.AppUser, natstest.AppPassword, nats.Name("fetch"))
	fjs, err := jetstream.New(fc)
	must(h, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	b.fetchCons, err = fjs.Consumer(ctx, stream, fetcher)
	cancel()
	must(h, err)

	var results []round
	for _, ev := range events {
		for i := 0; i < 2*rounds; i++ {
			r := b.round(ev, conditions[i%2], i/2+1)
			results = append(results, r)
			fetched := ""
			if ev.fetch {
				fetched = fmt.Sprintf("  Fetches: %s; %s", fmtFetch(r.fetches[0]), fmtFetch(r.fetches[1]))
			}
			fmt.Printf("%-21s %-23s round %d: gap %7s  new leader %-3s  puller saw: %s%s\n",
				r.event, r.condition, r.n, fmtGap(r), orDash(r.newLeader), fmtErrs(r.errs, r.at), fetched)
		}
	}

	fmt.Printf("\nended %s, load average %s; took %s\n\n", time.Now().UTC().Format(time.RFC3339), procstat.Loadavg(), time.Since(started).Round(time.Second))
	printTable(results, events)
	fmt.Println()
	printFetchTable(results, events)
	return 0
}

// round sets the system up the same way for every round, forces the
// event and measures.
func (b *bench) round(ev event, cond condition, n int) round {
	h, sys := b.h, b.sys
	p := b.pullers[ev.shard]
	if !sys.Running(leader) {
		sys.Restart(leader, "")
	}
	must(h, natstest.MoveMetaLeader(b.sysConn, steady, servers...))
	must(h, natstest.MoveStreamLeader(b.app, stream, steady))
	// The consumer under measurement (and fetcher, when fetched) led by
	// leader, every other one by steady: the event elects only those.
	for _, c := range append(slices.Sorted(maps.Keys(b.pullers)), fetcher) {
		to := steady
		if c == ev.shard || (c == fetcher && ev.fetch) {
			to = leader
		}
		must(h, natstest.MoveConsumerLeader(b.app, stream, c, to))
	}
	if p.server() != ev.at {
		// A puller whose server was killed reconnected elsewhere: a new
		// process on its server, as a restarted pod.
		b.startPuller(p, ev.at)
	}
	if !p.flowing(b.resumeWait) {
		h.Logf("round %d of %s: no delivery %s after the setup; starting Consume again", n, ev.name, b.resumeWait)
		b.startPuller(p, ev.at)
		if !p.flowing(b.resumeWait) {
			h.Fatalf("round %d of %s: no delivery after starting Consume again", n, ev.name)
		}
	}

	var watch *collect.PullWatch
	if cond.listen {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		watch, err = collect.WatchPulls(ctx, b.watchConn, 0)
		cancel()
		must(h, err)
	}
	// What the servers do with a pull no consumer leader takes, seen from
	// the puller's server and from the survivor: answer 503, or deliver it
	// to the watch.
	must(h, natstest.Eventually(10*time.Second, func() error { return probe(b.probeConn, cond.listen) }))
	must(h, natstest.Eventually(10*time.Second, func() error { return probe(p.conn, cond.listen) }))
	if !p.flowing(b.resumeWait) {
		h.Fatalf("round %d of %s: no delivery before the event", n, ev.name)
	}

	at := time.Now()
	r := round{event: ev.name, condition: cond.name, n: n, at: at}
	resumed := p.expect(at)
	must(h, ev.do())
	var fetching sync.WaitGroup
	if ev.fetch {
		fetching.Go(func() { r.fetches[0] = fetchOnce(b.fetchCons, at) })
		fetching.Go(func() {
			must(h, natstest.Eventually(10*time.Second, func() error { return routesGone(b.sysConn, b.probeConn.ConnectedServerId(), leader) }))
			r.fetches[1] = fetchOnce(b.fetchCons, at)
		})
	}
	select {
	case t := <-resumed:
		r.gap, r.resumed = t.Sub(at), true
	case <-time.After(b.resumeWait):
		r.gap = b.resumeWait
	}
	if r.resumed {
		// Delivery goes on for a second: the errors reported just after
		// the first message belong to this round too.
		p.deliveredFrom(time.Now().Add(time.Second), b.resumeWait)
	}
	fetching.Wait()
	r.errs = p.errsSince(at)
	if ci, err := natstest.ConsumerInfo(b.app, stream, ev.shard); err == nil && ci.Cluster != nil {
		r.newLeader = ci.Cluster.Leader
	}
	if watch != nil {
		watch.Stop()
		must(h, b.watchConn.Flush())
	}
	if !r.resumed {
		b.startPuller(p, ev.at)
	}
	return r
}

func must(h *natstest.Program, err error) {
	if err != nil {
		h.Fatal(err)
	}
}

// startPuller (re)starts p: a new connection to the named server and a
// Consume of p's shard with nats.go's defaults, in the shards' priority
// group. A pin its previous process held is dropped, as when that
// process's pin timed out.
func (b *bench) startPuller(p *puller, at string) {
	h := b.h
	p.stop()
	nc := b.sys.Connect(at, natstest.AppUser, natstest.AppPassword, nats.Name("puller-"+p.shard),
		nats.CustomInboxPrefix("_INBOX_"+p.shard))
	js, err := jetstream.New(nc)
	must(h, err)
	must(h, b.sys.WaitPullable(at, b.sys.AccountKey(natstest.AppUser), stream, p.shard, 30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, stream, p.shard)
	must(h, err)
	if p.conn != nil {
		must(h, unpin(b.app, p.shard))
	}
	cc, err := cons.Consume(p.onMsg, jetstream.PullPriorityGroup(natstest.ShardGroup), jetstream.ConsumeErrHandler(p.onErr))
	must(h, err)
	p.mu.Lock()
	p.conn, p.cc = nc, cc
	p.mu.Unlock()
}

// stepDown asks the consumer's leader to step down, to no server in
// particular.
func stepDown(nc *nats.Conn, shard string) error {
	return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, shard), nil)
}

// unpin drops the shard's pin.
func unpin(nc *nats.Conn, shard string) error {
	return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.UNPIN.%s.%s", stream, shard), server.JSApiConsumerUnpinRequest{Group: natstest.ShardGroup})
}

func apiRequest(nc *nats.Conn, subj string, req any) error {
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return err
		}
	}
	msg, err := nc.Request(subj, body, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %w", subj, err)
	}
	var resp server.ApiResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("%s: %w", subj, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", subj, resp.Error.Error())
	}
	return nil
}

// probe sends a pull to a consumer that does not exist and checks what the
// servers do with it: a 503 when listening is false, nothing (delivered
// to the watch) when it is true.
func probe(nc *nats.Conn, listening bool) error {
	_, err := nc.Request(probeSubject, []byte(`{"batch":1}`), 500*time.Millisecond)
	switch {
	case errors.Is(err, nats.ErrNoResponders) && !listening:
		return nil
	case errors.Is(err, nats.ErrTimeout) && listening:
		return nil
	case err == nil:
		return errors.New("the probe pull was answered")
	}
	return fmt.Errorf("the probe pull through %s (listening %t): %w", nc.ConnectedServerName(), listening, err)
}

// fetchOnce sends one Fetch of one message with nats.go's defaults and
// says how it ended; at is the round's event.
func fetchOnce(c jetstream.Consumer, at time.Time) fetchResult {
	sent := time.Now()
	r := fetchResult{sent: sent.Sub(at)}
	batch, err := c.Fetch(1)
	if err != nil {
		r.ended = "not sent: " + errKind(err)
		return r
	}
	got := false
	for m := range batch.Messages() {
		_ = m.Ack()
		got = true
	}
	r.took = time.Since(sent)
	switch {
	case got:
		r.ended = "a message"
	case batch.Error() != nil:
		r.ended = errKind(batch.Error())
	default:
		r.ended = "nothing (expired)"
	}
	return r
}

// routesGone says whether the server with the given id (asked over nc, a
// system-account connection) has no route left to the named server.
func routesGone(nc *nats.Conn, id, name string) error {
	msg, err := nc.Request("$SYS.REQ.SERVER."+id+".ROUTEZ", []byte("{}"), 2*time.Second)
	if err != nil {
		return err
	}
	var resp server.ServerAPIRoutezResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return err
	}
	if resp.Data == nil {
		return fmt.Errorf("ROUTEZ: %v", resp.Error)
	}
	for _, rt := range resp.Data.Routes {
		if rt.RemoteName == name {
			return fmt.Errorf("a route to %s is still up", name)
		}
	}
	return nil
}

// errEvent is one error the puller's ConsumeErrHandler reported.
type errEvent struct {
	at   time.Time
	kind string
}

// puller is one process consuming a shard: it receives the messages and
// the errors of its Consume, and tells when a message published at or after
// a given time arrives.
type puller struct {
	shard string

	mu   sync.Mutex
	conn *nats.Conn
	cc   jetstream.ConsumeContext
	from int64 // wait for a message published at or after this (UnixNano)
	ch   chan time.Time
	errs []errEvent
}

func (p *puller) onMsg(m jetstream.Msg) {
	now := time.Now()
	_ = m.Ack()
	sent, err := strconv.ParseInt(string(m.Data()), 10, 64)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.ch != nil && sent >= p.from {
		p.ch <- now
		p.ch = nil
	}
}

func (p *puller) onErr(_ jetstream.ConsumeContext, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, errEvent{at: time.Now(), kind: errKind(err)})
}

// stop ends p's Consume and closes its connection.
func (p *puller) stop() {
	p.mu.Lock()
	cc, nc := p.cc, p.conn
	p.mu.Unlock()
	if cc != nil {
		cc.Stop()
	}
	if nc != nil {
		nc.Close()
	}
}

// server names the server p is connected to.
func (p *puller) server() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn.ConnectedServerName()
}

// expect returns a channel that receives the time the puller receives its
// first message published at or after from.
func (p *puller) expect(from time.Time) <-chan time.Time {
	ch := make(chan time.Time, 1)
	p.mu.Lock()
	p.from, p.ch = from.UnixNano(), ch
	p.mu.Unlock()
	return ch
}

// flowing waits up to wait for a message published from now on.
func (p *puller) flowing(wait time.Duration) bool { return p.deliveredFrom(time.Now(), wait) }

// deliveredFrom waits up to wait for a message published at or after t.
func (p *puller) deliveredFrom(t time.Time, wait time.Duration) bool {
	select {
	case <-p.expect(t):
		return true
	case <-time.After(wait):
		return false
	}
}

// errsSince are the errors reported since t.
func (p *puller) errsSince(t time.Time) []errEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []errEvent
	for _, e := range p.errs {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// errKind names an error of the Consume by the status behind it.
func errKind(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrConsumerLeadershipChanged):
		return "409 Leadership Change"
	case errors.Is(err, nats.ErrNoResponders):
		return "503 no responders"
	case errors.Is(err, jetstream.ErrNoHeartbeat):
		return "missed heartbeats"
	case errors.Is(err, jetstream.ErrPinIDMismatch):
		return "423 pin id mismatch"
	case errors.Is(err, nats.ErrConnectionReconnecting):
		return "reconnecting"
	}
	return err.Error()
}

func fmtGap(r round) string {
	if !r.resumed {
		return ">" + r.gap.String()
	}
	return fmt.Sprintf("%.2fs", r.gap.Seconds())
}

func fmtFetch(f fetchResult) string {
	return fmt.Sprintf("sent at %.3fs, %s after %.2fs", f.sent.Seconds(), f.ended, f.took.Seconds())
}

// fmtErrs lists errors with their time after the round's event at.
func fmtErrs(errs []errEvent, at time.Time) string {
	if len(errs) == 0 {
		return "nothing"
	}
	var parts []string
	for _, e := range errs {
		parts = append(parts, fmt.Sprintf("%s at %.2fs", e.kind, e.at.Sub(at).Seconds()))
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printTable prints, per event and condition, the median and the largest
// gap and what the puller's error handler reported in how many rounds.
func printTable(results []round, events []event) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "event\tcondition\trounds\tmedian gap\tmax gap\tthe puller's ConsumeErrHandler reported (in how many rounds)")
	for _, ev := range events {
		for _, c := range conditions {
			var gaps []time.Duration
			kinds := map[string]int{}
			unresumed := 0
			for _, r := range results {
				if r.event != ev.name || r.condition != c.name {
					continue
				}
				gaps = append(gaps, r.gap)
				if !r.resumed {
					unresumed++
				}
				seen := map[string]bool{}
				for _, e := range r.errs {
					if !seen[e.kind] {
						seen[e.kind] = true
						kinds[e.kind]++
					}
				}
				if len(r.errs) == 0 {
					kinds["nothing"]++
				}
			}
			if len(gaps) == 0 {
				continue
			}
			slices.Sort(gaps)
			maxGap := fmt.Sprintf("%.2fs", gaps[len(gaps)-1].Seconds())
			if unresumed > 0 {
				maxGap = fmt.Sprintf(">%s (%d rounds did not resume)", gaps[len(gaps)-1], unresumed)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2fs\t%s\t%s\n", ev.name, c.name, len(gaps), median(gaps).Seconds(), maxGap, counted(kinds))
		}
	}
	_ = tw.Flush()
}

// printFetchTable prints how the Fetches sent after the event ended: when
// they were sent (the median), how long after that they returned, and
// with what.
func printFetchTable(results []round, events []event) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "event\tFetch sent\tcondition\trounds\tsent at (median)\tmedian return\tmax return\tended with (in how many rounds)")
	for _, ev := range events {
		if !ev.fetch {
			continue
		}
		for i, when := range fetchWhen {
			for _, c := range conditions {
				var sent, took []time.Duration
				ended := map[string]int{}
				for _, r := range results {
					if r.event == ev.name && r.condition == c.name {
						f := r.fetches[i]
						sent = append(sent, f.sent)
						took = append(took, f.took)
						ended[f.ended]++
					}
				}
				if len(took) == 0 {
					continue
				}
				slices.Sort(sent)
				slices.Sort(took)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.3fs\t%.2fs\t%.2fs\t%s\n", ev.name, when, c.name, len(took),
					median(sent).Seconds(), median(took).Seconds(), took[len(took)-1].Seconds(), counted(ended))
			}
		}
	}
	_ = tw.Flush()
}

func counted(m map[string]int) string {
	var said []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		said = append(said, fmt.Sprintf("%s (%d)", k, m[k]))
	}
	return strings.Join(said, ", ")
}

// median of sorted durations.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
