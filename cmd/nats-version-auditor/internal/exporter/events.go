package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/natsaudit/nats-version-auditor/metrics"
)

// flushTimeout bounds the wait for the servers to confirm the subscriptions.
const flushTimeout = 5 * time.Second

// eventWatcher asks for an audit whenever a server's events say that what
// the last audit saw may have changed: a server shut down, entered lame
// duck mode, came back, runs another version or process (id), lost or
// gained a route or gateway, or a leafnode connection came or went. A
// heartbeat that matches what is known asks for nothing.
type eventWatcher struct {
	nc      *nats.Conn
	trigger func(reason string)
	// amend applies the leader changes heard to the latest result
	// (Scheduler.Amend) and returns those only an audit can tell.
	amend func([]snapshot.LeaderChange) (unseen, stale []snapshot.LeaderChange)
	// heartbeats tells which events ask for an audit.
	heartbeats *collect.Heartbeats
	// audits hears every heartbeat and SHUTDOWN, for the audits running.
	audits *collect.Events
	// user names the user the connection logs in as, for the log line of
	// a refused subscription.
	user string
	log  *slog.Logger

	subs     []*nats.Subscription
	statusCh chan nats.Status
	done     chan struct{}

	mu     sync.Mutex
	denied map[string]error // subject -> permissions violation
	// heard is set by the first STATSZ after each (re)connect: proof that
	// the subscriptions deliver.
	heard    bool
	received map[string]uint64
	stopped  bool
	// leaders are the leader changes heard and not yet applied; a burst
	// (a server's restart moves many leaders) is applied at once, at most
	// leaderBatch after its first change.
	leaders     []snapshot.LeaderChange
	leaderTimer *time.Timer
	// assetSubs are the subscriptions to asset advisories, by subject
	// (watchAssets); assetsDone stops their refresh.
	assetSubs  map[string]*nats.Subscription
	assetsDone chan struct{}
	// assetGap is the least time between two audits asset advisories ask
	// for; assetLast is when the last was asked, assetTimer the one due.
	assetGap   time.Duration
	assetLast  time.Time
	assetTimer *time.Timer
	// readingImports is set while watchAssets asks which imports the
	// system account has: a user not allowed to ask is no error of serve's.
	readingImports bool
}

// leaderBatch is how long the first leader change of a burst waits for the
// rest: one evaluation for the burst, well inside the two seconds in which
// a leader change is to be seen.
const leaderBatch = 100 * time.Millisecond

// watchEvents subscribes nc to the servers' events and calls trigger with a
// reason whenever one may change the audit. The subscriptions survive
// reconnects (nats.go resubscribes); after each reconnect the watcher asks
// for an audit, since anything may have changed meanwhile. A subscription
// the user may not make does not stop serve: the watcher logs it as an error
// and reports itself down (Stats) until a reconnect succeeds; user names
// the user in that line.
func watchEvents(nc *nats.Conn, trigger func(reason string), amend func([]snapshot.LeaderChange) (unseen, stale []snapshot.LeaderChange),
	seen func() *snapshot.Snapshot, audits *collect.Events, assetGap time.Duration, user string, logger *slog.Logger) (*eventWatcher, error) {
	w := &eventWatcher{nc: nc, trigger: trigger, assetGap: assetGap, amend: amend, heartbeats: collect.NewHeartbeats(seen), audits: audits, user: user, log: logger, done: make(chan struct{}),
		denied: map[string]error{}, received: map[string]uint64{}, assetSubs: map[string]*nats.Subscription{}, assetsDone: make(chan struct{})}
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		// A refusal of the watcher's own subscriptions is logged once, by
		// it, with what to grant; the handler before it (serve's, or
		// nats.go's default, which writes to stderr) would say it again
		// without.
		if w.permissionError(err) {
			return
		}
		if w.importsRefused(err) {
			return
		}
		if errors.Is(err, nats.ErrSlowConsumer) && w.owns(sub) {
			w.fellBehind(sub)
			return
		}
		if prev != nil {
			prev(c, sub, err)
		}
	})
	// Registered before the subscriptions so that no change is missed.
	w.statusCh = nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	handlers := map[string]nats.MsgHandler{
		collect.StatszEventSubject: w.onStatsz, collect.ShutdownEventSubject: w.onShutdown, collect.LameDuckEventSubject: w.onLameDuck,
		collect.ConnectEventSubject: w.onLeafEvent, collect.DisconnectEventSubject: w.onLeafEvent,
		collect.StreamLeaderElectedSubject: w.onLeaderElected, collect.ConsumerLeaderElectedSubject: w.onLeaderElected,
	}
	for _, subj := range collect.EventSubjects {
		sub, err := nc.Subscribe(subj, handlers[subj])
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("subscribe to %s: %w", subj, err)
		}
		_ = sub.SetPendingLimits(eventPendingMsgs, eventPendingBytes)
		w.subs = append(w.subs, sub)
	}
	go w.follow()
	if nc.IsConnected() {
		// A refused subscription comes back as an asynchronous error that an
		// audit running meanwhile would take for its own (collect.Collect
		// names any new permissions violation): have it arrive first.
		if err := nc.FlushTimeout(flushTimeout); err != nil {
			logger.Warn("could not confirm the event subscriptions", "err", err)
		}
		w.ping()
	}
	w.watchAssets()
	return w, nil
}

// The bounds on the events a subscription holds unread: nats.go's own
// defaults, named so that a test can make an event subscription fall
// behind.
var eventPendingMsgs, eventPendingBytes = nats.DefaultSubPendingMsgsLimit, nats.DefaultSubPendingBytesLimit

// owns reports whether sub is one of the watcher's.
func (w *eventWatcher) owns(sub *nats.Subscription) bool {
	if sub == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.subs, sub) || w.assetSubs[sub.Subject] == sub
}

// fellBehind asks for an audit when nats.go dropped events of sub, which
// held as many unread as it may (a slow consumer): what they said is lost,
// and only an audit tells it. nats.go reports it once each time the
// subscription falls behind.
func (w *eventWatcher) fellBehind(sub *nats.Subscription) {
	dropped, _ := sub.Dropped()
	w.log.Warn("events dropped: serve fell behind the servers' events; auditing in full", "subject", sub.Subject, "dropped", dropped)
	w.trigger("events dropped on " + sub.Subject + " (a slow consumer)")
}

// Stop unsubscribes. The error handler stays wrapped but passes through.
func (w *eventWatcher) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	if w.leaderTimer != nil {
		w.leaderTimer.Stop()
	}
	if w.assetTimer != nil {
		w.assetTimer.Stop()
	}
	close(w.assetsDone)
	assets := slices.Collect(maps.Values(w.assetSubs))
	w.mu.Unlock()
	for _, sub := range append(w.subs, assets...) {
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

// ping asks every server for its heartbeat at once: a ping without a reply
// subject makes each publish its STATSZ on its heartbeat subject (statszReq:
// "No reply is a signal that we should use our normal broadcast subject").
// The first heartbeats prove the subscription.
func (w *eventWatcher) ping() {
	if err := w.nc.Publish(collect.PingSubject, nil); err != nil {
		w.log.Warn("could not ask the servers for their heartbeats", "err", err)
	}
}

// permissionError records a subscription of the watcher the server
// refused, and reports whether err was one: it is then logged, once per
// subject and connection, and said nowhere else. A watcher stopped says
// nothing and lets err pass on.
func (w *eventWatcher) permissionError(err error) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	for _, subj := range collect.EventSubjects {
		if !strings.Contains(err.Error(), fmt.Sprintf("Subscription to %q", subj)) {
			continue
		}
		w.mu.Lock()
		_, already := w.denied[subj]
		stopped := w.stopped
		if !stopped {
			w.denied[subj] = err
		}
		w.mu.Unlock()
		if stopped {
			return false
		}
		if !already {
			w.log.Error("server events unavailable: verdicts follow scrapes only, at most once per --audit.min-interval; allow the user to subscribe to "+subj,
				"subject", subj, "user", w.user, "server", w.nc.ConnectedServerName(), "err", err)
		}
		return true
	}
	return false
}

// Stats reports whether events arrive, and how many of each kind did.
func (w *eventWatcher) Stats() metrics.EventStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return metrics.EventStats{Up: w.heard && len(w.denied) == 0 && w.nc.IsConnected(), Received: maps.Clone(w.received)}
}

func (w *eventWatcher) onStatsz(m *nats.Msg) {
	// Read once, for the tracker and for every audit running.
	hb, err := collect.ParseHeartbeat(m.Data)
	if err != nil {
		w.log.Debug("unreadable STATSZ event", "subject", m.Subject, "err", err)
		return
	}
	reason := w.heartbeats.Statsz(hb)
	w.count(metrics.EventStatsz, true)
	w.audits.Heartbeat(hb)
	if reason != "" {
		w.log.Debug("server event asks for an audit", "reason", reason)
		w.trigger(reason)
	}
}

func (w *eventWatcher) onShutdown(m *nats.Msg) {
	w.count(metrics.EventShutdown, false)
	w.audits.Shutdown(m.Subject)
	w.trigger(w.heartbeats.Shutdown(m.Subject, m.Data))
}

func (w *eventWatcher) onLameDuck(m *nats.Msg) {
	w.count(metrics.EventLameDuck, false)
	w.trigger(w.heartbeats.LameDuck(m.Subject, m.Data))
}

// onLeafEvent reacts to leafnode connections coming and going; connect and
// disconnect events of clients are dropped unread.
func (w *eventWatcher) onLeafEvent(m *nats.Msg) {
	reason, connected, ok := collect.LeafEvent(m.Subject, m.Data)
	if !ok {
		return
	}
	kind := metrics.EventLeafConnect
	if !connected {
		kind = metrics.EventLeafDisconnect
	}
	w.count(kind, false)
	w.trigger(reason)
}

// onLeaderElected takes a stream's or consumer's new leader into the next
// batch of changes. An advisory it cannot read is a change it cannot
// apply: it asks for an audit.
func (w *eventWatcher) onLeaderElected(m *nats.Msg) {
	c, err := collect.ParseLeaderElected(m.Data, time.Now())
	if err != nil {
		w.log.Debug("unreadable leader advisory", "subject", m.Subject, "err", err)
		w.trigger("an unreadable leader advisory on " + m.Subject)
		return
	}
	kind := metrics.EventStreamLeaderElected
	if c.Consumer != "" {
		kind = metrics.EventConsumerLeaderElected
	}
	w.count(kind, false)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.leaders = append(w.leaders, c)
	if w.leaderTimer == nil {
		w.leaderTimer = time.AfterFunc(leaderBatch, w.applyLeaders)
	}
}

// applyLeaders applies the batch of leader changes, and asks for an audit
// for those only an audit can tell.
func (w *eventWatcher) applyLeaders() {
	w.mu.Lock()
	batch := w.leaders
	w.leaders, w.leaderTimer = nil, nil
	w.mu.Unlock()
	unseen, stale := w.amend(batch)
	w.log.Debug("leader changes applied", "changes", len(batch), "unseen", len(unseen), "stale", len(stale))
	switch {
	case len(unseen) > 0:
		w.trigger(fmt.Sprintf("%s %s elected leader %s, which the last audit did not see (and %d more)",
			unseen[0].Kind, unseen[0].Label(), unseen[0].Leader, len(unseen)-1))
	case len(stale) > 0:
		w.trigger(fmt.Sprintf("%s %s elected leader %s, whose view of its pulls and peers only an audit reads (and %d more)",
			stale[0].Kind, stale[0].Label(), stale[0].Leader, len(stale)-1))
	}
}

// count counts an event of kind; heard says it proves that the
// subscriptions deliver.
func (w *eventWatcher) count(kind string, heard bool) {
	w.mu.Lock()
	w.received[kind]++
	w.heard = w.heard || heard
	w.mu.Unlock()
}

// EventWatch keeps one event watcher on serve's current connection: a new
// watcher for each connection LazyConn makes, and one collector for all.
type EventWatch struct {
	sched    *Scheduler
	audits   *collect.Events
	assetGap time.Duration
	user     string
	logger   *slog.Logger

	mu sync.Mutex
	w  *eventWatcher
}

// NewEventWatch makes the event watching of serve: an audit an event asks
// for starts no sooner than minInterval after the last one started, asset
// advisories ask for at most one per assetGap, and the audits running hear
// the events through audits. user names the user
// serve logs in as, in the one line each refused event subscription gets.
func NewEventWatch(sched *Scheduler, minInterval, assetGap time.Duration, audits *collect.Events, user string, logger *slog.Logger) *EventWatch {
	sched.SetRequestInterval(minInterval)
	return &EventWatch{sched: sched, audits: audits, assetGap: assetGap, user: user, logger: logger}
}

// Collector exports what the watchers of every connection heard.
func (e *EventWatch) Collector() prometheus.Collector {
	return metrics.NewEventCollector(e.stats)
}

// Attach watches the events on nc, in place of any earlier connection's
// (LazyConn.OnConnect).
func (e *EventWatch) Attach(nc *nats.Conn) {
	e.Stop()
	seen := func() *snapshot.Snapshot {
		if r := e.sched.Latest().Report; r != nil {
			return r.Snapshot
		}
		return nil
	}
	w, err := watchEvents(nc, e.sched.Request, e.sched.Amend, seen, e.audits, e.assetGap, e.user, e.logger)
	if err != nil {
		e.logger.Error("cannot watch the servers' events: audits follow scrapes only", "err", err)
		return
	}
	e.mu.Lock()
	e.w = w
	e.mu.Unlock()
}

func (e *EventWatch) stats() metrics.EventStats {
	e.mu.Lock()
	w := e.w
	e.mu.Unlock()
	var s metrics.EventStats
	if w != nil {
		s = w.Stats()
	}
	s.Audits = e.sched.Latest().Started[findings.ReasonEvent]
	return s
}

// Stop stops watching.
func (e *EventWatch) Stop() {
	e.mu.Lock()
	w := e.w
	e.w = nil
	e.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}
