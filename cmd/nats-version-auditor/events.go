package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

// The system-account events serve watches (nats-server server/events.go:
// serverStatsSubj, shutdownEventSubj, lameDuckEventSubj, connectEventSubj,
// disconnectEventSubj). Every server publishes a STATSZ heartbeat (first
// after 250 ms, backing off to every 10 s by default), a SHUTDOWN as it
// stops, a LAMEDUCK as it enters lame duck mode, and an account CONNECT or
// DISCONNECT for each client and leafnode connection (client.kind
// "Leafnode" tells the latter).
const (
	subjStatsz     = "$SYS.SERVER.*.STATSZ"
	subjShutdown   = "$SYS.SERVER.*.SHUTDOWN"
	subjLameDuck   = "$SYS.SERVER.*.LAMEDUCK"
	subjConnect    = "$SYS.ACCOUNT.*.CONNECT"
	subjDisconnect = "$SYS.ACCOUNT.*.DISCONNECT"
	// A STATSZ ping without a reply subject makes every server publish its
	// STATSZ on its heartbeat subject at once (statszReq: "No reply is a
	// signal that we should use our normal broadcast subject"): the first
	// heartbeats prove the subscription and seed the known state.
	subjStatszPing = "$SYS.REQ.SERVER.PING"
)

// eventSubjects are the subscriptions the watcher needs, in the order the
// README's least-privilege section lists them.
var eventSubjects = []string{subjStatsz, subjShutdown, subjLameDuck, subjConnect, subjDisconnect}

// flushTimeout bounds the wait for the servers to confirm the subscriptions.
const flushTimeout = 5 * time.Second

// leafKind is how connect and disconnect events spell a leafnode connection
// (kindStringMap in server/client.go).
var leafKind = []byte(`"kind":"Leafnode"`)

// knownServer is what the watcher last heard of a server.
type knownServer struct {
	id, version string
	// links are the routes and gateways its last heartbeat listed.
	links []string
	// gone is set by its SHUTDOWN: whatever it says next is a comeback.
	gone bool
}

// eventWatcher asks for an audit whenever a server's events say that what
// the last audit saw may have changed: a server shut down, entered lame
// duck mode, came back, runs another version or process (id), lost or
// gained a route or gateway, or a leafnode connection came or went. A
// heartbeat that matches what is known asks for nothing.
type eventWatcher struct {
	nc      *nats.Conn
	trigger func(reason string)
	// seen returns the latest audit's snapshot (nil before the first): a
	// server heard of for the first time is held against it.
	seen func() *auditor.Snapshot
	log  *slog.Logger

	subs     []*nats.Subscription
	statusCh chan nats.Status
	done     chan struct{}

	mu     sync.Mutex
	known  map[string]*knownServer
	denied map[string]error // subject -> permissions violation
	// heard is set by the first STATSZ after each (re)connect: proof that
	// the subscriptions deliver.
	heard    bool
	received map[string]uint64
	stopped  bool
}

// watchEvents subscribes nc to the servers' events and calls trigger with a
// reason whenever one may change the audit. The subscriptions survive
// reconnects (nats.go resubscribes); after each reconnect the watcher asks
// for an audit, since anything may have changed meanwhile. A subscription
// the user may not make does not stop serve: the watcher logs it as an error
// and reports itself down (Stats) until a reconnect succeeds.
func watchEvents(nc *nats.Conn, trigger func(reason string), seen func() *auditor.Snapshot, logger *slog.Logger) (*eventWatcher, error) {
	w := &eventWatcher{nc: nc, trigger: trigger, seen: seen, log: logger, done: make(chan struct{}),
		known: map[string]*knownServer{}, denied: map[string]error{}, received: map[string]uint64{}}
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		w.permissionError(err)
		if prev != nil {
			prev(c, sub, err)
		}
	})
	// Registered before the subscriptions so that no change is missed.
	w.statusCh = nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	handlers := map[string]nats.MsgHandler{
		subjStatsz: w.onStatsz, subjShutdown: w.onShutdown, subjLameDuck: w.onLameDuck,
		subjConnect: w.onLeafEvent, subjDisconnect: w.onLeafEvent,
	}
	for _, subj := range eventSubjects {
		sub, err := nc.Subscribe(subj, handlers[subj])
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("subscribe to %s: %w", subj, err)
		}
		w.subs = append(w.subs, sub)
	}
	go w.follow()
	if nc.IsConnected() {
		// A refused subscription comes back as an asynchronous error that an
		// audit running meanwhile would take for its own (auditor.Collect
		// names any new permissions violation): have it arrive first.
		if err := nc.FlushTimeout(flushTimeout); err != nil {
			logger.Warn("could not confirm the event subscriptions", "err", err)
		}
		w.ping()
	}
	return w, nil
}

// Stop unsubscribes. The error handler stays wrapped but passes through.
func (w *eventWatcher) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	for _, sub := range w.subs {
		_ = sub.Unsubscribe()
	}
	w.nc.RemoveStatusListener(w.statusCh)
	<-w.done
}

// follow tracks the connection: down while disconnected, and after a
// reconnect an audit and a fresh proof that events arrive.
func (w *eventWatcher) follow() {
	defer close(w.done)
	connected := w.nc.IsConnected()
	for st := range w.statusCh {
		switch st {
		case nats.CONNECTED:
			w.mu.Lock()
			w.heard = false
			clear(w.denied) // nats.go resubscribes; a refusal comes again
			w.mu.Unlock()
			w.ping()
			if !connected {
				connected = true
				w.trigger("reconnected to NATS")
			}
		case nats.DISCONNECTED, nats.RECONNECTING:
			connected = false
			w.mu.Lock()
			w.heard = false
			w.mu.Unlock()
		case nats.CLOSED:
			return
		}
	}
}

func (w *eventWatcher) ping() {
	if err := w.nc.Publish(subjStatszPing, nil); err != nil {
		w.log.Warn("could not ask the servers for their heartbeats", "err", err)
	}
}

// permissionError records a subscription of the watcher the server refused.
func (w *eventWatcher) permissionError(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	for _, subj := range eventSubjects {
		if !strings.Contains(err.Error(), fmt.Sprintf("Subscription to %q", subj)) {
			continue
		}
		w.mu.Lock()
		_, already := w.denied[subj]
		w.denied[subj] = err
		stopped := w.stopped
		w.mu.Unlock()
		if !already && !stopped {
			w.log.Error("server events unavailable: verdicts follow scrapes only, at most once per --audit.min-interval; allow the user to subscribe to "+subj,
				"subject", subj, "err", err)
		}
	}
}

// Stats reports whether events arrive, and how many of each kind did.
func (w *eventWatcher) Stats() metrics.EventStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return metrics.EventStats{Up: w.heard && len(w.denied) == 0 && w.nc.IsConnected(), Received: maps.Clone(w.received)}
}

func (w *eventWatcher) onStatsz(m *nats.Msg) {
	var stats server.ServerStatsMsg
	if err := json.Unmarshal(m.Data, &stats); err != nil || stats.Server.Name == "" {
		w.log.Debug("unreadable STATSZ event", "subject", m.Subject, "err", err)
		return
	}
	s := stats.Server
	var links []string
	for _, r := range stats.Stats.Routes {
		links = append(links, "route "+r.Name)
	}
	for _, g := range stats.Stats.Gateways {
		links = append(links, "gateway "+g.Name)
	}
	slices.Sort(links)
	links = slices.Compact(links)

	w.mu.Lock()
	w.received[metrics.EventStatsz]++
	w.heard = true
	k, ok := w.known[s.Name]
	if !ok {
		k = &knownServer{id: s.ID, version: s.Version, links: links}
		w.known[s.Name] = k
	}
	reason := ""
	switch {
	case !ok:
		reason = w.firstHeard(s)
	case k.gone:
		reason = fmt.Sprintf("server %s is back (%s, id %s)", s.Name, s.Version, s.ID)
	case k.id != s.ID:
		reason = fmt.Sprintf("server %s restarted (%s, id %s, was %s)", s.Name, s.Version, s.ID, k.id)
	case k.version != s.Version:
		reason = fmt.Sprintf("server %s runs %s, was %s", s.Name, s.Version, k.version)
	case !slices.Equal(k.links, links):
		if d := w.linksDiff(k.links, links); len(d) > 0 {
			reason = fmt.Sprintf("server %s's routes or gateways changed: %s", s.Name, strings.Join(d, ", "))
		}
	}
	k.id, k.version, k.links, k.gone = s.ID, s.Version, links, false
	w.mu.Unlock()
	if reason != "" {
		w.log.Debug("server event asks for an audit", "reason", reason)
		w.trigger(reason)
	}
}

// firstHeard holds a server heard of for the first time against the last
// audit. Before any audit there is nothing to hold it against: the first
// audit, running or about to, sees it.
func (w *eventWatcher) firstHeard(s server.ServerInfo) string {
	snap := w.seen()
	if snap == nil {
		return ""
	}
	for _, a := range snap.Servers {
		if a.Name != s.Name {
			continue
		}
		if a.ID != s.ID || a.Version != s.Version {
			return fmt.Sprintf("server %s runs %s (id %s), the last audit saw %s (id %s)", s.Name, s.Version, s.ID, a.Version, a.ID)
		}
		return ""
	}
	return fmt.Sprintf("server %s (%s) was not in the last audit", s.Name, s.Version)
}

// linksDiff names the links gained and lost, leaving out routes lost to
// servers whose SHUTDOWN was heard: an audit was asked for then, and a
// second one would only wait for the server as the first does. w.mu is held.
func (w *eventWatcher) linksDiff(before, after []string) []string {
	var d []string
	for _, l := range before {
		if slices.Contains(after, l) {
			continue
		}
		if name, ok := strings.CutPrefix(l, "route "); ok && w.known[name] != nil && w.known[name].gone {
			continue
		}
		d = append(d, "lost "+l)
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			d = append(d, "gained "+l)
		}
	}
	return d
}

func (w *eventWatcher) onShutdown(m *nats.Msg) {
	name := w.serverGoing(m, metrics.EventShutdown, true)
	w.trigger("server " + name + " shut down")
}

func (w *eventWatcher) onLameDuck(m *nats.Msg) {
	name := w.serverGoing(m, metrics.EventLameDuck, false)
	w.trigger("server " + name + " entered lame duck mode")
}

// serverGoing counts a SHUTDOWN or LAMEDUCK event and returns the server's
// name (its id from the subject when the body does not name it).
func (w *eventWatcher) serverGoing(m *nats.Msg, kind string, gone bool) string {
	var si server.ServerInfo
	_ = json.Unmarshal(m.Data, &si)
	name := si.Name
	if name == "" {
		name = "id " + strings.Split(m.Subject, ".")[2]
	}
	w.mu.Lock()
	w.received[kind]++
	if k, ok := w.known[si.Name]; ok && gone {
		k.gone = true
	}
	w.mu.Unlock()
	return name
}

// onLeafEvent reacts to leafnode connections coming and going; the far end
// of one may be a server no STATSZ reaches, which only LEAFZ names.
// Connect and disconnect events of clients are dropped unread.
func (w *eventWatcher) onLeafEvent(m *nats.Msg) {
	if !bytes.Contains(m.Data, leafKind) {
		return
	}
	var ev struct {
		Server server.ServerInfo `json:"server"`
		Client server.ClientInfo `json:"client"`
	}
	if err := json.Unmarshal(m.Data, &ev); err != nil || ev.Client.Kind != "Leafnode" {
		return
	}
	kind, what := metrics.EventLeafConnect, "connected"
	if strings.HasSuffix(m.Subject, ".DISCONNECT") {
		kind, what = metrics.EventLeafDisconnect, "disconnected"
	}
	w.mu.Lock()
	w.received[kind]++
	w.mu.Unlock()
	w.trigger(fmt.Sprintf("leafnode %s %s on server %s (account %s)", ev.Client.Name, what, ev.Server.Name, ev.Client.Account))
}

// serveEvents keeps one event watcher on serve's current connection: a new
// watcher for each connection lazyConn makes, and one collector for all.
type serveEvents struct {
	sched  *auditor.Scheduler
	logger *slog.Logger

	mu sync.Mutex
	w  *eventWatcher
}

// newServeEvents makes the event watching of serve: an audit an event asks
// for starts no sooner than minInterval after the last one started.
func newServeEvents(sched *auditor.Scheduler, minInterval time.Duration, logger *slog.Logger) *serveEvents {
	sched.SetRequestInterval(minInterval)
	return &serveEvents{sched: sched, logger: logger}
}

// collector exports what the watchers of every connection heard.
func (e *serveEvents) collector() prometheus.Collector {
	return metrics.NewEventCollector(e.stats)
}

// attach watches the events on nc, in place of any earlier connection's.
func (e *serveEvents) attach(nc *nats.Conn) {
	e.stop()
	seen := func() *auditor.Snapshot {
		if r := e.sched.Latest().Report; r != nil {
			return r.Snapshot
		}
		return nil
	}
	w, err := watchEvents(nc, e.sched.Request, seen, e.logger)
	if err != nil {
		e.logger.Error("cannot watch the servers' events: audits follow scrapes only", "err", err)
		return
	}
	e.mu.Lock()
	e.w = w
	e.mu.Unlock()
}

func (e *serveEvents) stats() metrics.EventStats {
	e.mu.Lock()
	w := e.w
	e.mu.Unlock()
	var s metrics.EventStats
	if w != nil {
		s = w.Stats()
	}
	s.Audits = e.sched.Latest().RequestedAudits
	return s
}

func (e *serveEvents) stop() {
	e.mu.Lock()
	w := e.w
	e.w = nil
	e.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}
