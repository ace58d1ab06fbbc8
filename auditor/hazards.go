package auditor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// DecodeCrash is a server that cannot decode an asset's config and crashes
// on it, or halts its meta group: every member of a JetStream domain's meta
// group decodes every assignment of the domain, so hosting the asset does
// not matter.
type DecodeCrash struct {
	Server  snapshot.Server
	Feature releases.Feature
	// Outcome is CrashesOnDecode or HaltsMeta.
	Outcome releases.Outcome
	// Missing is set for a server that did not answer this audit: its
	// version is the one an earlier audit saw.
	Missing bool
}

// DecodeCrashes lists the servers in the asset's JetStream domain that
// crash on its config: those that answered, then those only an earlier
// audit saw (lastSeen), which crash again when they come back. A server
// that crashes on several of its features is listed once, for the first.
func DecodeCrashes(a *snapshot.Asset, servers []snapshot.Server, lastSeen map[string]snapshot.Server) []DecodeCrash {
	return slices.DeleteFunc(domainDecodes(a, servers, lastSeen), func(c DecodeCrash) bool { return c.Outcome != releases.CrashesOnDecode })
}

// domainDecodes lists, as DecodeCrashes does, the servers of the asset's
// JetStream domain whose decoding of its config crashes them or halts
// their meta group: outcomes that every member of the domain's meta group
// meets, peer or not. A server is listed once per outcome, for the first
// feature that brings it.
func domainDecodes(a *snapshot.Asset, servers []snapshot.Server, lastSeen map[string]snapshot.Server) []DecodeCrash {
	if a.Features == 0 {
		return nil
	}
	features := a.Features.Features()
	var out []DecodeCrash
	answered := make(map[string]bool, len(servers))
	check := func(s snapshot.Server, missing bool) {
		if !s.JetStream || s.Domain != a.Domain {
			return
		}
		var crashes, halts bool
		for _, f := range features {
			o := f.HandlingBy(s.Parsed).Asset
			switch {
			case o == releases.CrashesOnDecode && !crashes:
				crashes = true
			case o == releases.HaltsMeta && !halts:
				halts = true
			default:
				continue
			}
			out = append(out, DecodeCrash{Server: s, Feature: f, Outcome: o, Missing: missing})
		}
	}
	for _, s := range servers {
		answered[s.Name] = true
		check(s, false)
	}
	for _, name := range sortedKeys(lastSeen) {
		if !answered[name] {
			check(lastSeen[name], true)
		}
	}
	return out
}

// Sourcers maps every origin consumer some stream of snap reads through
// durable sourcing to those streams, sorted by name. An origin named through
// an external API prefix "$JS.<domain>.API" is looked for in that domain,
// in the same account; one behind another prefix cannot be placed and is
// left out.
func Sourcers(snap *snapshot.Snapshot) map[ConsumerKey][]Sourcer {
	var out map[ConsumerKey][]Sourcer
	for i := range snap.Streams {
		a := &snap.Streams[i]
		for _, d := range a.DurableSources {
			domain, ok := a.Domain, true
			if d.APIPrefix != "" {
				domain, ok = apiPrefixDomain(d.APIPrefix)
			}
			if !ok {
				continue
			}
			if out == nil {
				out = map[ConsumerKey][]Sourcer{}
			}
			k := ConsumerKey{Domain: domain, Account: a.Account, Stream: d.Stream, Consumer: d.Consumer}
			out[k] = append(out[k], Sourcer{Account: a.Account, Stream: a.Stream, Mirror: d.Mirror, Leader: a.Leader})
		}
	}
	for k := range out {
		slices.SortFunc(out[k], func(x, y Sourcer) int { return strings.Compare(x.Name(), y.Name()) })
	}
	return out
}

// apiPrefixDomain reads the domain of a JetStream API prefix "$JS.<d>.API".
func apiPrefixDomain(prefix string) (string, bool) {
	d, ok := strings.CutPrefix(strings.TrimSuffix(prefix, "."), "$JS.")
	if !ok {
		return "", false
	}
	d, ok = strings.CutSuffix(d, ".API")
	if !ok || d == "" || strings.Contains(d, ".") {
		return "", false
	}
	return d, true
}

// crashFindings are the ASSET_CRASHES_SERVER and ASSET_HALTS_META findings
// of one asset.
func crashFindings(a *snapshot.Asset, servers []snapshot.Server, lastSeen map[string]snapshot.Server) []findings.Finding {
	var out []findings.Finding
	for _, c := range domainDecodes(a, servers, lastSeen) {
		s, f := c.Server, c.Feature
		fd := assetFinding(a)
		fd.Server, fd.Cluster, fd.Version, fd.Feature = s.Name, s.Cluster, s.Version, f.Name
		switch {
		case c.Outcome == releases.HaltsMeta:
			seen := fmt.Sprintf("server %s running %s", s.Name, s.Version)
			if c.Missing {
				seen = fmt.Sprintf("server %s, not answering and last seen running %s,", s.Name, s.Version)
			}
			fd.Code = findings.AssetHaltsMeta
			fd.Message = fmt.Sprintf("%s %s uses %s, new in %s: %s cannot decode it; applying its assignment fails with a meta group critical write error and the server stops applying the meta group's log, whether it hosts the %s or not: it runs on, but no later create, update or removal of any stream or consumer of its domain reaches it, after every restart again, until it is upgraded or the %s is removed",
				a.Kind, a.Label(), f.Title, f.Since, seen, a.Kind, a.Kind)
		case c.Missing:
			fd.Code = findings.AssetCrashesServer
			fd.Message = fmt.Sprintf("%s %s uses %s, new in %s: server %s, not answering and last seen running %s, cannot decode it; each time it restarts it fails to decode it again and can panic at its next meta snapshot, whether it hosts the %s or not, until it is upgraded or the %s is removed",
				a.Kind, a.Label(), f.Title, f.Since, s.Name, s.Version, a.Kind, a.Kind)
		default:
			fd.Code = findings.AssetCrashesServer
			fd.Message = fmt.Sprintf("%s %s uses %s, new in %s: server %s running %s cannot decode it and panics at its next meta snapshot (about a minute after it starts), whether it hosts the %s or not; after every restart it fails to decode it again and can panic again, until it is upgraded or the %s is removed",
				a.Kind, a.Label(), f.Title, f.Since, s.Name, s.Version, a.Kind, a.Kind)
		}
		out = append(out, fd)
	}
	return out
}

// sourcingFindings are the findings about an origin consumer that mirrors
// or sources RESET by themselves: the same verdicts as an application's
// RESET, whatever the floor, since no application decides when it is sent.
func sourcingFindings(a *snapshot.Asset, sourcers []Sourcer, byName map[string]snapshot.Server) []findings.Finding {
	// A sourcer led by a server before ResetVersion holds the stream
	// offline (it does not know durable sourcing) and sends nothing; one
	// without a leader may get a leader that does.
	var senders []Sourcer
	for _, s := range sourcers {
		if ls, ok := byName[s.Leader]; s.Leader == "" || (ok && answersReset(ls.Parsed)) {
			senders = append(senders, s)
		}
	}
	if len(senders) == 0 {
		return nil
	}
	who := sourcerNames(senders)
	base := findings.Finding{Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer, Sourcers: make([]string, len(senders))}
	for i, s := range senders {
		base.Sourcers[i] = s.Name()
	}
	leader, hasLeader := byName[a.Leader]
	var out []findings.Finding
	if hasLeader && !answersReset(leader.Parsed) {
		f := base
		f.Code, f.Server, f.Cluster, f.Version = findings.SourcingResetUnanswered, leader.Name, leader.Cluster, leader.Version
		f.Message = fmt.Sprintf("consumer %s is read through durable sourcing by %s, which sends it RESET by itself; its leader %s runs %s and leaves the RESET unanswered: the %s stalls, with no error",
			a.Label(), who, leader.Name, leader.Version, senders[0].Kind())
		out = append(out, f)
	}
	// Followers below ResetVersion crash on the first RESET a leader at
	// ResetVersion answers: now, if one leads or none does, or as soon as
	// one of the peers that could lead takes over.
	newPeer := ""
	for _, p := range a.Peers {
		if s, ok := byName[p]; ok && answersReset(s.Parsed) {
			newPeer = p
			break
		}
	}
	for _, p := range a.Peers {
		s, ok := byName[p]
		if !ok || p == a.Leader || answersReset(s.Parsed) {
			continue
		}
		f := base
		f.Code, f.Server, f.Cluster, f.Version, f.Peer = findings.SourcingResetCrashesFollower, s.Name, s.Cluster, s.Version, a.Leader
		switch {
		case hasLeader && answersReset(leader.Parsed), !hasLeader:
			f.Message = fmt.Sprintf("consumer %s is read through durable sourcing by %s, which sends it RESET by itself at setup and after each of its leader changes; follower %s runs %s and panics on the replicated reset (Unknown group entry op type: 18), and again on every restart: a crash loop",
				a.Label(), who, s.Name, s.Version)
		case newPeer != "":
			f.Message = fmt.Sprintf("consumer %s is read through durable sourcing by %s, which sends it RESET by itself; once %s or another server at %s or later leads it, follower %s (running %s) panics on the replicated reset (Unknown group entry op type: 18), and again on every restart: a crash loop",
				a.Label(), who, newPeer, releases.ResetVersion, s.Name, s.Version)
		default:
			continue // every peer is old: nobody answers, nothing replicates
		}
		out = append(out, f)
	}
	return out
}

// hazards adds the findings of crashes and stalls no application asks for:
// assets a server of their domain cannot decode, origin consumers that
// mirrors and sources RESET by themselves, and ops a leader proposes that
// a follower cannot apply (opHazards). All hold whatever the floor.
// The crashes are not narrowed by the policy's patterns: the server that
// goes down takes every asset it hosts with it.
func (e *evaluation) hazards(snap *snapshot.Snapshot) {
	for i := range snap.Streams {
		for _, f := range crashFindings(&snap.Streams[i], snap.Servers, snap.LastSeen) {
			e.add(f)
		}
	}
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		for _, f := range crashFindings(a, snap.Servers, snap.LastSeen) {
			e.add(f)
		}
		ss := e.sourcers[ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}]
		if len(ss) == 0 || !e.selectedSourcing(*a, ss) {
			continue
		}
		for _, f := range sourcingFindings(a, ss, e.seen) {
			e.add(f)
		}
	}
	e.opHazards(snap)
}

// selectedSourcing: the policy selects the origin consumer or one of the
// streams that read it.
func (e *evaluation) selectedSourcing(a snapshot.Asset, ss []Sourcer) bool {
	if e.selected(&a) {
		return true
	}
	for _, s := range ss {
		if e.selected(&snapshot.Asset{Kind: releases.KindStream, Account: s.Account, Stream: s.Stream}) {
			return true
		}
	}
	return false
}
