package render

import (
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
