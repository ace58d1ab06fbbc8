package exporter

import (
	"maps"
	"sync"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Memory remembers, across the audits of a long-running auditor, the last
// report of each server, so that a server that stops answering is still
// reported as the version it ran: a 2.12 follower that crashed after a RESET
// is missing, and it was a 2.12 server. It is safe for concurrent use.
type Memory struct {
	mu   sync.Mutex
	seen map[string]snapshot.Server
}

// Recall remembers the servers snap saw answer and sets snap.LastSeen to
// what it remembers of the ones snap still expects. A server is forgotten
// once it neither answers nor is named by anyone: the system forgot it too.
func (m *Memory) Recall(snap *snapshot.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]snapshot.Server{}
	}
	answered := map[string]bool{}
	for _, s := range snap.Servers {
		m.seen[s.Name] = s
		answered[s.Name] = true
	}
	maps.DeleteFunc(m.seen, func(name string, _ snapshot.Server) bool {
		_, named := snap.ExpectedNames[name]
		return !answered[name] && !named
	})
	snap.LastSeen = map[string]snapshot.Server{}
	for name, s := range m.seen {
		if !answered[name] {
			snap.LastSeen[name] = s
		}
	}
}
