package collect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	json "github.com/segmentio/encoding/json"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// A pull request is an ordinary message on
// $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>, and its reply subject is
// the puller's inbox. Where an account exports those subjects as a stream
// and the system account imports them (docs/pulls.md), the auditor's own
// system connection hears every pull of that account and asks CONNZ which
// connection subscribes the inbox. It never answers a pull.

// The subjects an account exports for the auditor to see who pulls.
const (
	pullNextSubject     = "$JS.API.CONSUMER.MSG.NEXT.>"
	pinnedAdvisory      = "$JS.EVENT.ADVISORY.CONSUMER.PINNED.>"
	unpinnedAdvisory    = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.>"
	userInfoSubject     = "$SYS.REQ.USER.INFO"
	accountInfoSubject  = "$SYS.REQ.ACCOUNT.%s.INFO"
	defaultPullerLimit  = 100_000
	pullConnzWait       = 2 * time.Second
	pullSubPendingLimit = 64 << 10
)

// PullSubjects are the subjects each JetStream account exports, and the
// system account imports with a prefix, for the auditor to hear who pulls:
// the pull requests and the pin advisories (2.11 and later).
var PullSubjects = []string{pullNextSubject, pinnedAdvisory, unpinnedAdvisory}

// PullWatch hears the pull requests of every account whose pulls the system
// account imports, and remembers, per consumer, each process that pulled
// it and when. It holds at most its limit of sightings and counts what it
// could not keep. It is safe for concurrent use.
type PullWatch struct {
	nc    *nats.Conn
	since time.Time
	limit int
	subs  []*nats.Subscription

	mu         sync.Mutex
	visible    map[string]bool
	subscribed map[string]bool
	heard      map[pullKey]map[string]*sighting
	held       int
	dropped    uint64
	// named are the connections CONNZ found for an inbox: a process whose
	// inbox is unchanged is not asked about again.
	named map[string]pullConn
}

type pullKey struct{ account, stream, consumer string }

type sighting struct {
	// inbox and last are of the process's latest pull; pinID is the
	// latest pin id any of its pulls carried.
	inbox string
	last  time.Time
	pinID string
}

type pullConn struct {
	name, ip, server string
	cid              uint64
}

// WatchPulls reads the system account's imports (the account of nc's user)
// and subscribes to the pull requests and pin advisories of each account
// they bring in. limit bounds the (consumer, process) sightings held; 0
// means 100,000. An account without the import is reported not visible.
func WatchPulls(ctx context.Context, nc *nats.Conn, limit int) (*PullWatch, error) {
	if limit <= 0 {
		limit = defaultPullerLimit
	}
	w := &PullWatch{nc: nc, since: time.Now(), limit: limit, visible: map[string]bool{}, subscribed: map[string]bool{},
		heard: map[pullKey]map[string]*sighting{}, named: map[string]pullConn{}}
	if err := w.Refresh(ctx); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// Refresh reads the system account's imports again and subscribes to those
// it did not hear yet: an import an operator adds while serve runs.
func (w *PullWatch) Refresh(ctx context.Context) error {
	imports, err := systemImports(ctx, w.nc)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	added := false
	for _, imp := range imports {
		if imp.Type != "stream" || imp.Invalid || w.subscribed[imp.LocalSubject] {
			continue
		}
		prefix, ok := strings.CutSuffix(imp.LocalSubject, imp.Subject)
		if !ok {
			continue
		}
		// Only the pulls: the pin is the leader's record, and a consumer
		// sends its pin advisories only while someone listens
		// (consumer.go:2009-2013), so hearing them would cost the servers
		// work the audit does not use.
		if imp.Subject != pullNextSubject {
			continue
		}
		sub, err := w.nc.Subscribe(imp.LocalSubject, w.onPull(imp.Account, prefix+"$JS.API.CONSUMER.MSG.NEXT."))
		if err != nil {
			return fmt.Errorf("subscribe to %s (the system account's import of %s's pulls): %w", imp.LocalSubject, imp.Account, err)
		}
		_ = sub.SetPendingLimits(pullSubPendingLimit, -1)
		w.subs = append(w.subs, sub)
		w.subscribed[imp.LocalSubject] = true
		w.visible[imp.Account] = true
		added = true
	}
	if !added {
		return nil
	}
	// The subscriptions reach every server before a pull sent after this
	// returns is routed.
	if err := w.nc.FlushTimeout(pullConnzWait); err != nil {
		return fmt.Errorf("subscribe to the pulls: %w", err)
	}
	return nil
}

// Stop unsubscribes.
func (w *PullWatch) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.subs {
		_ = s.Unsubscribe()
	}
}

// Since is when the watch began to listen.
func (w *PullWatch) Since() time.Time { return w.since }

// Hears reports whether account's pulls are heard.
func (w *PullWatch) Hears(account string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.visible[account]
}

// importInfo is jwt.Import as an account's INFO lists it (nats-server
// monitor.go ExtImport).
type importInfo struct {
	Subject      string `json:"subject"`
	Account      string `json:"account"`
	LocalSubject string `json:"local_subject"`
	Type         string `json:"type"`
	Invalid      bool   `json:"invalid"`
}

// systemImports asks which account nc's user is in ($SYS.REQ.USER.INFO),
// then that account's imports ($SYS.REQ.ACCOUNT.<account>.INFO).
func systemImports(ctx context.Context, nc *nats.Conn) ([]importInfo, error) {
	var user struct {
		Data struct {
			Account string `json:"account"`
		} `json:"data"`
	}
	if err := requestJSON(ctx, nc, userInfoSubject, &user); err != nil {
		return nil, fmt.Errorf("ask which account the auditor's user is in: %w", err)
	}
	if user.Data.Account == "" {
		return nil, errors.New("ask which account the auditor's user is in: the reply names none")
	}
	var acc struct {
		Data struct {
			Imports []importInfo `json:"imports"`
		} `json:"data"`
	}
	if err := requestJSON(ctx, nc, fmt.Sprintf(accountInfoSubject, user.Data.Account), &acc); err != nil {
		return nil, fmt.Errorf("read the system account's imports: %w", err)
	}
	return acc.Data.Imports, nil
}

func requestJSON(ctx context.Context, nc *nats.Conn, subject string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, pullConnzWait)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return err
	}
	var reply struct {
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		return fmt.Errorf("a malformed reply to %s: %w", subject, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("%s: %w", subject, reply.Error)
	}
	return json.Unmarshal(m.Data, v)
}

// pullRequest is the part of a pull request (nats-server JSApiConsumerGetNextRequest)
// the watch reads: the pin id a holder sends.
type pullRequest struct {
	ID string `json:"id"`
}

func (w *PullWatch) onPull(account, prefix string) nats.MsgHandler {
	return func(m *nats.Msg) {
		rest, ok := strings.CutPrefix(m.Subject, prefix)
		if !ok || m.Reply == "" {
			return
		}
		stream, consumer, ok := strings.Cut(rest, ".")
		if !ok {
			return
		}
		var req pullRequest
		if len(m.Data) > 0 {
			// A request that is not JSON (a batch count) carries no pin.
			_ = json.Unmarshal(m.Data, &req)
		}
		w.heardPull(pullKey{account, stream, consumer}, m.Reply, req.ID, time.Now())
	}
}

func (w *PullWatch) heardPull(k pullKey, inbox, pinID string, at time.Time) {
	proc := ProcessOf(inbox)
	w.mu.Lock()
	defer w.mu.Unlock()
	procs := w.heard[k]
	if procs == nil {
		procs = map[string]*sighting{}
		w.heard[k] = procs
	}
	s := procs[proc]
	if s == nil {
		if w.held >= w.limit {
			w.dropped++
			return
		}
		s = &sighting{}
		procs[proc] = s
		w.held++
	}
	// A process's pulls without the pin (a new Consume of the same
	// process) do not make it lose the pin its other pulls carry.
	s.inbox, s.last = inbox, at
	if pinID != "" {
		s.pinID = pinID
	}
}

// Forget drops what was heard before t: a process that has not pulled
// since is no longer a puller.
func (w *PullWatch) Forget(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, procs := range w.heard {
		for p, s := range procs {
			if s.last.Before(t) {
				delete(procs, p)
				w.held--
			}
		}
		if len(procs) == 0 {
			delete(w.heard, k)
		}
	}
	current := map[string]bool{}
	for _, procs := range w.heard {
		for _, s := range procs {
			current[s.inbox] = true
		}
	}
	for inbox := range w.named {
		if !current[inbox] {
			delete(w.named, inbox)
		}
	}
}

// ProcessOf keys the process that subscribes inbox: the inbox up to its
// last NUID-sized token, of which it keeps the first 12 characters, the
// prefix a process's NUIDs share (nuid.go: preLen 12, seqLen 10). nats.go's
// NewInbox is "<prefix>.<NUID>", its request inboxes
// "<prefix>.<NUID>.<token>". A reply mapped by a service import ("_R_.")
// names no process: every such reply is one key.
func ProcessOf(inbox string) string {
	if strings.HasPrefix(inbox, "_R_.") {
		return "_R_"
	}
	toks := strings.Split(inbox, ".")
	for i := len(toks) - 1; i >= 1; i-- {
		if len(toks[i]) == nuidLen && isBase62(toks[i]) {
			return strings.Join(toks[:i], ".") + "." + toks[i][:nuidPrefixLen]
		}
	}
	return inbox
}

const nuidLen, nuidPrefixLen = 22, 12

func isBase62(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Fill writes into snap what the watch heard since the start of horizon
// before now (all of it when horizon is 0): each consumer's pullers, named
// by CONNZ, with the holder of its leader's pin first, and snap.Pulls.
func (w *PullWatch) Fill(ctx context.Context, snap *snapshot.Snapshot, horizon time.Duration) {
	now := time.Now()
	w.mu.Lock()
	var dropped uint64
	for _, s := range w.subs {
		if n, err := s.Dropped(); err == nil && n > 0 {
			dropped += uint64(n)
		}
	}
	sight := &snapshot.PullSight{Visible: map[string]bool{}, Since: w.since, Watched: now.Sub(w.since), Dropped: w.dropped + dropped}
	for a := range w.visible {
		sight.Visible[a] = true
	}
	byAsset := map[*snapshot.Asset][]snapshot.Puller{}
	var ask []inboxQuestion
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		if a.Pull == nil {
			continue
		}
		if !w.visible[a.Account] {
			sight.Visible[a.Account] = false
			continue
		}
		for proc, s := range w.heard[pullKey{a.Account, a.Stream, a.Consumer}] {
			if horizon > 0 && now.Sub(s.last) > horizon {
				continue
			}
			p := snapshot.Puller{Process: proc, Inbox: s.inbox, LastSeen: s.last, PinID: s.pinID,
				Holder: s.pinID != "" && s.pinID == a.Pull.PinnedID}
			if c, ok := w.named[s.inbox]; ok {
				p.Name, p.IP, p.CID, p.Server = c.name, c.ip, c.cid, c.server
			} else {
				ask = append(ask, inboxQuestion{a.Account, s.inbox})
			}
			byAsset[a] = append(byAsset[a], p)
		}
	}
	w.mu.Unlock()

	found := w.connz(ctx, snap, ask)
	w.mu.Lock()
	for inbox, c := range found {
		w.named[inbox] = c
	}
	w.mu.Unlock()
	for a, ps := range byAsset {
		for i := range ps {
			if c, ok := found[ps[i].Inbox]; ok {
				ps[i].Name, ps[i].IP, ps[i].CID, ps[i].Server = c.name, c.ip, c.cid, c.server
			}
		}
		slices.SortFunc(ps, func(x, y snapshot.Puller) int {
			if x.Holder != y.Holder {
				if x.Holder {
					return -1
				}
				return 1
			}
			return strings.Compare(x.Process, y.Process)
		})
		a.Pull.Pullers = ps
	}
	snap.Pulls = sight
}

// inboxQuestion asks which connection of account subscribes inbox.
type inboxQuestion struct{ account, inbox string }

// connzReply is the part of a CONNZ reply the watch reads.
type connzReply struct {
	Server serverInfo `json:"server"`
	Data   struct {
		Connections []struct {
			CID  uint64   `json:"cid"`
			IP   string   `json:"ip"`
			Name string   `json:"name"`
			Subs []string `json:"subscriptions_list"`
		} `json:"connections"`
	} `json:"data"`
}

// connzRequest is the part of server.ConnzOptions the watch sets.
type connzRequest struct {
	Account       string `json:"acc"`
	FilterSubject string `json:"filter_subject,omitempty"`
	CID           uint64 `json:"cid,omitempty"`
	Subscriptions bool   `json:"subscriptions,omitempty"`
}

// connz names the connection that subscribes each inbox asked about, in
// rounds. Each round asks every server about one inbox per process
// (ProcessOf), without subscriptions (a reply is one connection's summary),
// then asks the server of each connection found for its subscriptions
// once, which names every other inbox of that connection at once. A
// process's inboxes on another connection are left to the next round.
// Asking per inbox with subscriptions instead cost a reply as large as the
// connection's subscriptions per inbox (BENCHMARKS.md, the pull watch at
// 10,000 pinned consumers). Rounds end when every inbox is named, a round
// names none, or a short while has passed; the rest is asked at the next
// Fill.
func (w *PullWatch) connz(ctx context.Context, snap *snapshot.Snapshot, ask []inboxQuestion) map[string]pullConn {
	found := map[string]pullConn{}
	ctx, cancel := context.WithTimeout(ctx, 2*pullConnzWait)
	defer cancel()
	for len(ask) > 0 && ctx.Err() == nil {
		// One inbox per process is asked about first.
		seen := map[string]bool{}
		var first []inboxQuestion
		for _, q := range ask {
			if k := q.account + " " + ProcessOf(q.inbox); !seen[k] {
				seen[k] = true
				first = append(first, q)
			}
		}
		qs := make([]connzQuestion, len(first))
		for i, q := range first {
			qs[i] = connzQuestion{PingEndpointSubject("CONNZ"), max(len(snap.Servers), 1), connzRequest{Account: q.account, FilterSubject: q.inbox}}
		}
		conns := w.connzAsk(ctx, qs)
		// Each connection found is asked for its subscriptions once, by
		// the server it is on.
		var owners []inboxQuestion
		qs = qs[:0]
		byConn := map[connKey]bool{}
		for i, c := range conns {
			if c.pullConn == nil {
				continue
			}
			found[first[i].inbox] = *c.pullConn
			if k := (connKey{c.serverID, c.cid}); !byConn[k] {
				byConn[k] = true
				owners = append(owners, first[i])
				qs = append(qs, connzQuestion{ServerSubject(c.serverID, "CONNZ"), 1, connzRequest{Account: first[i].account, CID: c.cid, Subscriptions: true}})
			}
		}
		if len(owners) == 0 {
			break
		}
		for i, d := range w.connzAsk(ctx, qs) {
			c := found[owners[i].inbox]
			if d.pullConn == nil || d.cid != c.cid {
				continue
			}
			subjects := subjectSet(d.subs)
			for _, o := range ask {
				if _, named := found[o.inbox]; !named && o.account == owners[i].account && subjects.match(o.inbox) {
					found[o.inbox] = c
				}
			}
		}
		// An inbox asked about that no server named is gone (its process
		// stopped or resubscribed): it waits for the next Fill.
		asked := map[string]bool{}
		for _, q := range first {
			asked[q.inbox] = true
		}
		var next []inboxQuestion
		for _, q := range ask {
			if _, named := found[q.inbox]; !named && !asked[q.inbox] {
				next = append(next, q)
			}
		}
		ask = next
	}
	return found
}

type connKey struct {
	server string
	cid    uint64
}

// connzAnswer is the connection a CONNZ question found, if any, with the
// answering server's id and the connection's subscriptions when asked for.
type connzAnswer struct {
	*pullConn
	serverID string
	subs     []string
}

// connzQuestion is one CONNZ request: to whom, how many replies it gets
// (every server, or the one asked), and what it asks.
type connzQuestion struct {
	subject string
	replies int
	req     connzRequest
}

// connzAsk sends every question at once and waits until each has had its
// replies or ctx ends. A question's answer is the first connection any
// reply named.
func (w *PullWatch) connzAsk(ctx context.Context, qs []connzQuestion) []connzAnswer {
	out := make([]connzAnswer, len(qs))
	need := 0
	for _, q := range qs {
		need += q.replies
	}
	base := w.nc.NewInbox()
	ch := make(chan *nats.Msg, need)
	sub, err := w.nc.ChanSubscribe(base+".*", ch)
	if err != nil {
		return out
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1)
	for i, q := range qs {
		b, _ := json.Marshal(q.req)
		_ = w.nc.PublishRequest(q.subject, fmt.Sprintf("%s.%d", base, i), b)
	}
	ctx, cancel := context.WithTimeout(ctx, pullConnzWait)
	defer cancel()
	for range need {
		select {
		case <-ctx.Done():
			return out
		case m := <-ch:
			var i int
			if _, err := fmt.Sscanf(m.Subject[len(base)+1:], "%d", &i); err != nil || i < 0 || i >= len(qs) {
				continue
			}
			var r connzReply
			if json.Unmarshal(m.Data, &r) != nil || len(r.Data.Connections) == 0 || out[i].pullConn != nil {
				continue
			}
			c := r.Data.Connections[0]
			out[i] = connzAnswer{pullConn: &pullConn{name: c.Name, ip: c.IP, cid: c.CID, server: r.Server.Name}, serverID: r.Server.ID, subs: c.Subs}
		}
	}
	return out
}

// subjects is a connection's subscriptions: literal subjects, and those
// with wildcards (a request inbox "<prefix>.<NUID>.*").
type subjects struct {
	literal  map[string]bool
	wildcard [][]string
}

func subjectSet(subs []string) subjects {
	s := subjects{literal: make(map[string]bool, len(subs))}
	for _, sub := range subs {
		if strings.ContainsAny(sub, "*>") {
			s.wildcard = append(s.wildcard, strings.Split(sub, "."))
		} else {
			s.literal[sub] = true
		}
	}
	return s
}

// match reports whether a message published to subject reaches one of the
// subscriptions.
func (s subjects) match(subject string) bool {
	if s.literal[subject] {
		return true
	}
	toks := strings.Split(subject, ".")
	for _, pat := range s.wildcard {
		if tokensMatch(pat, toks) {
			return true
		}
	}
	return false
}

func tokensMatch(pat, toks []string) bool {
	for i, p := range pat {
		if p == ">" {
			return len(toks) > i
		}
		if i >= len(toks) || p != "*" && p != toks[i] {
			return false
		}
	}
	return len(pat) == len(toks)
}
