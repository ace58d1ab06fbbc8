package snapshot

import "time"

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
	*p = PullState{Policy: p.Policy, Group: p.Group, Timeout: p.Timeout, MaxAckPending: p.MaxAckPending}
}
