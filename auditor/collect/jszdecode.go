package collect

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	json "github.com/segmentio/encoding/json"

	"github.com/natsaudit/nats-version-auditor/auditor/collect/internal/jsonscan"
)

// decodeJSZReply decodes a JSZ reply into the audit's projection (jszReply)
// in one pass over the bytes. A reply with configs carries hundreds of
// bytes per consumer, of which the audit reads a few: names, leaders,
// peers, replica counts and required levels. A reflective decoder, even a
// fast one, looks up every key of every object in a map and copies every
// string it meets; this one compares the few keys it reads as bytes and
// steps over every other value without copying it. It still checks all of
// the reply: what is not JSON is an error, as it is for encoding/json, and
// so is a value of the wrong type where the audit reads one. Keys match as
// the servers spell them (encoding/json would also match other cases).
// TestDecodeJSZMatchesUnmarshal holds it against encoding/json on real
// replies of every server version (configs compare as the summaries the
// projection keeps of them), and TestDecodeConfigMatchesUnmarshal every
// config field by field.
func decodeJSZReply(data []byte) (*jszReply, error) {
	d := jszDecoder{Scanner: jsonscan.New(data), text: data, room: len(data) / minConsumerBytes}
	var r jszReply
	err := d.Object(func(key []byte) error {
		switch string(key) {
		case "data":
			if d.Null() {
				r.Data = nil
				return nil
			}
			if r.Data == nil {
				r.Data = &jszData{}
			}
			return d.data(r.Data)
		case "error":
			if d.Null() {
				r.Error = nil
				return nil
			}
			if r.Error == nil {
				r.Error = &apiError{}
			}
			return d.apiError(r.Error)
		}
		return d.Skip()
	})
	if err == nil {
		err = d.End()
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// jszDecoder is JSZ's schema over the generic scanner: which keys the audit
// reads, into what, and where its structs come from.
type jszDecoder struct {
	jsonscan.Scanner
	// text is what the scanner walks: a priority consumer's record is
	// read again from its object (jszConsumer.readPull).
	text []byte
	// room is how many consumers the streams' counts may still reserve
	// room for: a reply cannot list more than it has bytes for, whatever
	// its counts say.
	room int
	// A slab the per-asset cluster infos come from: one allocation per
	// chunk instead of one per asset.
	clusters []clusterInfo
	// scratch is where each config is decoded before it is summarized.
	scratch jszConfig
}

const slab = 256

// minConsumerBytes is the least a consumer's entry takes in a reply
// (`{"name":""},`): the most consumers a reply can list is its length over
// it, and no more room than that is reserved from the counts it claims.
const minConsumerBytes = 12

func (d *jszDecoder) newCluster() *clusterInfo {
	if len(d.clusters) == 0 {
		d.clusters = make([]clusterInfo, slab)
	}
	c := &d.clusters[0]
	d.clusters = d.clusters[1:]
	return c
}

func (d *jszDecoder) data(js *jszData) error {
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "meta_cluster":
			if d.Null() {
				js.Meta = nil
				return nil
			}
			if js.Meta == nil {
				js.Meta = &metaClusterInfo{}
			}
			return d.meta(js.Meta)
		case "account_details":
			return jsonscan.List(&d.Scanner, &js.AccountDetails, d.account)
		case "total":
			return d.Int(&js.Total)
		case "accounts":
			return d.Int(&js.Accounts)
		}
		return d.Skip()
	})
}

func (d *jszDecoder) meta(mc *metaClusterInfo) error {
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.Name(&mc.Name)
		case "leader":
			return d.Name(&mc.Leader)
		case "replicas":
			return d.metaReplicas(&mc.Replicas)
		case "cluster_size":
			return d.Int(&mc.Size)
		}
		return d.Skip()
	})
}

func (d *jszDecoder) account(a *jszAccount) error {
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.Text(&a.Name)
		case "id":
			return d.Text(&a.ID)
		case "stream_detail":
			return jsonscan.List(&d.Scanner, &a.Streams, d.stream)
		}
		return d.Skip()
	})
}

func (d *jszDecoder) stream(s *jszStream) error {
	// The stream's state, which the servers send before its consumers,
	// counts them: room for that many, not a list grown by doubling. Only
	// a hint: the state is not part of the projection, and whatever it
	// holds is no error.
	consumers := 0
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "state":
			if d.Peek() != '{' {
				return d.Skip()
			}
			return d.Object(func(key []byte) error {
				if string(key) != "consumer_count" {
					return d.Skip()
				}
				raw, err := d.Raw()
				if n, nerr := strconv.Atoi(string(raw)); err == nil && nerr == nil {
					consumers = max(n, 0)
				}
				return err
			})
		case "name":
			return d.Text(&s.Name)
		case "created":
			return d.time(&s.Created)
		case "cluster":
			return d.cluster(&s.Cluster)
		case "config":
			cfg, err := d.config()
			if cfg != nil {
				s.Config.set(cfg)
			}
			return err
		case "consumer_detail":
			if n := min(consumers, d.room); s.Consumers == nil && n > 0 {
				s.Consumers, d.room = make([]jszConsumer, 0, n), d.room-n
			}
			return jsonscan.List(&d.Scanner, &s.Consumers, d.consumer)
		}
		return d.Skip()
	})
}

func (d *jszDecoder) consumer(c *jszConsumer) error {
	start := d.Offset()
	// The servers write a consumer's config before its record (but for
	// created, kept until the end): the record is read as it comes only
	// when the config has a priority policy, and stepped over otherwise.
	// A record key met before the config, or a second config, sends it to
	// the reflective decoder instead, which reads the record from the
	// whole object after.
	var recordSeen, reread bool
	var created []byte
	err := d.Object(func(key []byte) error {
		switch string(key) {
		case "name":
			return d.Text(&c.Name)
		case "cluster":
			return d.cluster(&c.Cluster)
		case "config":
			reread = reread || recordSeen
			cfg, err := d.config()
			if cfg != nil {
				c.Config.set(cfg)
			}
			return err
		case "created":
			var err error
			created, err = d.Raw()
			return err
		case "delivered", "ack_floor", "num_ack_pending", "num_waiting", "num_pending", "paused", "ts", "priority_groups":
			recordSeen = true
			if p := c.Config.pull; p != nil && !reread {
				return d.pullField(p, key)
			}
		}
		return d.Skip()
	})
	if err == nil && created != nil {
		if err := c.Created.UnmarshalJSON(created); err != nil {
			return fmt.Errorf("invalid consumer record at offset %d: %w", start, err)
		}
	}
	p := c.Config.pull
	switch {
	case err != nil || p == nil:
		return err
	case reread:
		if err := c.readPull(d.text[start:d.Offset()]); err != nil {
			return fmt.Errorf("invalid consumer record at offset %d: %w", start, err)
		}
	default:
		p.Created = c.Created
	}
	return nil
}

// pullField decodes the record field key of a priority consumer into p,
// as pullRecord reads it.
func (d *jszDecoder) pullField(p *snapshot.PullState, key []byte) error {
	switch string(key) {
	case "delivered":
		return d.lastActive(&p.LastDelivery)
	case "ack_floor":
		return d.lastActive(&p.LastAck)
	case "num_ack_pending":
		return d.Int(&p.AckPending)
	case "num_waiting":
		return d.Int(&p.Waiting)
	case "num_pending":
		n, err := d.bounded(0, math.MaxInt64, "num_pending")
		p.Pending = uint64(n)
		return err
	case "paused":
		return d.Bool(&p.Paused)
	case "ts":
		return d.time(&p.At)
	}
	// priority_groups: the first group's pin; an empty list has none.
	p.PinnedID, p.PinnedAt = "", time.Time{}
	if d.Null() {
		return nil
	}
	first := true
	return d.Array(func() error {
		var id string
		var at time.Time
		if d.Null() {
			first = false
			return nil
		}
		err := d.Object(func(key []byte) error {
			switch string(key) {
			case "group":
				var g string
				return d.Text(&g)
			case "pinned_client_id":
				return d.Text(&id)
			case "pinned_ts":
				return d.time(&at)
			}
			return d.Skip()
		})
		if first {
			p.PinnedID, p.PinnedAt, first = id, at, false
		}
		return err
	})
}

// bounded decodes an integer, which must be from lo to hi (what names
// it); 0 when it is not. Null is 0.
func (d *jszDecoder) bounded(lo, hi int64, what string) (int64, error) {
	var n int64
	if err := d.Int64(&n); err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, d.Fail(what + " out of range")
	}
	return n, nil
}

// lastActive decodes a SequenceInfo's last_active into t.
func (d *jszDecoder) lastActive(t *time.Time) error {
	if d.Null() {
		return nil
	}
	return d.Object(func(key []byte) error {
		if string(key) == "last_active" {
			if d.Null() {
				*t = time.Time{}
				return nil
			}
			return d.time(t)
		}
		return d.Skip()
	})
}

// time decodes a time as encoding/json does, by time.Time's own
// UnmarshalJSON (null leaves *t as it is).
func (d *jszDecoder) time(t *time.Time) error {
	raw, err := d.Raw()
	if err != nil {
		return err
	}
	if err := t.UnmarshalJSON(raw); err != nil {
		return fmt.Errorf("invalid JSON at offset %d: %w", d.Offset()-len(raw), err)
	}
	return nil
}

func (d *jszDecoder) cluster(p **clusterInfo) error {
	if d.Null() {
		*p = nil
		return nil
	}
	if *p == nil {
		*p = d.newCluster()
	}
	ci := *p
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "leader":
			return d.Name(&ci.Leader)
		case "replicas":
			return d.replicas(&ci.Replicas)
		}
		return d.Skip()
	})
}

// replicas decodes a list of an asset's peers, of which the audit reads
// the names and the leader's view of each.
func (d *jszDecoder) replicas(p *[]*replicaPeer) error {
	return jsonscan.List(&d.Scanner, p, func(pp **replicaPeer) error {
		if d.Null() {
			return nil
		}
		rp := &replicaPeer{}
		*pp = rp
		return d.Object(func(key []byte) error {
			switch string(key) {
			case "name":
				return d.Name(&rp.Name)
			case "current":
				return d.Bool(&rp.Current)
			case "active":
				return d.Int64(&rp.Active)
			}
			return d.Skip()
		})
	})
}

// metaReplicas decodes the meta group's list of peers, of which the audit
// reads the names and peer ids.
func (d *jszDecoder) metaReplicas(p *[]*metaPeer) error {
	return jsonscan.List(&d.Scanner, p, func(pp **metaPeer) error {
		if d.Null() {
			return nil
		}
		mp := &metaPeer{}
		*pp = mp
		return d.Object(func(key []byte) error {
			switch string(key) {
			case "name":
				return d.Name(&mp.Name)
			case "peer":
				return d.Name(&mp.Peer)
			}
			return d.Skip()
		})
	})
}

// config decodes a config into the decoder's scratch config, which it
// returns (nil for null), valid until the next config is decoded: the
// caller keeps its summary (set), as the summaries' UnmarshalJSON does. A
// second "config" key replaces the first one's summary (encoding/json
// would have merged two configs' fields into one): the servers send each
// key once.
func (d *jszDecoder) config() (*jszConfig, error) {
	if d.Null() {
		return nil, nil
	}
	cfg := &d.scratch
	*cfg = jszConfig{}
	err := d.Object(func(key []byte) error {
		switch string(key) {
		case "num_replicas":
			return d.Int(&cfg.Replicas)
		case "max_ack_pending":
			return d.Int(&cfg.MaxAckPending)
		case "metadata":
			if d.Null() {
				return nil
			}
			return d.Object(func(key []byte) error {
				if string(key) == "_nats.req.level" {
					// A small number, the same on most configs of a reply
					// (2.11 on record one in every asset's metadata).
					return d.Name(&cfg.Metadata.RequiredLevel)
				}
				return d.Skip()
			})
		}
		return d.assetConfig(&cfg.AssetConfig, key)
	})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// assetConfig decodes the value of key if it is one of AssetConfig's (what
// Features detect), and steps over it otherwise. The scalar fields, on
// every config, are read here; the rare structured ones (mirror, sources,
// subject transform, republish, priority groups) go to encoding's
// reflective decoder.
func (d *jszDecoder) assetConfig(c *releases.AssetConfig, key []byte) error {
	switch string(key) {
	case "allow_msg_ttl":
		return d.Bool(&c.AllowMsgTTL)
	case "subject_delete_marker_ttl":
		return d.Int64(&c.SubjectDeleteMarkerTTL)
	case "allow_msg_counter":
		return d.Bool(&c.AllowMsgCounter)
	case "allow_atomic":
		return d.Bool(&c.AllowAtomicPublish)
	case "allow_msg_schedules":
		return d.Bool(&c.AllowMsgSchedules)
	// The enumerations are interned: ack_policy is on every consumer.
	case "persist_mode":
		return d.Name(&c.PersistMode)
	case "allow_batched":
		return d.Bool(&c.AllowBatchPublish)
	case "ack_policy":
		return d.Name(&c.AckPolicy)
	case "sourcing":
		return d.Bool(&c.Sourcing)
	case "deliver_subject":
		return d.Text(&c.DeliverSubject)
	case "pause_until":
		return d.Text(&c.PauseUntil)
	case "priority_policy":
		return d.Name(&c.PriorityPolicy)
	case "priority_timeout":
		return d.Int64(&c.PinnedTTL)
	case "mirror":
		return d.reflect(&c.Mirror)
	case "sources":
		return d.reflect(&c.Sources)
	case "subject_transform":
		return d.reflect(&c.SubjectTransform)
	case "republish":
		return d.reflect(&c.RePublish)
	case "priority_groups":
		return d.reflect(&c.PriorityGroups)
	}
	return d.Skip()
}

// reflect decodes the next value into v with the reflective decoder.
func (d *jszDecoder) reflect(v any) error {
	raw, err := d.Raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("invalid JSON at offset %d: %w", d.Offset()-len(raw), err)
	}
	return nil
}

func (d *jszDecoder) apiError(e *apiError) error {
	return d.Object(func(key []byte) error {
		switch string(key) {
		case "code":
			return d.Int(&e.Code)
		case "err_code":
			n, err := d.bounded(0, 0xffff, "err_code")
			e.ErrCode = uint16(n)
			return err
		case "description":
			return d.Text(&e.Description)
		}
		return d.Skip()
	})
}

// parseJSZ decodes one JSZ page.
func parseJSZ(data []byte) (*jszData, error) {
	resp, err := decodeJSZReply(data)
	if err != nil {
		return nil, fmt.Errorf("malformed reply: %w", err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.Data == nil {
		return nil, errors.New("reply carries no data")
	}
	return resp.Data, nil
}
