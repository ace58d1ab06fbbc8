package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/klauspost/compress/s2"
	"github.com/nats-io/nats.go"

	// A drop-in for encoding/json, faster on the STATSZ and LEAFZ replies
	// on the audit's path; JSZ has a decoder of its own (jszdecode.go).
	json "github.com/segmentio/encoding/json"
)

// ErrNotSystemAccount means $SYS requests found no responders: the user the
// audit connected as is not in the system account.
var ErrNotSystemAccount = errors.New("$SYS requests get no responders: the user is not in the system account")

// concurrency is how many servers are asked for LEAFZ and JSZ at once.
const concurrency = 16

// Defaults for Options.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultJSZPageSize = 1024
	// DefaultMaxReplyBytes bounds one reply the audit decodes. The largest
	// is a JSZ page with configs, which grows with the consumers a server
	// hosts (BENCHMARKS.md has the bytes per consumer).
	DefaultMaxReplyBytes = 64 << 20
)

// Options tune one audit.
type Options struct {
	// Timeout bounds the whole audit: it stops waiting for servers that did
	// not answer by then and reports them.
	Timeout time.Duration
	// Expect is a lower bound on the number of servers that must answer.
	Expect int
	// JSZPageSize is how many accounts one JSZ request asks a server for.
	JSZPageSize int
	// MaxReplyBytes drops (as AUDIT_INCOMPLETE) any reply larger than this
	// instead of decoding it; 0 means DefaultMaxReplyBytes.
	MaxReplyBytes int
	// MaxBytesInFlight bounds the JSZ reply bytes asked for and not yet
	// read, as each server's counts estimate them: servers whose replies
	// would together exceed it are asked in turn (see
	// DefaultMaxBytesInFlight); 0 means DefaultMaxBytesInFlight.
	MaxBytesInFlight int
	// Compress asks servers for snappy-compressed replies.
	Compress bool
	// OnlyServerID, when set, sends LEAFZ and JSZ to that server alone: a
	// sidecar auditing its own server still takes the census of all of them
	// (it needs every peer's version) but inventories only its own.
	OnlyServerID string
	// Events, when set, feeds the audit the servers' heartbeats and
	// SHUTDOWNs while it runs (see Events).
	Events *Events
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.JSZPageSize <= 0 {
		o.JSZPageSize = DefaultJSZPageSize
	}
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if o.MaxBytesInFlight <= 0 {
		o.MaxBytesInFlight = DefaultMaxBytesInFlight
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Collect audits every server reachable over $SYS from nc and returns what it
// saw. It pings STATSZ once, and with it JSZ's counts; each server that
// answers is then asked, on its own subject, for LEAFZ and (with JetStream)
// its JSZ pages, while the ping stays open for the servers still expected.
// It returns as soon as every expected server has answered, or when Timeout
// has passed: what did not answer by then is recorded in the snapshot, not
// returned as an error.
func Collect(ctx context.Context, nc *nats.Conn, opts Options) (*snapshot.Snapshot, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// A request the user may not make is refused asynchronously (an -ERR
	// on the connection) and looks like silence: end the audit at once
	// with the cause rather than wait out the timeout for replies that
	// cannot come.
	ctx, deny := context.WithCancelCause(ctx)
	defer deny(nil)

	c := newCollection(ctx, nc, opts)
	lastErr := nc.LastError()
	denied := func() *PermissionError {
		err := nc.LastError()
		if err == nil || err == lastErr {
			return nil
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return auditDenied(err, inboxPrefix(nc), c.snap.Servers)
	}
	poll := time.NewTicker(permissionPoll)
	defer poll.Stop()

	inbox := nc.NewRespInbox()
	sub, err := nc.Subscribe(inbox, c.onStatsz)
	if err != nil {
		return nil, fmt.Errorf("subscribe for STATSZ replies: %w", err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // also unsubscribed below; a second call only errors
	if opts.Events != nil {
		defer opts.Events.subscribe(c)()
	}
	var summaries *nats.Subscription
	if c.broadcast {
		// Every server's JSZ summary in the census's round trip: a page is
		// then one round trip after the census reply, not two. Sent first,
		// so that a server can have its summary out before its STATSZ.
		summaryInbox := nc.NewRespInbox()
		summaries, err = nc.Subscribe(summaryInbox, c.onSummary)
		if err != nil {
			return nil, fmt.Errorf("subscribe for JSZ replies: %w", err)
		}
		defer summaries.Unsubscribe() //nolint:errcheck // also unsubscribed below; a second call only errors
		c.requests.Add(1)
		if err := nc.PublishMsg(summaryPing(summaryInbox)); err != nil {
			return nil, fmt.Errorf("publish %s: %w", PingEndpointSubject("JSZ"), err)
		}
	}
	c.requests.Add(1)
	if err := nc.PublishMsg(pingRequest(inbox)); err != nil {
		return nil, fmt.Errorf("publish %s: %w", PingSubject, err)
	}

wait:
	for {
		c.mu.Lock()
		done, noResponders := c.complete(), c.noResponders && len(c.seen) == 0
		c.mu.Unlock()
		switch {
		case noResponders:
			return nil, ErrNotSystemAccount
		case done:
			break wait
		}
		select {
		case <-c.wake:
		case <-poll.C:
		case <-ctx.Done():
			break wait
		}
		if perr := denied(); perr != nil {
			deny(perr)
			break wait
		}
	}
	_ = sub.Unsubscribe()
	if summaries != nil {
		_ = summaries.Unsubscribe()
	}

	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()

	if err := parentErr(ctx); err != nil {
		return nil, err
	}
	var perr *PermissionError
	if errors.As(context.Cause(ctx), &perr) {
		return nil, perr
	}
	// A request or subscription the user may not make fails asynchronously:
	// the audit sees only silence. Name the cause.
	if err := nc.LastError(); err != nil && err != lastErr && errors.Is(err, nats.ErrPermissionViolation) {
		c.problem("", "permissions", err)
	}
	return c.snapshot(), nil
}

func newCollection(ctx context.Context, nc *nats.Conn, opts Options) *collection {
	c := &collection{
		ctx:      ctx,
		nc:       nc,
		opts:     opts,
		log:      opts.Logger,
		seen:     map[string]bool{},
		names:    map[string]bool{},
		clusters: map[string]bool{},
		merged:   newMerger(),
		asked:    map[string]asking{},
		wake:     make(chan struct{}, 1),
		sem:      make(chan struct{}, concurrency),
		budget:   newReplyBudget(int64(opts.MaxBytesInFlight)),
		// A sidecar inventories its own server only: every other
		// server's summary would be read for nothing.
		broadcast: opts.OnlyServerID == "",
		summaries: map[string]*summaryReply{},
	}
	c.snap.Started = time.Now()
	c.snap.ExpectedCount = opts.Expect
	c.snap.ExpectedNames = map[string][]string{}
	c.snap.ExpectedClusters = map[string][]string{}
	return c
}

// parentErr reports a cancellation that came from the caller rather than
// from the audit's own timeout.
func parentErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return ctx.Err()
	}
	return nil
}

type collection struct {
	ctx      context.Context
	nc       *nats.Conn
	opts     Options
	log      *slog.Logger
	requests atomic.Int64
	sem      chan struct{}
	budget   *replyBudget
	wg       sync.WaitGroup
	wake     chan struct{}

	mu       sync.Mutex
	snap     snapshot.Snapshot
	seen     map[string]bool // server ids that answered STATSZ
	names    map[string]bool // their names
	clusters map[string]bool // their clusters
	merged   *merger
	// asked holds, by server id, the context of a server's requests.
	asked map[string]asking
	// broadcast is whether the census asks JSZ's counts of every server;
	// summaries holds, by server id, their replies, come or awaited.
	broadcast    bool
	summaries    map[string]*summaryReply
	inflight     int
	noResponders bool
	closed       bool
}

func (c *collection) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// complete reports whether every server the audit knows to expect answered
// and was fully asked. Callers hold c.mu.
func (c *collection) complete() bool {
	if len(c.seen) == 0 || c.inflight > 0 {
		return false
	}
	// The servers' own counts, unless a server that just came back explains
	// the surplus as Evaluate does (then waiting longer would only delay the
	// same verdict); never the caller's Expect.
	if n := len(c.seen); n < c.opts.Expect || (n < c.snap.ExpectedCount && !snapshot.StaleCount(c.snap.Servers)) {
		return false
	}
	for name := range c.snap.ExpectedNames {
		if !c.names[name] && !c.answeredAsPeer(name) {
			return false
		}
	}
	for name := range c.snap.ExpectedClusters {
		if !c.clusters[name] {
			return false
		}
	}
	for _, g := range c.merged.meta {
		if g.Size > snapshot.AnsweredIn(c.snap.Servers, g.Domain) {
			return false
		}
	}
	return true
}

// answeredAsPeer reports whether name is a RAFT peer known only by its id
// and that peer answered under its own name. Callers hold c.mu.
func (c *collection) answeredAsPeer(name string) bool {
	id, ok := snapshot.UnknownPeerID(name)
	if !ok {
		return false
	}
	for n := range c.names {
		if snapshot.PeerID(n) == id {
			return true
		}
	}
	return false
}

// expect records that namer named name as a peer. Callers hold c.mu.
func (c *collection) expect(name, namer string) {
	if name != "" && name != namer {
		addNamer(c.snap.ExpectedNames, name, namer)
	}
}

func addNamer(m map[string][]string, name, namer string) {
	if !slices.Contains(m[name], namer) {
		m[name] = append(m[name], namer)
	}
}

func (c *collection) problem(srv, request string, err error) {
	c.log.Debug("audit request failed", "server", srv, "request", request, "err", err)
	c.mu.Lock()
	c.snap.Problems = append(c.snap.Problems, snapshot.Problem{Server: srv, Request: request, Err: err.Error()})
	c.mu.Unlock()
}

// replyProblem is problem for a subscription's handler, which may still run
// after the audit closed (an Unsubscribe does not wait for it): a problem
// then is of no audit, and the snapshot may already have been taken.
func (c *collection) replyProblem(srv, request string, err error) {
	c.log.Debug("audit reply unusable", "server", srv, "request", request, "err", err)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.snap.Problems = append(c.snap.Problems, snapshot.Problem{Server: srv, Request: request, Err: err.Error()})
	}
}

func isNoResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header.Get("Status") == "503"
}

func (c *collection) onStatsz(m *nats.Msg) {
	defer c.signal()
	if isNoResponders(m) {
		c.mu.Lock()
		c.noResponders = true
		c.mu.Unlock()
		return
	}
	if err := c.checkSize(m.Data); err != nil {
		c.replyProblem("", "STATSZ", err)
		return
	}
	msg, srv, err := parseStatsz(m.Data)
	if err != nil {
		c.replyProblem(srv.Name, "STATSZ", err)
		return
	}
	if c.register(msg, srv, c.broadcast) {
		go c.askServer(srv)
	}
}

// heartbeat takes a server's heartbeat, sent while the audit runs, as its
// answer to the census if it has not answered under any id: the server that
// restarted after the ping never got it. A heartbeat of a server that
// answered refreshes what it said (refreshLocked); one of a name that
// answered under another id is a later process of it, and the audit keeps
// the one it asked.
func (c *collection) heartbeat(hb *Heartbeat) {
	if hb.size > c.opts.MaxReplyBytes {
		return // what the audit would not read as a reply it does not take as one
	}
	msg, srv := hb.msg, hb.srv
	c.mu.Lock()
	var ask bool
	if c.seen[srv.ID] {
		c.refreshLocked(msg, srv)
	} else {
		// A server heard first by its heartbeat may have started after
		// the census: it is asked its summary on its own subject.
		ask = !c.names[srv.Name] && c.registerLocked(msg, srv, false)
	}
	c.mu.Unlock()
	if ask {
		c.log.Debug("audit heard a server by its heartbeat", "server", srv.Name, "id", srv.ID)
		go c.askServer(srv)
	}
	c.signal()
}

// errShutDown fails the requests a server that shut down left unanswered.
var errShutDown = errors.New("the server shut down during the audit")

// shutdown ends the wait for the requests of a server that sent its
// SHUTDOWN: the process that was asked is going away.
func (c *collection) shutdown(serverID string) {
	c.mu.Lock()
	a, ok := c.asked[serverID]
	c.mu.Unlock()
	if ok {
		a.cancel(errShutDown)
	}
}

// register records a server that answered STATSZ and what it says about
// whom to expect. It reports whether the server is new to this audit and is
// to be asked for LEAFZ and JSZ; the caller then runs askServer. pinged is
// whether the server had the census's JSZ broadcast, published with its ping
// on the same connection: its summary is coming on the broadcast's inbox.
func (c *collection) register(msg *statszReply, srv snapshot.Server, pinged bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registerLocked(msg, srv, pinged)
}

// registerLocked is register with c.mu held.
func (c *collection) registerLocked(msg *statszReply, srv snapshot.Server, pinged bool) bool {
	si := msg.Server
	if c.closed || c.seen[si.ID] {
		return false
	}
	c.seen[si.ID] = true
	c.names[si.Name] = true
	c.clusters[si.Cluster] = true
	c.snap.Servers = append(c.snap.Servers, srv)
	c.expectNamedLocked(msg)
	if c.opts.OnlyServerID != "" && c.opts.OnlyServerID != si.ID {
		return false
	}
	c.inflight++
	c.wg.Add(1)
	ctx, cancel := context.WithCancelCause(c.ctx)
	c.asked[si.ID] = asking{ctx, cancel, pinged}
	return true
}

// expectNamedLocked records whom a STATSZ expects: its count of active
// servers, its routes and its gateways.
func (c *collection) expectNamedLocked(msg *statszReply) {
	si := msg.Server
	c.snap.ExpectedCount = max(c.snap.ExpectedCount, msg.Stats.ActiveServers)
	for _, r := range msg.Stats.Routes {
		c.expect(r.Name, si.Name)
	}
	for _, g := range msg.Stats.Gateways {
		if g.Name != "" && g.Name != si.Cluster {
			addNamer(c.snap.ExpectedClusters, g.Name, si.Name)
		}
	}
}

// refreshLocked takes a later heartbeat of a server that answered: a server
// that has just started answers before it has heard of every other (its
// count of active servers grows over its first seconds), and an audit that
// waits on that count takes its latest word. It only ever expects more.
func (c *collection) refreshLocked(msg *statszReply, srv snapshot.Server) {
	if c.closed {
		return
	}
	for i := range c.snap.Servers {
		if s := &c.snap.Servers[i]; s.ID == srv.ID {
			s.ActiveServers, s.Uptime = srv.ActiveServers, srv.Uptime
		}
	}
	c.expectNamedLocked(msg)
}

// asking is the context of the requests to one server.
type asking struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	pinged bool // it had the census's JSZ broadcast
}

// askServer sends one server its directed requests: LEAFZ, then JSZ page by page.
func (c *collection) askServer(srv snapshot.Server) {
	c.mu.Lock()
	a := c.asked[srv.ID]
	c.mu.Unlock()
	ctx := a.ctx
	defer func() {
		a.cancel(nil)
		c.mu.Lock()
		c.inflight--
		delete(c.asked, srv.ID)
		c.mu.Unlock()
		c.signal()
		c.wg.Done()
	}()
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-ctx.Done():
		err := fmt.Errorf("not asked before the audit timeout: %w", ctx.Err())
		if cause := context.Cause(ctx); errors.Is(cause, errShutDown) {
			err = fmt.Errorf("not asked: %w", cause)
		}
		c.problem(srv.Name, "LEAFZ and JSZ", err)
		return
	}

	// LEAFZ is small and JSZ the long wait: ask both at once.
	var leafz sync.WaitGroup
	leafz.Go(func() { c.leafz(ctx, srv) })
	if srv.JetStream {
		c.jsz(ctx, srv, a.pinged)
	}
	leafz.Wait()
}

func (c *collection) leafz(ctx context.Context, srv snapshot.Server) {
	data, err := c.request(ctx, srv, "LEAFZ", struct{}{})
	if err == nil {
		err = c.addLeafz(srv, data)
	}
	if err != nil {
		c.problem(srv.Name, "LEAFZ", err)
	}
}

// addLeafz records the leafnode links a LEAFZ reply lists.
func (c *collection) addLeafz(srv snapshot.Server, data []byte) error {
	var leafz leafzReply
	if err := json.Unmarshal(data, &leafz); err != nil {
		return fmt.Errorf("malformed reply: %w", err)
	}
	if leafz.Error != nil {
		return leafz.Error
	}
	if leafz.Data == nil {
		return errors.New("reply carries no data")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range leafz.Data.Leafs {
		if l != nil {
			c.snap.Leafnodes = append(c.snap.Leafnodes, snapshot.LeafLink{Server: srv.Name, Cluster: srv.Cluster,
				Peer: l.Name, Account: l.Account})
		}
	}
	return nil
}

// jsz takes a server's counts, sizes its pages by them, and asks for each
// page once its estimate fits into the bytes in flight.
func (c *collection) jsz(ctx context.Context, srv snapshot.Server, pinged bool) {
	summary, err := c.summary(ctx, srv, pinged)
	var plan pagePlan
	if err == nil {
		plan, err = summary.plan(c.opts.JSZPageSize)
	}
	if err == nil && plan.needsCounts(c.budget.limit) {
		// A large server: its accounts' streams, within the bound too.
		var data []byte
		data, err = c.within(ctx, srv, jszCountsRequest(c.opts.JSZPageSize), plan.countsEstimate())
		if err == nil {
			plan, err = plan.withCounts(data, c.budget.limit)
		}
	}
	if err != nil {
		c.problem(srv.Name, "JSZ", err)
		return
	}
	c.mu.Lock()
	if c.snap.Counts == nil {
		c.snap.Counts = map[string]snapshot.JetStreamCounts{}
	}
	c.snap.Counts[srv.ID] = summary.counts()
	c.mu.Unlock()
	c.log.Debug("audit plans JSZ pages", "server", srv.Name, "estimate", plan.total, "accounts", plan.accounts, "page", plan.pageSize)
	c.jszPages(ctx, srv, plan)
}

// allAccounts is a page limit no server reaches: a server before 2.11.2
// takes a limit of 0 as 1024 (2.10.27 monitor.go Jsz), so every account at
// once must be asked as a number.
const allAccounts = 1 << 30

// jszPages pages over a server's accounts. Pages are counted in accounts, and
// every stream and consumer of an account comes in the account's page.
func (c *collection) jszPages(ctx context.Context, srv snapshot.Server, plan pagePlan) {
	page := plan.pageSize
	accounts := map[string]bool{}
	first, total := -1, 0
	scale := 1.0 // how much larger than their estimates this server's pages came
	for offset := 0; ; {
		estimate := int64(float64(plan.estimate(offset, page)) * scale)
		data, err := c.within(ctx, srv, jszPage(offset, page), estimate)
		if err != nil {
			c.problem(srv.Name, "JSZ", err)
			return
		}
		scale = max(scale, float64(len(data))/float64(max(estimate, 1)))
		js, err := parseJSZ(data)
		if err != nil {
			c.problem(srv.Name, "JSZ", err)
			return
		}
		c.addJSZ(srv, js)
		for _, a := range js.AccountDetails {
			// By id: account JWT names need not be unique.
			accounts[a.id()] = true
		}
		// Before 2.11.2 a server sends no total; its JetStream accounts
		// are counted as Accounts on every version.
		total = max(js.Total, js.Accounts)
		if first < 0 {
			first = total
		}
		n := len(js.AccountDetails)
		if n < page || page == allAccounts || (js.Total > 0 && offset+n >= js.Total) {
			break
		}
		if js.Total == 0 {
			// A full page without a total is a server before 2.11.2: it
			// sorts the accounts only from the second page on (2.10.27
			// monitor.go, Jsz), so its pages overlap and skip. Ask it for
			// every account at once.
			page, offset = allAccounts, 0
			continue
		}
		offset += n
	}
	switch {
	case total < first:
		// An account removed before the next page's offset shifts the
		// pages left: one account goes unlisted, and the count no longer
		// shows it (one added only repeats one).
		c.problem(srv.Name, "JSZ", fmt.Errorf("JetStream accounts went from %d to %d while the pages were asked: an account may not have been listed", first, total))
	case len(accounts) < total:
		c.problem(srv.Name, "JSZ", fmt.Errorf("paging listed %d of %d JetStream accounts", len(accounts), total))
	}
}

// within asks a server for one JSZ reply once estimate bytes fit into the
// bytes in flight, and holds them until the reply is read.
func (c *collection) within(ctx context.Context, srv snapshot.Server, body jszRequest, estimate int64) ([]byte, error) {
	start := time.Now()
	held, err := c.budget.acquire(ctx, estimate)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errShutDown) {
			return nil, fmt.Errorf("not asked: %w", cause)
		}
		return nil, fmt.Errorf("not asked before the audit timeout, waiting for other servers' replies to fit beside its own (about %d bytes) in %d bytes in flight: %w",
			estimate, c.budget.limit, err)
	}
	defer c.budget.release(held)
	if waited := time.Since(start); waited > time.Millisecond {
		c.log.Debug("audit waited for bytes in flight", "server", srv.Name, "offset", body.Offset, "estimate", estimate, "waited", waited)
	}
	return c.request(ctx, srv, "JSZ", body)
}

// request asks one server and returns its reply, unless it is too large.
func (c *collection) request(ctx context.Context, srv snapshot.Server, endpoint string, body any) ([]byte, error) {
	msg, err := serverRequest(srv.ID, endpoint, body, c.opts.Compress)
	if err != nil {
		return nil, err
	}
	c.requests.Add(1)
	start := time.Now()
	msg, err = c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errShutDown) {
			return nil, fmt.Errorf("no reply: %w", cause)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no reply within the audit timeout: %w", err)
		}
		return nil, err
	}
	c.log.Debug("audit reply", "server", srv.Name, "request", endpoint, "bytes", len(msg.Data), "wait", time.Since(start))
	return c.replyData(msg)
}

// replyData is a reply's body, inflated, unless it is too large.
func (c *collection) replyData(msg *nats.Msg) ([]byte, error) {
	data := msg.Data
	if msg.Header.Get("Content-Encoding") == "snappy" {
		// Read one byte past the limit so that checkSize sees an oversized
		// reply without inflating all of it.
		var err error
		data, err = io.ReadAll(io.LimitReader(s2.NewReader(bytes.NewReader(msg.Data)), int64(c.opts.MaxReplyBytes)+1))
		if err != nil {
			return nil, fmt.Errorf("malformed compressed reply: %w", err)
		}
	}
	if err := c.checkSize(data); err != nil {
		return nil, err
	}
	return data, nil
}

// errReplyTooLarge marks a reply dropped for exceeding Options.MaxReplyBytes.
var errReplyTooLarge = errors.New("reply exceeds the size limit")

func (c *collection) checkSize(data []byte) error {
	if len(data) > c.opts.MaxReplyBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", errReplyTooLarge, len(data), c.opts.MaxReplyBytes)
	}
	return nil
}

// addJSZ merges one JSZ page of srv and expects every server it names.
func (c *collection) addJSZ(srv snapshot.Server, js *jszData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.merged.add(srv.Name, srv.Domain, js) {
		c.expect(name, srv.Name)
	}
}

func (c *collection) snapshot() *snapshot.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.snap
	s.Duration = time.Since(s.Started)
	s.Requests = int(c.requests.Load())
	s.Streams, s.Consumers, s.Meta = c.merged.streams(), c.merged.consumers(), c.merged.metaGroups()
	return &s
}
