package collect

import (
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// What JSZ says of who pulls a consumer with a priority policy: the
// config it begins with, and its leader's record.

// pullConfig is the pull state a config with a priority policy begins,
// nil for none: most consumers have none, and keep nothing of it.
func (c *jszConfig) pullConfig() *snapshot.PullState {
	if c.PriorityPolicy == "" || c.PriorityPolicy == "none" {
		return nil
	}
	p := &snapshot.PullState{Policy: c.PriorityPolicy, Timeout: time.Duration(c.PinnedTTL), MaxAckPending: c.MaxAckPending}
	if len(c.PriorityGroups) > 0 {
		p.Group = c.PriorityGroups[0]
	}
	return p
}

// pullRecord is what PullState reads of a consumer's JSZ record.
type pullRecord struct {
	Created   time.Time `json:"created"`
	Delivered struct {
		Last *time.Time `json:"last_active"`
	} `json:"delivered"`
	AckFloor struct {
		Last *time.Time `json:"last_active"`
	} `json:"ack_floor"`
	NumAckPending  int       `json:"num_ack_pending"`
	NumWaiting     int       `json:"num_waiting"`
	NumPending     uint64    `json:"num_pending"`
	Paused         bool      `json:"paused"`
	TS             time.Time `json:"ts"`
	PriorityGroups []struct {
		Group          string    `json:"group"`
		PinnedClientID string    `json:"pinned_client_id"`
		PinnedTS       time.Time `json:"pinned_ts"`
	} `json:"priority_groups"`
}

// fill sets p's record fields from r.
func (r *pullRecord) fill(p *snapshot.PullState) {
	p.ConfigOnly()
	p.At, p.Created, p.Pending, p.AckPending, p.Waiting, p.Paused = r.TS, r.Created, r.NumPending, r.NumAckPending, r.NumWaiting, r.Paused
	if r.Delivered.Last != nil {
		p.LastDelivery = *r.Delivered.Last
	}
	if r.AckFloor.Last != nil {
		p.LastAck = *r.AckFloor.Last
	}
	if len(r.PriorityGroups) > 0 {
		// An unpinned group reports the zero time, not no time.
		g := r.PriorityGroups[0]
		p.PinnedID, p.PinnedAt = g.PinnedClientID, g.PinnedTS
	}
}
