package exporter

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// pullRefreshEvery is how often serve reads the system account's imports
// again while an account with pinned consumers is not heard: an import an
// operator adds is heard within it, without a restart.
const pullRefreshEvery = time.Minute

// PullListener is serve's ear on who pulls: one collect.PullWatch for the
// life of each connection, so that every audit names the processes heard
// within the horizon before it, and forgets the rest (bounded memory).
type PullListener struct {
	horizon time.Duration
	logger  *slog.Logger

	mu        sync.Mutex
	nc        *nats.Conn
	watch     *collect.PullWatch
	refreshed time.Time
	// failedOn and failedAt are the connection on which listening was
	// last refused, and when.
	failedOn *nats.Conn
	failedAt time.Time
}

// NewPullListener listens with horizon: a process counts as a puller for
// that long after its last pull.
func NewPullListener(horizon time.Duration, logger *slog.Logger) *PullListener {
	return &PullListener{horizon: horizon, logger: logger}
}

// Fill writes into snap, audited on nc, who was heard pulling within the
// horizon. On a new connection it starts listening, so the first audits
// after a connect have listened only since (snap.Pulls.Watched says).
func (l *PullListener) Fill(ctx context.Context, nc *nats.Conn, snap *snapshot.Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nc {
		if l.watch != nil {
			l.watch.Stop()
			l.nc, l.watch = nil, nil
		}
		// A system without shards, or a user who may not ask, costs
		// nothing and says nothing; a refusal is tried again only after a
		// while.
		if !snap.HasPinned() || (l.failedOn == nc && time.Since(l.failedAt) < pullRefreshEvery) {
			return
		}
		w, err := collect.WatchPulls(ctx, nc, 0)
		if err != nil {
			l.failedOn, l.failedAt = nc, time.Now()
			l.logger.Warn("cannot hear who pulls the pinned consumers: audits go on without (docs/pulls.md)", "err", err)
			return
		}
		l.nc, l.watch, l.refreshed = nc, w, time.Now()
	}
	if l.unheardPinned(snap) && time.Since(l.refreshed) > pullRefreshEvery {
		l.refreshed = time.Now()
		if err := l.watch.Refresh(ctx); err != nil {
			l.logger.Warn("cannot read the system account's imports again", "err", err)
		}
	}
	l.watch.Forget(time.Now().Add(-l.horizon))
	l.watch.Fill(ctx, snap, l.horizon)
}

// unheardPinned: snap has a pinned_client consumer whose account's pulls
// are not heard.
func (l *PullListener) unheardPinned(snap *snapshot.Snapshot) bool {
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		if a.Pull != nil && a.Pull.Policy == snapshot.PriorityPinnedClient && !l.watch.Hears(a.Account) {
			return true
		}
	}
	return false
}

// Stop stops listening.
func (l *PullListener) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watch != nil {
		l.watch.Stop()
	}
}
