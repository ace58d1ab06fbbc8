package auditor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrNotSystemAccount means $SYS requests found no responders: the user the
// audit connected as is not in the system account.
var ErrNotSystemAccount = errors.New("$SYS requests get no responders: the user is not in the system account")

// Subjects the audit sends requests to.
const (
	subjectPing   = "$SYS.REQ.SERVER.PING"
	subjectServer = "$SYS.REQ.SERVER.%s.%s" // server id, endpoint
)

// Defaults for Options.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultJSZPageSize = 1024
	DefaultConcurrency = 16
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
	// Concurrency is how many servers are asked for LEAFZ and JSZ at once.
	Concurrency int
	// OnlyServerID, when set, sends LEAFZ and JSZ to that server alone: a
	// sidecar auditing its own server still takes the census of all of them
	// (it needs every peer's version) but inventories only its own.
	OnlyServerID string
	Logger       *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.JSZPageSize <= 0 {
		o.JSZPageSize = DefaultJSZPageSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Collect audits every server reachable over $SYS from nc and returns what it
// saw. It pings STATSZ once; each server that answers is then asked, on its
// own subject, for LEAFZ and (with JetStream) its JSZ pages, while the ping
// stays open for the servers still expected. It returns as soon as every
// expected server has answered, or when Timeout has passed: what did not
// answer by then is recorded in the snapshot, not returned as an error.
func Collect(ctx context.Context, nc *nats.Conn, opts Options) (*Snapshot, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	c := &collection{
		ctx:       ctx,
		nc:        nc,
		opts:      opts,
		log:       opts.Logger,
		seen:      map[string]bool{},
		names:     map[string]bool{},
		clusters:  map[string]bool{},
		streams:   map[assetKey]*mergedAsset{},
		consumers: map[assetKey]*mergedAsset{},
		meta:      map[string]*MetaGroup{},
		wake:      make(chan struct{}, 1),
		sem:       make(chan struct{}, opts.Concurrency),
	}
	c.snap.Started = time.Now()
	c.snap.ExpectedCount = opts.Expect
	c.snap.ExpectedNames = map[string][]string{}
	c.snap.ExpectedClusters = map[string][]string{}

	inbox := nc.NewRespInbox()
	sub, err := nc.Subscribe(inbox, c.onStatsz)
	if err != nil {
		return nil, fmt.Errorf("subscribe for STATSZ replies: %w", err)
	}
	defer sub.Unsubscribe() //nolint:errcheck // also unsubscribed below; a second call only errors
	ping := nats.NewMsg(subjectPing)
	ping.Reply = inbox
	ping.Data = []byte("{}")
	c.requests.Add(1)
	if err := nc.PublishMsg(ping); err != nil {
		return nil, fmt.Errorf("publish %s: %w", subjectPing, err)
	}

	for {
		c.mu.Lock()
		done, noResponders := c.complete(), c.noResponders && len(c.seen) == 0
		c.mu.Unlock()
		if noResponders {
			return nil, ErrNotSystemAccount
		}
		if done {
			break
		}
		select {
		case <-c.wake:
			continue
		case <-ctx.Done():
		}
		break
	}
	_ = sub.Unsubscribe()

	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.wg.Wait()

	if err := parentErr(ctx); err != nil {
		return nil, err
	}
	return c.snapshot(), nil
}

// parentErr reports a cancellation that came from the caller rather than
// from the audit's own timeout.
func parentErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return ctx.Err()
	}
	return nil
}

type assetKey struct {
	domain, account, stream, consumer string
}

type mergedAsset struct {
	Asset
	peers map[string]bool
	// leaderSelf is set once the leader itself reported the asset: its word
	// on who leads wins over a follower's possibly stale view.
	leaderSelf bool
}

type collection struct {
	ctx      context.Context
	nc       *nats.Conn
	opts     Options
	log      *slog.Logger
	requests atomic.Int64
	sem      chan struct{}
	wg       sync.WaitGroup
	wake     chan struct{}

	mu           sync.Mutex
	snap         Snapshot
	seen         map[string]bool // server ids that answered STATSZ
	names        map[string]bool // their names
	clusters     map[string]bool // their clusters
	streams      map[assetKey]*mergedAsset
	consumers    map[assetKey]*mergedAsset
	meta         map[string]*MetaGroup // by JetStream domain
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
	if len(c.seen) == 0 || c.inflight > 0 || len(c.seen) < c.snap.ExpectedCount {
		return false
	}
	for name := range c.snap.ExpectedNames {
		if !c.names[name] {
			return false
		}
	}
	for name := range c.snap.ExpectedClusters {
		if !c.clusters[name] {
			return false
		}
	}
	return true
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
	c.snap.Problems = append(c.snap.Problems, Problem{Server: srv, Request: request, Err: err.Error()})
	c.mu.Unlock()
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
	var msg server.ServerStatsMsg
	if err := json.Unmarshal(m.Data, &msg); err != nil {
		c.problem("", "STATSZ", fmt.Errorf("malformed reply: %w", err))
		return
	}
	si := msg.Server
	if si.ID == "" || si.Name == "" {
		c.problem(si.Name, "STATSZ", errors.New("reply names no server"))
		return
	}
	srv := Server{ID: si.ID, Name: si.Name, Host: si.Host, Cluster: si.Cluster, Domain: si.Domain,
		Version: si.Version, Tags: si.Tags, JetStream: si.JetStreamEnabled()}
	if js := msg.Stats.JetStream; js != nil && js.Stats != nil {
		srv.APILevel = js.Stats.API.Level
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.seen[si.ID] {
		return
	}
	c.seen[si.ID] = true
	c.names[si.Name] = true
	c.clusters[si.Cluster] = true
	c.snap.Servers = append(c.snap.Servers, srv)
	c.snap.ExpectedCount = max(c.snap.ExpectedCount, msg.Stats.ActiveServers)
	for _, r := range msg.Stats.Routes {
		c.expect(r.Name, si.Name)
	}
	for _, g := range msg.Stats.Gateways {
		if g.Name != "" && g.Name != si.Cluster {
			addNamer(c.snap.ExpectedClusters, g.Name, si.Name)
		}
	}
	if c.opts.OnlyServerID != "" && c.opts.OnlyServerID != si.ID {
		return
	}
	c.inflight++
	c.wg.Add(1)
	go c.askServer(srv)
}

// askServer sends one server its directed requests: LEAFZ, then JSZ page by page.
func (c *collection) askServer(srv Server) {
	defer func() {
		c.mu.Lock()
		c.inflight--
		c.mu.Unlock()
		c.signal()
		c.wg.Done()
	}()
	select {
	case c.sem <- struct{}{}:
		defer func() { <-c.sem }()
	case <-c.ctx.Done():
		c.problem(srv.Name, "LEAFZ", c.ctx.Err())
		return
	}

	var leafz server.ServerAPILeafzResponse
	if err := c.request(srv, "LEAFZ", server.LeafzEventOptions{}, &leafz); err != nil {
		c.problem(srv.Name, "LEAFZ", err)
	} else if leafz.Error != nil {
		c.problem(srv.Name, "LEAFZ", leafz.Error)
	} else if leafz.Data != nil {
		c.mu.Lock()
		for _, l := range leafz.Data.Leafs {
			if l == nil {
				continue
			}
			c.snap.Leafnodes = append(c.snap.Leafnodes, LeafLink{Server: srv.Name, Cluster: srv.Cluster,
				Peer: l.Name, Account: l.Account, IsSpoke: l.IsSpoke})
		}
		c.mu.Unlock()
	}

	if srv.JetStream {
		c.jsz(srv)
	}
}

// jsz pages over a server's accounts. Pages are counted in accounts, and every
// stream and consumer of an account comes in the account's page.
func (c *collection) jsz(srv Server) {
	page := c.opts.JSZPageSize
	accounts := map[string]bool{}
	total := 0
	for offset := 0; ; {
		req := server.JszEventOptions{JSzOptions: server.JSzOptions{
			Accounts: true, Streams: true, Consumer: true, Config: true, Offset: offset, Limit: page,
		}}
		var resp server.ServerAPIJszResponse
		if err := c.request(srv, "JSZ", req, &resp); err != nil {
			c.problem(srv.Name, "JSZ", err)
			return
		}
		if resp.Error != nil {
			c.problem(srv.Name, "JSZ", resp.Error)
			return
		}
		if resp.Data == nil {
			c.problem(srv.Name, "JSZ", errors.New("reply carries no data"))
			return
		}
		c.addJSZ(srv, resp.Data)
		for _, a := range resp.Data.AccountDetails {
			if a != nil {
				accounts[a.Name] = true
			}
		}
		total = resp.Data.Total
		n := len(resp.Data.AccountDetails)
		if n < page {
			break
		}
		offset += n
	}
	// Accounts added or removed between pages shift the pages under us.
	if len(accounts) < total {
		c.problem(srv.Name, "JSZ", fmt.Errorf("paging listed %d of %d JetStream accounts", len(accounts), total))
	}
}

func (c *collection) request(srv Server, endpoint string, body, into any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	subj := fmt.Sprintf(subjectServer, srv.ID, endpoint)
	c.requests.Add(1)
	start := time.Now()
	msg, err := c.nc.RequestWithContext(c.ctx, subj, data)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no reply within the audit timeout: %w", err)
		}
		return err
	}
	c.log.Debug("audit reply", "server", srv.Name, "request", endpoint, "bytes", len(msg.Data), "duration", time.Since(start))
	if err := json.Unmarshal(msg.Data, into); err != nil {
		return fmt.Errorf("malformed reply: %w", err)
	}
	return nil
}

func (c *collection) addJSZ(srv Server, js *server.JSInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := js.Meta; m != nil {
		g := c.meta[srv.Domain]
		if g == nil {
			g = &MetaGroup{Domain: srv.Domain}
			c.meta[srv.Domain] = g
		}
		g.Cluster = m.Name
		if m.Leader != "" && (g.Leader == "" || srv.Name == m.Leader) {
			g.Leader = m.Leader
		}
		peers := []string{srv.Name, m.Leader}
		for _, p := range m.Replicas {
			if p != nil {
				peers = append(peers, p.Name)
			}
		}
		for _, p := range peers {
			if p != "" && !slices.Contains(g.Peers, p) {
				g.Peers = append(g.Peers, p)
			}
			c.expect(p, srv.Name)
		}
	}
	for _, acc := range js.AccountDetails {
		if acc == nil {
			continue
		}
		for i := range acc.Streams {
			sd := &acc.Streams[i]
			var replicas, level int
			if sd.Config != nil {
				replicas, level = sd.Config.Replicas, requiredLevel(sd.Config.Metadata)
			}
			key := assetKey{srv.Domain, acc.Name, sd.Name, ""}
			mergeAsset(c.streams, key, KindStream, srv.Name, sd.Cluster, replicas, level)
			for _, ci := range sd.Consumer {
				if ci == nil {
					continue
				}
				replicas, level = 0, 0
				if ci.Config != nil {
					replicas, level = ci.Config.Replicas, requiredLevel(ci.Config.Metadata)
				}
				key.consumer = ci.Name
				mergeAsset(c.consumers, key, KindConsumer, srv.Name, ci.Cluster, replicas, level)
			}
		}
	}
}

func mergeAsset(m map[assetKey]*mergedAsset, key assetKey, kind AssetKind, reporter string, ci *server.ClusterInfo, replicas, level int) {
	a := m[key]
	if a == nil {
		a = &mergedAsset{Asset: Asset{Kind: kind, Domain: key.domain, Account: key.account, Stream: key.stream, Consumer: key.consumer},
			peers: map[string]bool{}}
		m[key] = a
	}
	a.peers[reporter] = true
	a.Replicas = max(a.Replicas, replicas)
	a.RequiredLevel = max(a.RequiredLevel, level)
	if ci == nil {
		// A server outside any cluster hosts its assets alone and leads them.
		a.Leader, a.leaderSelf = reporter, true
		return
	}
	for _, p := range ci.Replicas {
		if p != nil && p.Name != "" {
			a.peers[p.Name] = true
		}
	}
	switch {
	case ci.Leader == "":
	case ci.Leader == reporter:
		a.Leader, a.leaderSelf = reporter, true
	case !a.leaderSelf:
		a.Leader = ci.Leader
	}
}

// requiredLevel reads _nats.req.level; a missing or unreadable value is 0,
// as the server itself treats it.
func requiredLevel(md map[string]string) int {
	level, _ := strconv.Atoi(md[server.JSRequiredLevelMetadataKey])
	return level
}

func (c *collection) snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.snap
	s.Duration = time.Since(s.Started)
	s.Requests = int(c.requests.Load())
	s.Streams = flatten(c.streams)
	s.Consumers = flatten(c.consumers)
	for _, d := range sortedKeys(c.meta) {
		g := *c.meta[d]
		slices.Sort(g.Peers)
		s.Meta = append(s.Meta, g)
	}
	return &s
}

func flatten(m map[assetKey]*mergedAsset) []Asset {
	out := make([]Asset, 0, len(m))
	for _, a := range m {
		as := a.Asset
		as.Peers = sortedKeys(a.peers)
		as.Replicas = max(as.Replicas, len(as.Peers))
		out = append(out, as)
	}
	slices.SortFunc(out, func(a, b Asset) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Account, b.Account),
			cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Consumer, b.Consumer))
	})
	return out
}
