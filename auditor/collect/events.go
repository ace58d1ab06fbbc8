package collect

import "sync"

// Events hands what serve's event watcher hears from the servers (see
// Heartbeats) to the audits running as it arrives. An audit pings once: a server that starts
// after the ping never gets it, so an audit waiting for a server that went
// away (still a meta peer, still named by the assets it hosts) waits out
// its whole timeout even when that server is back within a second, and an
// audit that asked a server just before it shut down waits as long for
// replies that will not come.
//
//   - A STATSZ heartbeat ($SYS.SERVER.<id>.STATSZ) is the message a STATSZ
//     ping is answered with: from a server the audit has not heard under
//     any id, the audit takes it as that server's answer and asks it, under
//     its new id, for LEAFZ and JSZ.
//   - A SHUTDOWN ($SYS.SERVER.<id>.SHUTDOWN) ends the wait for what the
//     audit asked that process: its requests fail at once, as they would at
//     the timeout, and the audit reports them.
//
// Neither makes an audit complete that would not be: a heartbeat is a real
// answer, and the server still has to answer LEAFZ and JSZ; a SHUTDOWN only
// turns a wait into the failure it was going to be. check has no events and
// pings alone.
type Events struct {
	mu   sync.Mutex
	next int
	subs map[int]eventSink
}

type eventSink interface {
	heartbeat(hb *Heartbeat)
	shutdown(serverID string)
}

// Heartbeat passes a server's STATSZ heartbeat, read once by
// ParseHeartbeat, to every audit running. Like Shutdown, it does nothing on
// a nil Events.
func (e *Events) Heartbeat(hb *Heartbeat) {
	for _, s := range e.sinks() {
		s.heartbeat(hb)
	}
}

// Shutdown passes a server's SHUTDOWN, an event on subject
// ($SYS.SERVER.<id>.SHUTDOWN), to every audit running.
func (e *Events) Shutdown(subject string) {
	id := serverIDOf(subject)
	if id == "" {
		return
	}
	for _, s := range e.sinks() {
		s.shutdown(id)
	}
}

func (e *Events) sinks() []eventSink {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]eventSink, 0, len(e.subs))
	for _, s := range e.subs {
		out = append(out, s)
	}
	return out
}

// subscribe passes events to s until the returned function is called.
func (e *Events) subscribe(s eventSink) (unsubscribe func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subs == nil {
		e.subs = map[int]eventSink{}
	}
	id := e.next
	e.next++
	e.subs[id] = s
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.subs, id)
	}
}
