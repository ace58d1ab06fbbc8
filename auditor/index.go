package auditor

import (
	"fmt"
	"slices"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// ConsumerView is what the audit knows of one consumer, with the RESET verdict.
type ConsumerView struct {
	ConsumerKey
	// AccountName is the account's name where it is not its id.
	AccountName string
	Leader      string
	// Replicas is the configured replica count (at least the peers seen).
	Replicas int
	// RequiredLevel is the config's _nats.req.level.
	RequiredLevel int
	// Peers lists the RAFT group, leader included, sorted by name.
	Peers  []Peer
	Reset  findings.ResetVerdict
	Reason string
	// ResetBy names the mirrors and sources ("mirror ACCOUNT > STREAM")
	// that send the consumer RESET by themselves (durable sourcing): Reset
	// is what their RESETs do, whether an application sends one or not.
	ResetBy []string
	// Crashes are the servers of the consumer's domain that cannot decode
	// its config and crash on it, peers or not.
	Crashes []Crash
	// Pull is who pulls a consumer with a priority policy, its pin
	// included, as its leader reported it; nil for any other consumer.
	Pull *snapshot.PullState
}

// Crash is a server that crashes on an asset it cannot decode.
type Crash struct {
	Server  string `json:"server"`
	Version string `json:"version"`
	// Feature names the feature (see Features) it cannot decode.
	Feature string `json:"feature"`
	// Answered is false for a server only an earlier audit saw.
	Answered bool `json:"answered"`
}

type nameKey struct {
	account, stream, consumer string
}

// Index finds consumers of one snapshot without scanning it. Build it once
// per audit with NewIndex; it is read-only afterwards and safe for
// concurrent use.
type Index struct {
	// byName holds the first consumer of each name; the same name in more
	// than one JetStream domain is rare, and those go to others.
	byName  map[nameKey]int // into snap.Consumers
	others  map[nameKey][]int
	servers map[string]*snapshot.Server
	// accounts holds the id of every account with an asset, and
	// accountNames the ids of each name that is not an id.
	accounts     map[string]bool
	accountNames map[string][]string
	// byStream lists the consumers of each stream, in snapshot order, and
	// streamDomains the domains of each account and stream name.
	byStream      map[StreamKey][]int
	streamDomains map[[2]string][]string
	// problems are the servers a request failed against; global is set when
	// a failure concerned no single server (a permissions violation, or an
	// audit that could not run at all).
	problems map[string]bool
	global   bool
	snap     *snapshot.Snapshot
	sourcers map[ConsumerKey][]Sourcer
}

// NewIndex indexes the consumers and servers of snap. It reads only the
// snapshot, never a policy: the RESET verdict does not depend on the floor,
// and a report narrowed to one server still carries the census of all.
func NewIndex(snap *snapshot.Snapshot) *Index {
	x := &Index{
		byName:        make(map[nameKey]int, len(snap.Consumers)),
		others:        map[nameKey][]int{},
		byStream:      map[StreamKey][]int{},
		streamDomains: map[[2]string][]string{},
		servers:       make(map[string]*snapshot.Server, len(snap.Servers)),
		problems:      map[string]bool{},
		snap:          snap,
		accounts:      map[string]bool{},
		sourcers:      Sourcers(snap),
	}
	for i := range snap.Servers {
		x.servers[snap.Servers[i].Name] = &snap.Servers[i]
	}
	// Assets come grouped by stream, so mostly by account: one map write
	// per run of an account rather than one per consumer.
	for _, assets := range [][]snapshot.Asset{snap.Streams, snap.Consumers} {
		last := ""
		for i := range assets {
			if a := &assets[i]; a.Account != last || i == 0 {
				x.addAccount(a)
				last = a.Account
			}
		}
	}
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
		sk := StreamKey{a.Domain, a.Account, a.Stream}
		if _, seen := x.byStream[sk]; !seen {
			an := [2]string{a.Account, a.Stream}
			x.streamDomains[an] = append(x.streamDomains[an], a.Domain)
		}
		x.byStream[sk] = append(x.byStream[sk], i)
		nk := nameKey{a.Account, a.Stream, a.Consumer}
		if _, dup := x.byName[nk]; dup {
			x.others[nk] = append(x.others[nk], i)
		} else {
			x.byName[nk] = i
		}
	}
	for _, p := range snap.Problems {
		if p.Server == "" {
			x.global = true
		} else {
			x.problems[p.Server] = true
		}
	}
	if len(snap.Servers) == 0 {
		x.global = true
	}
	return x
}

func (x *Index) addAccount(a *snapshot.Asset) {
	if x.accounts[a.Account] {
		return
	}
	x.accounts[a.Account] = true
	if a.AccountName != "" {
		if x.accountNames == nil {
			x.accountNames = map[string][]string{}
		}
		ids := append(x.accountNames[a.AccountName], a.Account)
		slices.Sort(ids)
		x.accountNames[a.AccountName] = ids
	}
}

// Accounts returns the ids of the accounts that account stands for: itself
// when it is the id of an account the audit saw an asset of, else those of
// every such account of that name (in operator mode more than one account
// can have it), sorted; none when the audit saw no such account.
func (x *Index) Accounts(account string) []string {
	if x.accounts[account] {
		return []string{account}
	}
	return slices.Clone(x.accountNames[account])
}

// Domains lists the JetStream domains in which the audit saw a consumer of
// that account, stream and name.
func (x *Index) Domains(account, stream, consumer string) []string {
	nk := nameKey{account, stream, consumer}
	i, ok := x.byName[nk]
	if !ok {
		return nil
	}
	out := []string{x.snap.Consumers[i].Domain}
	for _, j := range x.others[nk] {
		out = append(out, x.snap.Consumers[j].Domain)
	}
	slices.Sort(out)
	return out
}

// find returns the index in snap.Consumers of the consumer k.
func (x *Index) find(k ConsumerKey) (int, bool) {
	nk := nameKey{k.Account, k.Stream, k.Consumer}
	if i, ok := x.byName[nk]; ok && x.snap.Consumers[i].Domain == k.Domain {
		return i, true
	}
	for _, i := range x.others[nk] {
		if x.snap.Consumers[i].Domain == k.Domain {
			return i, true
		}
	}
	return 0, false
}

// Consumer returns the consumer k and the RESET verdict about it, and false
// when the audit did not see it.
func (x *Index) Consumer(k ConsumerKey) (ConsumerView, bool) {
	i, ok := x.find(k)
	if !ok {
		return ConsumerView{ConsumerKey: k, Reset: findings.ResetUnknown, Reason: "the consumer was not seen in the last audit"}, false
	}
	return x.view(i, k), true
}

// view is the consumer at i of the snapshot, named k, with its verdict.
func (x *Index) view(i int, k ConsumerKey) ConsumerView {
	a := &x.snap.Consumers[i]
	v := ConsumerView{ConsumerKey: k, AccountName: a.AccountName, Leader: a.Leader, Replicas: a.Replicas, RequiredLevel: a.RequiredLevel, Pull: a.Pull}
	names := a.Peers
	if a.Leader != "" && !slices.Contains(names, a.Leader) {
		names = append(slices.Clone(names), a.Leader)
		slices.Sort(names)
	}
	v.Peers = make([]Peer, len(names))
	for j, n := range names {
		p := Peer{Name: n, Leader: n == a.Leader, Incomplete: x.problems[n]}
		if s, ok := x.servers[n]; ok {
			p.Answered, p.Version, p.Parsed, p.APILevel = true, s.Version, s.Parsed, s.APILevel
		}
		v.Peers[j] = p
	}
	v.Reset, v.Reason = JudgeReset(a.Leader, v.Peers, x.global)
	if v.Reset != findings.ResetUnknown && a.Replicas > len(names) {
		v.Reset, v.Reason = findings.ResetUnknown, fmt.Sprintf("the consumer has %d replicas but the audit saw only %d peers", a.Replicas, len(names))
	}
	if ss := x.sourcers[k]; len(ss) > 0 {
		for _, s := range ss {
			v.ResetBy = append(v.ResetBy, s.Kind()+" "+s.Name())
		}
		v.Reason = fmt.Sprintf("%s sends it RESET by itself (durable sourcing); %s", sourcerNames(ss), v.Reason)
		switch v.Reset {
		case findings.ResetUnanswered:
			v.Reason += "; the " + ss[0].Kind() + " stalls, with no error"
		case findings.ResetCrashesFollower:
			v.Reason += "; a crash loop"
		}
	}
	for _, c := range DecodeCrashes(a, x.snap.Servers, x.snap.LastSeen) {
		v.Crashes = append(v.Crashes, Crash{Server: c.Server.Name, Version: c.Server.Version, Feature: c.Feature.Name, Answered: !c.Missing})
		v.Reason += fmt.Sprintf("; server %s (%s) cannot decode this consumer's %s and crashes on it, peer or not", c.Server.Name, c.Server.Version, c.Feature.Title)
	}
	return v
}

// StreamDomains lists the JetStream domains in which the audit saw a
// consumer of that account and stream.
func (x *Index) StreamDomains(account, stream string) []string {
	out := slices.Clone(x.streamDomains[[2]string{account, stream}])
	slices.Sort(out)
	return out
}

// StreamConsumers returns every consumer of the stream k that the audit
// saw, each with its RESET verdict, in the order the audit listed them; none
// when it saw no consumer of the stream.
func (x *Index) StreamConsumers(k StreamKey) []ConsumerView {
	idx := x.byStream[k]
	out := make([]ConsumerView, 0, len(idx))
	for _, i := range idx {
		a := &x.snap.Consumers[i]
		out = append(out, x.view(i, ConsumerKey{Domain: a.Domain, Account: a.Account, Stream: a.Stream, Consumer: a.Consumer}))
	}
	return out
}
