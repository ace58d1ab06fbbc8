package render

import (
	"maps"
	"slices"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Pull is who pulls a consumer with a priority policy (a shard), as its
// leader reported it, in the report and the API: from_leader false when the
// audit had no record from the leader, and then only the policy and group.
type Pull struct {
	Policy        string  `json:"priority_policy"`
	Group         string  `json:"priority_group,omitempty"`
	FromLeader    bool    `json:"from_leader"`
	Pending       uint64  `json:"num_pending"`
	AckPending    int     `json:"num_ack_pending"`
	Waiting       int     `json:"num_waiting"`
	IdleSeconds   float64 `json:"idle_seconds"`
	PinnedID      string  `json:"pinned_client_id,omitempty"`
	PinAgeSeconds float64 `json:"pin_age_seconds,omitempty"`
	// Pullers are the processes heard pulling it, the pin's holder first;
	// left out where its account's pulls are not heard (PullSight).
	Pullers []Puller `json:"pullers,omitempty"`
}

// Puller is one process heard pulling a consumer (snapshot.Puller).
type Puller struct {
	Process  string    `json:"process"`
	Name     string    `json:"name,omitempty"`
	IP       string    `json:"ip,omitempty"`
	Server   string    `json:"server,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	Holder   bool      `json:"pin_holder"`
}

// PullSight is what the audit heard of the pulls, in the report: by
// account whether its pulls are heard, and how long the audit listened.
type PullSight struct {
	Accounts       []PullAccount `json:"accounts"`
	WatchedSeconds float64       `json:"watched_seconds"`
	Dropped        uint64        `json:"dropped,omitempty"`
}

// PullAccount is whether an account's pulls are heard.
type PullAccount struct {
	Account string `json:"account"`
	// AccountName is the account's name where it has one apart from its
	// id (operator mode: the JWT's name, the id its public key).
	AccountName string `json:"account_name,omitempty"`
	Heard       bool   `json:"heard"`
}

// PullSightOf is the report's PullSight of snap; nil when the audit did
// not listen.
func PullSightOf(snap *snapshot.Snapshot) *PullSight {
	s := snap.Pulls
	if s == nil {
		return nil
	}
	names := snapshot.AccountNames(snap)
	out := &PullSight{Accounts: []PullAccount{}, WatchedSeconds: s.Watched.Seconds(), Dropped: s.Dropped}
	for _, a := range slices.Sorted(maps.Keys(s.Visible)) {
		out.Accounts = append(out.Accounts, PullAccount{Account: a, AccountName: names[a], Heard: s.Visible[a]})
	}
	return out
}

// PullOf is the Pull of p; nil for a consumer without a priority policy.
func PullOf(p *snapshot.PullState) *Pull {
	if p == nil {
		return nil
	}
	out := &Pull{Policy: p.Policy, Group: p.Group, FromLeader: p.FromLeader}
	if p.FromLeader {
		out.Pending, out.AckPending, out.Waiting, out.IdleSeconds = p.Pending, p.AckPending, p.Waiting, p.Idle().Seconds()
		if p.PinnedID != "" {
			out.PinnedID, out.PinAgeSeconds = p.PinnedID, p.PinAge().Seconds()
		}
	}
	for _, q := range p.Pullers {
		out.Pullers = append(out.Pullers, Puller{Process: q.Process, Name: q.Name, IP: q.IP, Server: q.Server, LastSeen: q.LastSeen, Holder: q.Holder})
	}
	return out
}

// Shard is a consumer with a priority policy in the report, with who
// pulls it.
type Shard struct {
	Domain      string `json:"domain,omitempty"`
	Account     string `json:"account"`
	AccountName string `json:"account_name,omitempty"`
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	Leader      string `json:"leader"`
	Pull        *Pull  `json:"pull"`
}

// shardsOf are the consumers of r with a priority policy.
func shardsOf(r *findings.Report) []Shard {
	var out []Shard
	for i := range r.Snapshot.Consumers {
		a := &r.Snapshot.Consumers[i]
		if a.Pull != nil {
			out = append(out, Shard{Domain: a.Domain, Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer,
				Leader: a.Leader, Pull: PullOf(a.Pull)})
		}
	}
	return out
}
