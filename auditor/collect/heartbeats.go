package collect

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	json "github.com/segmentio/encoding/json"
)

// Heartbeats follows the servers' system-account events (EventSubjects) and
// says of each whether what the last audit saw may have changed: a server
// shut down, entered lame duck mode, came back, runs another version or
// process (id), lost or gained a route or gateway, or a leafnode connection
// came or went. A heartbeat that matches what is known asks for nothing. It
// reads the events through the audit's own projections, and is safe for
// concurrent use.
type Heartbeats struct {
	// last returns the latest audit's snapshot (nil before the first): a
	// server heard of for the first time is held against it.
	last func() *snapshot.Snapshot

	mu    sync.Mutex
	known map[string]*heardServer
}

// heardServer is what the heartbeats last said of a server.
type heardServer struct {
	id, version string
	// links are the routes and gateways its last heartbeat listed.
	links []string
	// gone is set by its SHUTDOWN: whatever it says next is a comeback.
	gone bool
}

// NewHeartbeats returns a tracker that holds servers it hears of for the
// first time against the snapshot last returns.
func NewHeartbeats(last func() *snapshot.Snapshot) *Heartbeats {
	return &Heartbeats{last: last, known: map[string]*heardServer{}}
}

// Heartbeat is a STATSZ heartbeat, read once (ParseHeartbeat) for every
// party that hears it: the tracker (Heartbeats.Statsz) and each audit
// running (Events.Heartbeat). It is not changed once parsed, so the
// parties may read it at once.
type Heartbeat struct {
	msg *statszReply
	srv snapshot.Server
	// size is the length of the raw message, which an audit holds against
	// its Options.MaxReplyBytes as it does a reply.
	size int
}

// ParseHeartbeat reads a STATSZ heartbeat; it fails on one it cannot read.
func ParseHeartbeat(data []byte) (*Heartbeat, error) {
	msg, srv, err := parseStatsz(data)
	if err != nil {
		return nil, err
	}
	return &Heartbeat{msg: msg, srv: srv, size: len(data)}, nil
}

// Statsz takes a STATSZ heartbeat and returns why it asks for an audit, ""
// when it does not.
func (h *Heartbeats) Statsz(hb *Heartbeat) string {
	msg, s := hb.msg, hb.srv
	var links []string
	for _, r := range msg.Stats.Routes {
		links = append(links, "route "+r.Name)
	}
	for _, g := range msg.Stats.Gateways {
		links = append(links, "gateway "+g.Name)
	}
	slices.Sort(links)
	links = slices.Compact(links)

	h.mu.Lock()
	defer h.mu.Unlock()
	k, ok := h.known[s.Name]
	if !ok {
		k = &heardServer{id: s.ID, version: s.Version, links: links}
		h.known[s.Name] = k
	}
	if ok && k.gone && k.id == s.ID {
		// The process that shut down sent this before its SHUTDOWN, and it
		// was handled after: nats.go delivers each subscription on a
		// goroutine of its own. A server comes back as a new process, under
		// a new id: NewServer makes one at each start (2.15.3 server.go:716,
		// :743).
		return ""
	}
	reason := ""
	switch {
	case !ok:
		reason = h.firstHeard(s, links)
	case k.gone:
		reason = fmt.Sprintf("server %s is back (%s, id %s)", s.Name, s.Version, s.ID)
	case k.id != s.ID:
		reason = fmt.Sprintf("server %s restarted (%s, id %s, was %s)", s.Name, s.Version, s.ID, k.id)
	case k.version != s.Version:
		reason = fmt.Sprintf("server %s runs %s, was %s", s.Name, s.Version, k.version)
	case !slices.Equal(k.links, links):
		if d := h.linksDiff(k.links, links); len(d) > 0 {
			reason = fmt.Sprintf("server %s's routes or gateways changed: %s", s.Name, strings.Join(d, ", "))
		}
	}
	k.id, k.version, k.links, k.gone = s.ID, s.Version, links, false
	return reason
}

// firstHeard holds a server heard of for the first time against the last
// audit. Before any audit there is nothing to hold it against: the first
// audit, running or about to, sees it. Its routes are held against the
// servers of its cluster that the audit saw: a heartbeat heard first after a
// peer was killed (which sends no SHUTDOWN) is the only word of that loss.
// h.mu is held.
func (h *Heartbeats) firstHeard(s snapshot.Server, links []string) string {
	snap := h.last()
	if snap == nil {
		return ""
	}
	var lost []string
	audited := false
	for _, a := range snap.Servers {
		if a.Name == s.Name {
			audited = true
			if a.ID != s.ID || a.Version != s.Version {
				return fmt.Sprintf("server %s runs %s (id %s), the last audit saw %s (id %s)", s.Name, s.Version, s.ID, a.Version, a.ID)
			}
			continue
		}
		if s.Cluster == "" || a.Cluster != s.Cluster || slices.Contains(links, "route "+a.Name) {
			continue
		}
		if k := h.known[a.Name]; k != nil && k.gone {
			continue
		}
		lost = append(lost, a.Name)
	}
	switch {
	case !audited:
		return fmt.Sprintf("server %s (%s) was not in the last audit", s.Name, s.Version)
	case len(lost) > 0:
		return fmt.Sprintf("server %s has no route to %s, which the last audit saw", s.Name, strings.Join(lost, ", "))
	}
	return ""
}

// linksDiff names the links gained and lost, leaving out routes lost to
// servers whose SHUTDOWN was heard: an audit was asked for then, and a
// second one would only wait for the server as the first does. h.mu is held.
func (h *Heartbeats) linksDiff(before, after []string) []string {
	var d []string
	for _, l := range before {
		if slices.Contains(after, l) {
			continue
		}
		if name, ok := strings.CutPrefix(l, "route "); ok && h.known[name] != nil && h.known[name].gone {
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

// Shutdown reads a SHUTDOWN event on subject and returns why it asks for an
// audit. Whatever the server says next is a comeback.
func (h *Heartbeats) Shutdown(subject string, data []byte) string {
	return "server " + h.going(subject, data, true) + " shut down"
}

// LameDuck reads a LAMEDUCK event on subject and returns why it asks for an
// audit.
func (h *Heartbeats) LameDuck(subject string, data []byte) string {
	return "server " + h.going(subject, data, false) + " entered lame duck mode"
}

// going returns the name of the server a SHUTDOWN or LAMEDUCK event is about
// (its id from the subject when the body does not name it).
func (h *Heartbeats) going(subject string, data []byte, gone bool) string {
	var si serverInfo
	_ = json.Unmarshal(data, &si)
	name := si.Name
	if name == "" {
		name = "id " + serverIDOf(subject)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !gone || si.Name == "" {
		return name
	}
	k, ok := h.known[si.Name]
	if !ok {
		// A server that shut down before its first heartbeat came is gone
		// all the same: the routes its peers lose to it were asked for by
		// this audit, and a heartbeat it sent before is stale.
		id := si.ID
		if id == "" {
			id = serverIDOf(subject)
		}
		k = &heardServer{id: id}
		h.known[si.Name] = k
	}
	k.gone = true
	return name
}

// serverIDOf is the server id in an event subject $SYS.SERVER.<id>.<event>.
func serverIDOf(subject string) string {
	if parts := strings.Split(subject, "."); len(parts) > 2 {
		return parts[2]
	}
	return ""
}

// leafKind is how connect and disconnect events spell a leafnode connection
// (kindStringMap in server/client.go).
var leafKind = []byte(`"kind":"Leafnode"`)

// LeafEvent reads a CONNECT or DISCONNECT event on subject and, for a
// leafnode connection, returns why it asks for an audit (the far end may be
// a server no STATSZ reaches, which only LEAFZ names) and whether it
// connected. ok is false for any other connection: clients' events are
// dropped unread.
func LeafEvent(subject string, data []byte) (reason string, connected, ok bool) {
	if !bytes.Contains(data, leafKind) {
		return "", false, false
	}
	var ev connectEvent
	if err := json.Unmarshal(data, &ev); err != nil || ev.Client.Kind != "Leafnode" {
		return "", false, false
	}
	connected, what := true, "connected"
	if strings.HasSuffix(subject, ".DISCONNECT") {
		connected, what = false, "disconnected"
	}
	return fmt.Sprintf("leafnode %s %s on server %s (account %s)", ev.Client.Name, what, ev.Server.Name, ev.Client.Account), connected, true
}
