package auditor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// The feature table (Features, ReplicatedOps) predicts what a release does
// with an asset, and is only as good as the releases it has read. What the
// servers show needs no table: a peer its leader lists that answered the
// audit, whose reply was read whole, and that does not report the asset,
// does not run it, whatever the cause. These rules judge that.

// LoadAllowance is how long after a server starts, or after an asset is
// created, the audit lets a peer go without reporting the asset before it
// holds that against it. A restarting server restores its streams from its
// store before it is ready (2.11.12 logs "Starting restore for stream"
// before "Server is ready", and the audit asks no server that is not), and
// a peer creates a new asset when it applies its assignment, within a
// second of its leader here; the allowance covers a server that catches up
// from its meta leader's snapshot on a busy machine.
const LoadAllowance = 10 * time.Second

// CatchUpAllowance is how long a peer that runs an asset may go unheard by
// the asset's leader before the audit says it is behind: a peer of an R3
// stream restarted with 20,000 messages to catch up on was current again
// 6 s after its restart here, with audits running back to back
// (TestRestartingPeerIsNoFinding), and the leader's own view goes on
// calling a peer current for a while after it last heard from it
// (lostQuorumInterval, 10 s: 2.14.0 jetstream_cluster.go:10675-10682 and raft.go:287), so that
// a peer's silence shorter than that is nothing to see.
const CatchUpAllowance = 30 * time.Second

// observed holds an asset's group, as its leader lists it, against the
// servers that reported the asset: a peer that answered and does not run
// it (ASSET_PEER_MISSING), and one that runs it and that the leader has not
// heard from for longer than a catch-up takes (ASSET_PEER_BEHIND). Only
// peers whose replies were read whole are judged; a server that started,
// or an asset created, less than LoadAllowance before the audit is not.
// Where the feature table already says why a peer does not run the asset
// (ASSET_PEER_NOT_RUNNING, ASSET_API_LEVEL_UNSUPPORTED, ASSET_CRASHES_SERVER,
// ASSET_HALTS_META), that finding speaks for it.
func (e *evaluation) observed(a *snapshot.Asset) {
	o := a.Observed
	if o == nil {
		return
	}
	// The audit's start is the now the ages are weighed against.
	young := !o.Created.IsZero() && e.snap.Started.Sub(o.Created) < LoadAllowance
	var missing []snapshot.Server
	unknown := false // an absent peer whose reply was not read may run it
	for _, name := range o.Absent {
		s, ok := e.seen[name]
		unknown = unknown || !ok || e.unread[name]
		if !ok || e.unread[name] || young || s.Uptime < LoadAllowance {
			continue
		}
		missing = append(missing, s)
	}
	n := o.Listed
	running := n - len(o.Absent)
	for _, s := range missing {
		if e.tableExplains(a, s) {
			continue
		}
		runs := runsOn(running, n, false)
		if unknown {
			runs = fmt.Sprintf("runs on at least %d of its %d peers", running, n)
		}
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.AssetPeerMissing, s.Name, s.Cluster, s.Version, a.Leader
		f.Message = fmt.Sprintf("%s %s %s: %s (%s) answered the audit and does not run it, though its leader %s lists it as a peer; %s",
			a.Kind, a.Label(), runs, s.Name, s.Version, a.Leader, e.missingCause(a, s))
		e.add(f)
	}
	current := running
	for _, b := range o.Behind {
		if a.Hosted(b.Server) {
			current--
		}
	}
	for _, b := range o.Behind {
		s, ok := e.seen[b.Server]
		if !ok || e.unread[b.Server] || b.Active < CatchUpAllowance || s.Uptime < CatchUpAllowance || !a.Hosted(b.Server) {
			continue
		}
		f := assetFinding(a)
		f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.AssetPeerBehind, s.Name, s.Cluster, s.Version, a.Leader
		f.Message = fmt.Sprintf("%s %s: peer %s (%s) runs it, but its leader %s has not heard from it for %s and does not count it as current: %s",
			a.Kind, a.Label(), s.Name, s.Version, a.Leader, b.Active.Round(time.Second), quorumNote(n, current))
		e.add(f)
	}
}

// quorumNote says what a group of n peers with current ones current has
// left: a behind peer is no finding of the gate's while the group keeps
// its quorum without it.
func quorumNote(n, current int) string {
	quorum := n/2 + 1
	switch {
	case current < quorum:
		return fmt.Sprintf("%d of its %d peers are current, fewer than its quorum of %d", current, n, quorum)
	case current == quorum:
		return fmt.Sprintf("%d of its %d peers are current, a bare quorum: one more peer down and it stops", current, n)
	}
	return fmt.Sprintf("%d of its %d peers are current, above its quorum of %d", current, n, quorum)
}

// tableExplains reports whether a finding from the tables already says why
// peer s does not run the asset: a feature of the config keeps it from
// running its replica (it crashes on, halts at, does not load or create,
// or holds offline the config), or its API level falls short and it holds
// the asset offline. A table that says the peer runs it (a 2.10 server,
// which knows no levels, online and diverging) is contradicted by the
// replies, which then speak.
func (e *evaluation) tableExplains(a *snapshot.Asset, s snapshot.Server) bool {
	o := releases.Supported
	if a.Features != 0 {
		o, _ = worstFeature(a.Features, s.Parsed)
	}
	if o != releases.Supported && !releases.RunsReplica(o) {
		return true
	}
	required, _ := a.LevelNeeded(s.Parsed)
	return levelSpeaks(required, s.APILevel) && s.APILevel > 0 && o != releases.IgnoredOnline
}

// missingCause is what the audit can say of why s does not run the asset:
// the feature table's word where it has one that is not about the replica
// (a config the peer runs diverging), else that the cause is in the
// server's log.
func (e *evaluation) missingCause(a *snapshot.Asset, s snapshot.Server) string {
	if !s.JetStream {
		return "its JetStream is off"
	}
	if c := e.heldConsumer(a, s); c != "" {
		return "it holds the stream's consumer " + c + " offline as unsupported, and a server from 2.11.9 on stops the consumer's stream with it (see the consumer's finding)"
	}
	var what []string
	if a.Features != 0 {
		for _, ft := range a.Features.Features() {
			if h := ft.HandlingBy(s.Parsed); h.Asset != releases.Supported {
				what = append(what, fmt.Sprintf("%s, new in %s", ft.Title, ft.Since))
			}
		}
	}
	if len(what) > 0 {
		return "cause unknown: see the server's log (the feature table knows it lacks " + strings.Join(what, "; ") + ", but not that this keeps it from running it)"
	}
	return "cause unknown: see the server's log (the feature table knows no reason)"
}

// heldConsumer names a consumer of stream a that peer s holds offline as
// unsupported, by the tables, where s is of a release that stops the
// stream for it (stopsStreamSince); "" when none. It looks only when a
// stream's peer is missing, which is rare, so it scans the consumers
// rather than keep an index of them by stream.
func (e *evaluation) heldConsumer(a *snapshot.Asset, s snapshot.Server) string {
	if a.Kind != releases.KindStream || e.snap == nil || !s.Parsed.AtLeast(stopsStreamSince) {
		return ""
	}
	for i := range e.snap.Consumers {
		c := &e.snap.Consumers[i]
		if c.Stream != a.Stream || c.Account != a.Account || c.Domain != a.Domain || !slices.Contains(c.Peers, s.Name) {
			continue
		}
		o := releases.Supported
		if c.Features != 0 {
			o, _ = worstFeature(c.Features, s.Parsed)
		}
		if required, _ := c.LevelNeeded(s.Parsed); heldOffline(o, required, s.APILevel) {
			return c.Consumer
		}
	}
	return ""
}
