package auditor

import (
	"path"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Policy is what Evaluate holds a snapshot against.
type Policy struct {
	// Floor is the oldest acceptable version.
	Floor version.Version
	// Accounts, Streams and Consumers are glob patterns (path.Match syntax)
	// that narrow the asset findings; empty means all. An account pattern
	// matches an account's id or its name. Server, cluster, leafnode and
	// completeness findings are never narrowed.
	Accounts  []string
	Streams   []string
	Consumers []string
	// ShardPolicy says when a priority consumer counts as pulled by nobody.
	ShardPolicy
}

// ShardPolicy holds what judges who pulls the consumers with a priority
// policy.
type ShardPolicy struct {
	// UnpulledAfter is how long a consumer with a priority policy may go
	// with a backlog, no pull waiting on its leader and no delivery or ack
	// before it is CONSUMER_PULLED_BY_NOBODY. Zero is
	// DefaultUnpulledAfter; a negative value turns the finding off.
	UnpulledAfter time.Duration
}

// DefaultUnpulledAfter is the servers' own default priority_timeout
// (JsDefaultPinnedTTL, 2.15.3 consumer.go:612): the grace a pinned_client
// consumer's leader gives its holder to pull again before it gives the pin
// to another. A live owner on nats.go's jetstream package keeps a pull
// waiting at all times (Consume and Messages ask again before the last
// pull expires, DefaultExpires 30s), so an empty queue with a backlog for
// this long is not a pause between two pulls.
const DefaultUnpulledAfter = 2 * time.Minute

func (p ShardPolicy) unpulledAfter() time.Duration {
	if p.UnpulledAfter == 0 {
		return DefaultUnpulledAfter
	}
	return p.UnpulledAfter
}

// accountSelected reports whether a's account matches one of patterns, by
// its id or (operator mode) its JWT name.
func accountSelected(patterns []string, a *snapshot.Asset) bool {
	return matchAny(patterns, a.Account) || (a.AccountName != "" && matchAny(patterns, a.AccountName))
}

// matchAny reports whether v matches one of patterns; no patterns match all.
func matchAny(patterns []string, v string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, v); ok {
			return true
		}
	}
	return false
}
