package snapshot

import (
	"fmt"
	"strings"
	"time"
)

// PullState is what a consumer with a priority policy (overflow,
// pinned_client, prioritized) reports of who pulls it: its priority
// config, and the record of its leader. The fields are JSZ's
// consumer_detail, the same ConsumerInfo that CONSUMER.INFO answers
// (nats-server consumer.go: 2.11.12 :55-86, 2.15.3 :56-87).
type PullState struct {
	// Policy is the config's priority_policy.
	Policy string `json:"priority_policy"`
	// Group is the first priority group, the only one the servers report
	// a pin for (2.15.3 consumer.go:3672-3680).
	Group string `json:"priority_group,omitempty"`
	// Timeout is the config's priority_timeout: how long a pin lives
	// without a pull that carries it (2m when a pinned_client consumer is
	// created without one, 2.15.3 consumer.go:612, :721-722).
	Timeout time.Duration `json:"priority_timeout,omitempty"`
	// MaxAckPending is the config's max_ack_pending: at it the consumer
	// delivers nothing, whoever pulls.
	MaxAckPending int `json:"max_ack_pending,omitempty"`

	// FromLeader: the fields below are the record of the consumer's
	// leader. A follower's record is never read: a step-down empties the
	// queue of pulls, and from 2.12.5 drops the pin (setLeader, 2.12.5
	// consumer.go:1690-1696, 2.15.3 :1759-1765); 2.12.4 drops it only
	// when it times out (:3918), so a former leader before 2.12.5 reports
	// the pin it held. Without the leader's record the audit knows the
	// config only.
	FromLeader bool `json:"from_leader"`
	// At is the leader's clock when it made the record (ConsumerInfo.ts):
	// the ages below are measured on that one clock, not the auditor's.
	At      time.Time `json:"at,omitzero"`
	Created time.Time `json:"created,omitzero"`
	// Pending is num_pending, the messages not yet delivered; AckPending
	// num_ack_pending, delivered and not yet acked.
	Pending    uint64 `json:"num_pending"`
	AckPending int    `json:"num_ack_pending"`
	// Waiting is num_waiting, the pull requests queued on the leader.
	Waiting int  `json:"num_waiting"`
	Paused  bool `json:"paused,omitempty"`
	// LastDelivery and LastAck are delivered.last_active and
	// ack_floor.last_active: the leader's last delivery and last ack (not
	// its last pull), zero when it made none since it became leader or
	// since a RESET.
	LastDelivery time.Time `json:"last_delivery,omitzero"`
	LastAck      time.Time `json:"last_ack,omitzero"`
	// PinnedID is the pin's holder (pinned_client_id), empty when the
	// group has no pin; PinnedAt is when the pin was given.
	PinnedID string    `json:"pinned_client_id,omitempty"`
	PinnedAt time.Time `json:"pinned_ts,omitzero"`

	// Pullers are the processes heard pulling it while the audit listened
	// (Snapshot.Pulls), holder first.
	Pullers []Puller `json:"pullers,omitempty"`
}

// Backlog is what waits for a puller: the messages not yet delivered and
// those delivered and not acked, which nobody redelivers to while nobody
// pulls.
func (p *PullState) Backlog() uint64 { return p.Pending + uint64(max(p.AckPending, 0)) }

// PinAge is how long the pin had been held when the leader made its
// record; 0 without a pin.
func (p *PullState) PinAge() time.Duration {
	if p.PinnedID == "" || p.PinnedAt.IsZero() {
		return 0
	}
	return p.since(p.PinnedAt)
}

// Idle is how long the leader had gone without a delivery or an ack when
// it made its record: since the later of the two, or since the consumer
// was created when it knows neither.
func (p *PullState) Idle() time.Duration { return p.sinceLatest(p.LastDelivery, p.LastAck) }

// Undelivered is how long the leader had gone without a delivery: a pin
// is given in the act of a delivery, so a pinned consumer's last one is no
// older than its pin.
func (p *PullState) Undelivered() time.Duration { return p.sinceLatest(p.LastDelivery, p.PinnedAt) }

// sinceLatest is how long before the record the later of a and b was, or
// the consumer's creation when both are zero.
func (p *PullState) sinceLatest(a, b time.Time) time.Duration {
	if b.After(a) {
		a = b
	}
	if a.IsZero() {
		a = p.Created
	}
	return p.since(a)
}

func (p *PullState) since(t time.Time) time.Duration {
	if p.At.IsZero() || t.IsZero() || t.After(p.At) {
		return 0
	}
	return p.At.Sub(t)
}

// PriorityPinnedClient is the priority policy that pins a group to one
// client at a time.
const PriorityPinnedClient = "pinned_client"

// ConfigOnly is the state without a leader's record.
func (p *PullState) ConfigOnly() {
	*p = PullState{Policy: p.Policy, Group: p.Group, Timeout: p.Timeout, MaxAckPending: p.MaxAckPending, Pullers: p.Pullers}
}

// Puller is one process seen pulling a consumer: its pull requests, heard
// through the system account's import of its account's
// $JS.API.CONSUMER.MSG.NEXT.>, and the connection that subscribes their
// reply inbox, named by CONNZ.
type Puller struct {
	// Process keys the process by its inboxes: the inbox prefix and the
	// first 12 characters of the NUID after it, which nats.go's inboxes of
	// one process share. A reconnect, a new Consume or a new inbox of the
	// same process keeps it.
	Process string `json:"process"`
	// Name, IP, CID and Server are the connection CONNZ found subscribed
	// to the process's latest inbox; empty when none was (a Fetch's inbox
	// gone before it was asked). A client behind a leafnode is named as
	// the leafnode's connection.
	Name   string `json:"name,omitempty"`
	IP     string `json:"ip,omitempty"`
	CID    uint64 `json:"cid,omitempty"`
	Server string `json:"server,omitempty"`
	// Inbox is the reply subject of its latest pull request.
	Inbox string `json:"inbox"`
	// LastSeen is when the auditor heard its latest pull request.
	LastSeen time.Time `json:"last_seen"`
	// PinID is the latest pin id its requests carried ("id"), empty when
	// none carried one: a request without one waits while another process
	// holds the pin.
	PinID string `json:"pin_id,omitempty"`
	// Holder: its requests carry the pin the consumer's leader reported
	// (pinned_client_id).
	Holder bool `json:"holder"`
}

// PullSight is what the audit could hear of the pulls: which accounts'
// pull requests the system account imports, and for how long it listened.
type PullSight struct {
	// Visible holds, by account (as Asset.Account names it), whether the
	// system account imports that account's pull requests.
	Visible map[string]bool `json:"visible"`
	// Since is when the auditor began to listen; Watched how long it had
	// listened when the snapshot was made.
	Since   time.Time     `json:"since"`
	Watched time.Duration `json:"watched"`
	// Dropped counts the pull requests and advisories the auditor could
	// not keep (a slow consumer, or its bound on what it holds); the view
	// of who pulls is incomplete while it is above 0.
	Dropped uint64 `json:"dropped,omitempty"`
}

// Label names a process as its connection does: its name, IP and
// server, or its inbox key where no connection was found subscribed.
func (p *Puller) Label() string {
	name := p.Name
	if name == "" {
		name = "unnamed"
	}
	if p.Server == "" {
		return fmt.Sprintf("%s (inbox %s, no connection found)", name, p.Process)
	}
	return fmt.Sprintf("%s (%s on %s)", name, p.IP, p.Server)
}

// PullersLabel names every puller, the holder first.
func (ps *PullState) PullersLabel() string {
	var parts []string
	held := false
	for i := range ps.Pullers {
		p := &ps.Pullers[i]
		if p.Holder {
			held = true
			parts = append(parts, p.Label()+" holds the pin")
		} else {
			parts = append(parts, p.Label()+" pulls without it")
		}
	}
	if !held {
		pin := "no pin"
		if ps.PinnedID != "" {
			pin = "pin " + ps.PinnedID
		}
		parts = append(parts, "none heard holds the leader's "+pin)
	}
	return strings.Join(parts, ", ")
}

// HolderLabel is the pin, with the process that holds it where it was
// heard.
func (ps *PullState) HolderLabel() string {
	for i := range ps.Pullers {
		if ps.Pullers[i].Holder {
			return fmt.Sprintf("%s (pin %s)", ps.Pullers[i].Label(), ps.PinnedID)
		}
	}
	return ps.PinnedID
}

// WaitersLabel names the processes heard pulling without the pin.
func (ps *PullState) WaitersLabel() string {
	var w []string
	for i := range ps.Pullers {
		if !ps.Pullers[i].Holder {
			w = append(w, ps.Pullers[i].Label())
		}
	}
	if len(w) == 0 {
		return ""
	}
	return ": " + strings.Join(w, ", ")
}

// GroupLabel is ", group <name>", or "" without a group.
func (p *PullState) GroupLabel() string {
	if p.Group == "" {
		return ""
	}
	return ", group " + p.Group
}

// IdleLabel says how long the leader went without a delivery or ack.
func (p *PullState) IdleLabel() string {
	idle := p.Idle().Round(time.Second).String()
	if p.LastDelivery.IsZero() && p.LastAck.IsZero() {
		// The times are the leader's own: a new leader knows none.
		return "which has made no delivery or ack since the consumer was created " + idle + " ago or since it took the lead"
	}
	return "which has made no delivery or ack for " + idle
}

// HasPinned reports whether s has a pinned_client consumer.
func (s *Snapshot) HasPinned() bool {
	for i := range s.Consumers {
		if a := &s.Consumers[i]; a.Pull != nil && a.Pull.Policy == PriorityPinnedClient {
			return true
		}
	}
	return false
}

// HasShards reports whether s has a consumer with a priority policy: an
// application's shard, whose pulls only its leader's record shows.
func (s *Snapshot) HasShards() bool {
	for i := range s.Consumers {
		if s.Consumers[i].Pull != nil {
			return true
		}
	}
	return false
}
