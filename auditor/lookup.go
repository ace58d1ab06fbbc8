package auditor

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// ResetVerdict says what $JS.API.CONSUMER.RESET would do to one consumer.
// It is about the RESET API itself, not the configured floor: RESET first
// exists in ResetVersion.
type ResetVerdict string

// The verdicts of JudgeReset.
const (
	// ResetSafe: the leader and every peer run ResetVersion or later; the
	// leader answers and every follower applies the replicated reset.
	ResetSafe ResetVerdict = "safe"
	// ResetUnanswered: the leader runs an older version and does not
	// subscribe to RESET; the request times out.
	ResetUnanswered ResetVerdict = "unanswered"
	// ResetCrashesFollower: the leader answers, but a follower runs an older
	// version and panics on the replicated reset entry, taking its whole
	// server down.
	ResetCrashesFollower ResetVerdict = "crashes_follower"
	// ResetUnknown: the audit cannot tell; do not send RESET.
	ResetUnknown ResetVerdict = "unknown"
)

// ResetVerdicts lists every ResetVerdict.
var ResetVerdicts = []ResetVerdict{ResetSafe, ResetUnanswered, ResetCrashesFollower, ResetUnknown}

// ResetVersion is the first nats-server release that answers
// $JS.API.CONSUMER.RESET (and the first that knows its replicated entry).
const ResetVersion = "v2.14.0"

// Peer is one member of a consumer's RAFT group as the audit saw it.
type Peer struct {
	Name string `json:"name"`
	// Answered is false for a peer some server named but which did not
	// answer the audit: its version is not known.
	Answered bool   `json:"answered"`
	Version  string `json:"version,omitempty"`
	// APILevel is the highest JetStream API level the peer supports (0 when
	// it reports none, as 2.10 does).
	APILevel int  `json:"api_level"`
	Leader   bool `json:"leader"`
	// Incomplete is set when a request of the audit to this peer failed, so
	// what it hosts may not have been read.
	Incomplete bool `json:"incomplete,omitempty"`
}

// JudgeReset decides what RESET would do to a consumer led by leader (a
// server name, empty when there is none) whose RAFT group is peers, leader
// included. It is unknown whenever anything it needs is missing. incomplete
// says that the audit could not read everything about the consumer.
func JudgeReset(leader string, peers []Peer, incomplete bool) (ResetVerdict, string) {
	if incomplete {
		return ResetUnknown, "the last audit did not read every server's reply about this consumer"
	}
	if leader == "" {
		return ResetUnknown, "the consumer has no leader"
	}
	var lead *Peer
	for i := range peers {
		p := &peers[i]
		if p.Name == leader {
			lead = p
		}
		if !p.Answered {
			return ResetUnknown, fmt.Sprintf("peer %s did not answer the audit", p.Name)
		}
		if p.Incomplete {
			return ResetUnknown, fmt.Sprintf("the audit could not read all of peer %s's replies", p.Name)
		}
		if _, err := ParseVersion(p.Version); err != nil {
			return ResetUnknown, fmt.Sprintf("peer %s reports version %q, which is not a version", p.Name, p.Version)
		}
	}
	if lead == nil {
		return ResetUnknown, fmt.Sprintf("leader %s is not among the consumer's peers", leader)
	}
	if !answersReset(lead.Version) {
		return ResetUnanswered, fmt.Sprintf("leader %s runs %s, below %s: it does not answer RESET", lead.Name, lead.Version, Display(ResetVersion))
	}
	var old []string
	for _, p := range peers {
		if !answersReset(p.Version) {
			old = append(old, p.Name+" ("+p.Version+")")
		}
	}
	if len(old) > 0 {
		return ResetCrashesFollower, fmt.Sprintf("leader %s runs %s and answers RESET, but follower %s would crash on the replicated reset",
			lead.Name, lead.Version, strings.Join(old, ", "))
	}
	return ResetSafe, fmt.Sprintf("leader %s and every peer run %s or later", lead.Name, Display(ResetVersion))
}

// answersReset reports whether a server of version v knows RESET. A
// pre-release of ResetVersion counts as below it.
func answersReset(v string) bool {
	c, err := ParseVersion(v)
	return err == nil && semver.Compare(c, ResetVersion) >= 0
}

// ConsumerKey names a consumer: a JetStream domain ("" for none), an
// account, a stream and the consumer.
type ConsumerKey struct {
	Domain, Account, Stream, Consumer string
}

// ConsumerView is what the audit knows of one consumer, with the RESET verdict.
type ConsumerView struct {
	ConsumerKey
	Leader string
	// Replicas is the configured replica count (at least the peers seen).
	Replicas int
	// RequiredLevel is the config's _nats.req.level.
	RequiredLevel int
	// Peers lists the RAFT group, leader included, sorted by name.
	Peers  []Peer
	Reset  ResetVerdict
	Reason string
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
	servers map[string]*Server
	// problems are the servers a request failed against; global is set when
	// a failure concerned no single server (a permissions violation, or an
	// audit that could not run at all).
	problems map[string]bool
	global   bool
	snap     *Snapshot
}

// NewIndex indexes the consumers and servers of snap. It reads only the
// snapshot, never a policy: the RESET verdict does not depend on the floor,
// and a report narrowed to one server still carries the census of all.
func NewIndex(snap *Snapshot) *Index {
	x := &Index{
		byName:   make(map[nameKey]int, len(snap.Consumers)),
		others:   map[nameKey][]int{},
		servers:  make(map[string]*Server, len(snap.Servers)),
		problems: map[string]bool{},
		snap:     snap,
	}
	for i := range snap.Servers {
		x.servers[snap.Servers[i].Name] = &snap.Servers[i]
	}
	for i := range snap.Consumers {
		a := &snap.Consumers[i]
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
		return ConsumerView{ConsumerKey: k, Reset: ResetUnknown, Reason: "the consumer was not seen in the last audit"}, false
	}
	a := &x.snap.Consumers[i]
	v := ConsumerView{ConsumerKey: k, Leader: a.Leader, Replicas: a.Replicas, RequiredLevel: a.RequiredLevel}
	names := a.Peers
	if a.Leader != "" && !slices.Contains(names, a.Leader) {
		names = append(slices.Clone(names), a.Leader)
		slices.Sort(names)
	}
	v.Peers = make([]Peer, len(names))
	for j, n := range names {
		p := Peer{Name: n, Leader: n == a.Leader, Incomplete: x.problems[n]}
		if s, ok := x.servers[n]; ok {
			p.Answered, p.Version, p.APILevel = true, s.Version, s.APILevel
		}
		v.Peers[j] = p
	}
	v.Reset, v.Reason = JudgeReset(a.Leader, v.Peers, x.global)
	if v.Reset != ResetUnknown && a.Replicas > len(names) {
		v.Reset, v.Reason = ResetUnknown, fmt.Sprintf("the consumer has %d replicas but the audit saw only %d peers", a.Replicas, len(names))
	}
	return v, true
}
