package snapshot

import (
	"slices"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
)

// LeaderChange is a replicated stream's or consumer's new leader, as the
// servers announced it in a LEADER_ELECTED advisory, between two audits.
type LeaderChange struct {
	Kind     releases.AssetKind
	Domain   string
	Account  string
	Stream   string
	Consumer string // empty for a stream
	// Leader is the server name of the new leader.
	Leader string
	// Elected is when the new leader's server says it was elected (the
	// advisory's timestamp, by that server's clock); Heard is when the
	// auditor received the advisory.
	Elected, Heard time.Time
}

// OutOfOrder reports whether c, heard after earlier, is of the same asset
// and yet was elected before it: the advisories arrived out of order, and
// which leader is the latest only an audit can tell.
func (c LeaderChange) OutOfOrder(earlier LeaderChange) bool {
	return c.Key() == earlier.Key() && c.Leader != earlier.Leader && c.Elected.Before(earlier.Elected)
}

// Label names the asset as findings do, by the account id alone.
func (c LeaderChange) Label() string {
	n := c.Account + " > " + c.Stream
	if c.Consumer != "" {
		n += " > " + c.Consumer
	}
	return n
}

// Key is the asset the change is of: a map key.
func (c LeaderChange) Key() AssetKey {
	return AssetKey{kind: c.Kind, domain: c.Domain, account: c.Account, stream: c.Stream, consumer: c.Consumer}
}

// AssetKey names a stream or consumer across accounts and domains.
type AssetKey struct {
	kind                              releases.AssetKind
	domain, account, stream, consumer string
}

// Key is what tells a from every other asset.
func (a *Asset) Key() AssetKey {
	return AssetKey{kind: a.Kind, domain: a.Domain, account: a.Account, stream: a.Stream, consumer: a.Consumer}
}

// WithLeaders returns a copy of s in which each change's asset is led by its
// new leader; s itself is not changed. A later change of one asset wins
// over an earlier one.
//
// unseen are the changes it could not apply: of an asset s does not hold,
// or whose new leader is not one of the asset's peers as s has them. What
// the snapshot says of those would be a guess (a new asset, a group moved
// to other servers); only a new audit can tell. stale are changes it
// applied to an asset whose other facts came from its old leader (who
// pulls it, what the leader showed of its peers): the new leader has its
// own, which only an audit reads.
func (s *Snapshot) WithLeaders(changes []LeaderChange) (out *Snapshot, unseen, stale []LeaderChange) {
	latest := make(map[AssetKey]LeaderChange, len(changes))
	for _, c := range changes {
		latest[c.Key()] = c
	}
	cp := *s
	applied := map[AssetKey]bool{}
	cp.Streams, stale = withLeaders(s.Streams, latest, applied, stale)
	cp.Consumers, stale = withLeaders(s.Consumers, latest, applied, stale)
	for _, c := range changes {
		if !applied[c.Key()] {
			unseen = append(unseen, latest[c.Key()])
			applied[c.Key()] = true // one entry per asset
		}
	}
	return &cp, unseen, stale
}

// withLeaders returns assets with the changes in latest applied, cloned
// only if one applies; applied records the keys it applied, and stale
// gets those of assets with facts of their old leader's.
func withLeaders(assets []Asset, latest map[AssetKey]LeaderChange, applied map[AssetKey]bool, stale []LeaderChange) ([]Asset, []LeaderChange) {
	var out []Asset
	for i := range assets {
		c, ok := latest[assets[i].Key()]
		if !ok || !slices.Contains(assets[i].Peers, c.Leader) {
			continue
		}
		if out == nil {
			out = slices.Clone(assets)
		}
		a := &out[i]
		if a.Leader != c.Leader && (a.Pull != nil || a.Observed != nil) {
			stale = append(stale, c)
		}
		a.Leader = c.Leader
		applied[c.Key()] = true
	}
	if out == nil {
		return assets, stale
	}
	return out, stale
}
