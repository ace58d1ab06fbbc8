package snapshot

import (
	"time"
)

// AnsweredIn counts the JetStream servers of a domain that answered: the
// members of its meta group.
func AnsweredIn(servers []Server, domain string) int {
	n := 0
	for _, s := range servers {
		if s.JetStream && s.Domain == domain {
			n++
		}
	}
	return n
}

// StaleRegistration is how long a server that died without a clean shutdown
// stays counted in the others' active_servers: nats-server forgets a silent
// server after 150 s, checked every 90 s.
const StaleRegistration = 240 * time.Second

// StaleCount reports whether an unnamed surplus in the active-server count is
// what a crash-restart leaves behind: the server that came back under its
// name (with a new server id) started within StaleRegistration, and at least
// a second after some other server that still counts more than answered,
// while it counts exactly the servers that answered. Servers of a system that
// started together do not qualify: a surplus there is a server missing.
// Without this, every crash-restart would hold the gate at UNKNOWN for four
// minutes after the system had recovered.
func StaleCount(servers []Server) bool {
	for _, young := range servers {
		if young.Uptime <= 0 || young.Uptime >= StaleRegistration || young.ActiveServers != len(servers) {
			continue
		}
		for _, old := range servers {
			if old.Uptime > young.Uptime+time.Second && old.ActiveServers > len(servers) {
				return true
			}
		}
	}
	return false
}
