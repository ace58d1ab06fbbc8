package exporter

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

// assetRefreshEvery is how often the watcher reads the system account's
// imports again, for an import of asset advisories an operator added while
// serve runs: two small requests to one server.
const assetRefreshEvery = time.Minute

// watchAssets subscribes, once per subject, to the advisories of streams
// and consumers created, deleted and updated that the system account
// imports (collect.AssetImports). It reads the imports at once, before the
// connection's first audit: a user who may not read them (the least
// privilege of docs/permissions.md) is refused asynchronously, and a
// refusal during an audit would be that audit's. Only when that first
// read succeeds does it read them again every assetRefreshEvery, until the
// watcher stops. Each advisory asks for an audit (onAssetAdvisory). A user
// who may not read the imports leaves the checks alone to see such
// changes; that is logged at debug, for the checks are serve's design,
// the advisories a shortcut.
func (w *eventWatcher) watchAssets() {
	if !w.nc.IsConnected() || !w.refreshAssets() {
		return
	}
	go func() {
		t := time.NewTicker(assetRefreshEvery)
		defer t.Stop()
		for {
			select {
			case <-w.assetsDone:
				return
			case <-t.C:
				if w.nc.IsConnected() && !w.refreshAssets() {
					return
				}
			}
		}
	}()
}

// refreshAssets reads the imports and subscribes to those not yet heard;
// false when the imports could not be read.
func (w *eventWatcher) refreshAssets() bool {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	w.mu.Lock()
	w.readingImports = true
	w.mu.Unlock()
	imports, err := collect.AssetImports(ctx, w.nc)
	w.mu.Lock()
	w.readingImports = false
	w.mu.Unlock()
	if err != nil {
		w.log.Debug("cannot read the system account's imports of asset advisories", "err", err)
		return false
	}
	var added []string
	for _, imp := range imports {
		for _, subj := range imp.Subjects {
			w.mu.Lock()
			if w.stopped || w.assetSubs[subj] != nil {
				w.mu.Unlock()
				continue
			}
			sub, err := w.nc.Subscribe(subj, w.onAssetAdvisory)
			if err != nil {
				w.mu.Unlock()
				w.log.Debug("cannot subscribe to asset advisories", "subject", subj, "account", imp.Account, "err", err)
				continue
			}
			_ = sub.SetPendingLimits(eventPendingMsgs, eventPendingBytes)
			w.assetSubs[subj] = sub
			w.mu.Unlock()
			added = append(added, subj)
		}
	}
	if len(added) == 0 {
		return true
	}
	// The subscriptions reach every server before an advisory sent
	// after the line below is routed.
	if err := w.nc.FlushTimeout(flushTimeout); err != nil {
		w.log.Debug("could not confirm the subscriptions to asset advisories", "err", err)
		return true
	}
	w.log.Debug("hearing asset advisories", "subjects", added)
	return true
}

// importsRefused reports whether err is the refusal of the questions
// refreshAssets is asking, for a user without the permissions of the
// advisories' shortcut: logged at debug, and not passed on to serve's
// handler, which would warn at every connection.
func (w *eventWatcher) importsRefused(err error) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, `"$SYS.REQ.USER.INFO"`) && !strings.Contains(msg, `"$SYS.REQ.ACCOUNT.`) {
		return false
	}
	w.mu.Lock()
	reading := w.readingImports
	w.mu.Unlock()
	if reading {
		w.log.Debug("the user may not read the system account's imports: creates and deletes wait for the checks", "err", err)
	}
	return reading
}

// onAssetAdvisory asks for an audit: a stream or consumer was created,
// deleted or (a stream) updated. Which one is in the subject; the audit
// reads it. An application that creates a thousand consumers sends a
// thousand advisories: after the first, the advisories of the next
// assetGap share one audit at its end, so that a burst costs the servers
// an audit per gap (--audit.min-interval), not one per event interval.
func (w *eventWatcher) onAssetAdvisory(m *nats.Msg) {
	w.count(metrics.EventAssetChanged, false)
	reason := "an asset advisory on " + m.Subject
	w.mu.Lock()
	if w.stopped || w.assetTimer != nil {
		w.mu.Unlock()
		return
	}
	wait := w.assetGap - time.Since(w.assetLast)
	if wait <= 0 {
		w.assetLast = time.Now()
		w.mu.Unlock()
		w.trigger(reason)
		return
	}
	defer w.mu.Unlock()
	w.assetTimer = time.AfterFunc(wait, func() {
		w.mu.Lock()
		w.assetTimer, w.assetLast = nil, time.Now()
		w.mu.Unlock()
		w.trigger(reason + " (and those since)")
	})
}
