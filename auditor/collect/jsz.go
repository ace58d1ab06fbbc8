package collect

import (
	"strconv"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	json "github.com/segmentio/encoding/json"
)

// jszReply is the part of server.ServerAPIJszResponse an audit reads. A JSZ
// reply with configs carries hundreds of bytes per consumer, of which the
// audit reads a few names and counts; decoding all of it into server.JSInfo
// made up most of an audit's CPU time and heap. The projection reads what
// the audit uses and skips the rest; decodeJSZReply (jszdecode.go) fills it
// in one pass over the bytes. The JSON names are the server's:
// TestJSZProjectionMatchesServerTypes decodes live replies both ways and
// compares, and TestDecodeJSZMatchesUnmarshal holds the decoder to
// encoding/json.
type jszReply struct {
	Data  *jszData  `json:"data,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

type jszData struct {
	Meta           *metaClusterInfo `json:"meta_cluster,omitempty"`
	AccountDetails []jszAccount     `json:"account_details,omitempty"`
	Total          int              `json:"total"`
	// Accounts counts the server's JetStream accounts on every version
	// (JetStreamStats); Total, the same count, only from 2.11.2 on.
	Accounts int `json:"accounts"`
}

// jszAccount is an AccountDetail. ID is the account's own name, which in
// operator (JWT) mode is its public key; Name is the account JWT's name if it
// has one, else ID (monitor.go accountDetail, 2.10.27 to 2.15.3).
type jszAccount struct {
	Name    string      `json:"name"`
	ID      string      `json:"id"`
	Streams []jszStream `json:"stream_detail,omitempty"`
}

// id is the account's id; a reply without one names the account by Name.
func (a *jszAccount) id() string {
	if a.ID == "" {
		return a.Name
	}
	return a.ID
}

// name is the account's name when it is not its id: in operator mode, the
// account JWT's name; empty in plain mode, where the two are one.
func (a *jszAccount) name() string {
	if a.Name == a.id() {
		return ""
	}
	return a.Name
}

type jszStream struct {
	Name string `json:"name"`
	// Created is when the stream was created, as the reporter holds it.
	Created   time.Time     `json:"created"`
	Cluster   *clusterInfo  `json:"cluster,omitempty"`
	Config    streamConfig  `json:"config"`
	Consumers []jszConsumer `json:"consumer_detail,omitempty"`
}

type jszConsumer struct {
	Name string `json:"name"`
	// Created is when the consumer was created, as the reporter holds it.
	Created time.Time      `json:"created"`
	Cluster *clusterInfo   `json:"cluster,omitempty"`
	Config  consumerConfig `json:"config"`
}

// UnmarshalJSON is the reflective decoders' way to the same projection
// decodeJSZReply makes: the record is read only for a consumer whose
// config has a priority policy.
func (c *jszConsumer) UnmarshalJSON(b []byte) error {
	type fields jszConsumer // without this method
	if err := json.Unmarshal(b, (*fields)(c)); err != nil {
		return err
	}
	return c.readPull(b)
}

// readPull reads who pulls a consumer with a priority policy from its
// object b, into the pull state its config began; of any other consumer,
// whose config has none, nothing.
func (c *jszConsumer) readPull(b []byte) error {
	if c.Config.pull == nil {
		return nil
	}
	var rec pullRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return err
	}
	rec.fill(c.Config.pull)
	return nil
}

// configSummary is what the audit keeps of one report's config, read as the
// reply is decoded. A decoded config is larger than all else the projection
// keeps of a report, and there is one per report: most of what a decoded
// reply held, and memory that a process that collects nothing (check)
// touches for the first time. A missing or null config is the zero summary.
type configSummary struct {
	Replicas      int
	RequiredLevel int
	Features      releases.FeatureSet
	Ops           releases.OpSet
	// AckNone: a consumer with ack_policy none, which has no acks.
	AckNone bool
}

func summarize(kind releases.AssetKind, c *jszConfig) configSummary {
	return configSummary{Replicas: c.Replicas, RequiredLevel: c.requiredLevel(),
		Features: releases.DetectFeatures(kind, &c.AssetConfig), Ops: releases.DetectOps(kind, &c.AssetConfig),
		AckNone: kind == releases.KindConsumer && c.AckPolicy == "none"}
}

// streamConfig and consumerConfig are the summaries of a stream's and a
// consumer's config, both decoders' made by set: decodeJSZReply's, and the
// reflective decoders' through UnmarshalJSON, which the tests hold it to.
type streamConfig struct {
	configSummary
	DurableSources []releases.DurableSource
}

type consumerConfig struct {
	configSummary
	// pull is who pulls a consumer with a priority policy: its config,
	// and the record of the report the config came in (readPull); nil
	// for a consumer without one, which is most of them.
	pull *snapshot.PullState
}

// set keeps the summary of a stream's config.
func (c *streamConfig) set(cfg *jszConfig) {
	c.configSummary, c.DurableSources = summarize(releases.KindStream, cfg), releases.DurableSources(&cfg.AssetConfig)
}

// set keeps the summary of a consumer's config.
func (c *consumerConfig) set(cfg *jszConfig) {
	c.configSummary, c.pull = summarize(releases.KindConsumer, cfg), cfg.pullConfig()
}

func (c *streamConfig) UnmarshalJSON(b []byte) error {
	cfg, err := unmarshalConfig(b)
	if cfg != nil {
		c.set(cfg)
	}
	return err
}

func (c *consumerConfig) UnmarshalJSON(b []byte) error {
	cfg, err := unmarshalConfig(b)
	if cfg != nil {
		c.set(cfg)
	}
	return err
}

// unmarshalConfig decodes a config; nil for null, which leaves a value as
// it is in encoding/json.
func unmarshalConfig(b []byte) (*jszConfig, error) {
	if string(b) == "null" {
		return nil, nil
	}
	var cfg jszConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// jszConfig is what the audit reads of a StreamConfig or ConsumerConfig:
// replicas, the required level and what Features detect.
type jszConfig struct {
	Replicas int `json:"num_replicas"`
	Metadata struct {
		RequiredLevel string `json:"_nats.req.level"`
	} `json:"metadata"`
	// MaxAckPending is a consumer's limit of messages out unacked: a
	// consumer at it delivers nothing, whoever pulls.
	MaxAckPending int `json:"max_ack_pending"`
	releases.AssetConfig
}

// requiredLevel is the config's _nats.req.level. Missing is 0; one that is
// not a number is LevelUnreadable: a 2.11+ server supports an asset only if
// the level parses and is at most its own (jetstream_versioning.go,
// supportsRequiredApiLevel).
func (c *jszConfig) requiredLevel() int {
	if c.Metadata.RequiredLevel == "" {
		return 0
	}
	level, err := strconv.Atoi(c.Metadata.RequiredLevel)
	if err != nil {
		return snapshot.LevelUnreadable
	}
	return level
}
