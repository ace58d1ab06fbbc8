package releases

import (
	"regexp"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Outcome is what a server does with a stream or consumer whose config uses
// a feature the server does not have.
type Outcome string

// The outcomes, from harmless to fatal. Every one but Supported concerns the
// server as a peer of the asset, except CrashesOnDecode and HaltsMeta: every
// member of a JetStream domain's meta group decodes every assignment, so a
// server that crashes on one, or halts its meta group, does so whether it
// hosts the asset or not.
const (
	// Supported: the server runs the asset with the feature.
	Supported Outcome = "supported"
	// IgnoredOnline: the server decodes the config leniently, drops what it
	// does not know and runs the asset online without the feature: its copy
	// silently diverges from the others'. As the server that handles a
	// create, it creates the asset without the feature.
	IgnoredOnline Outcome = "ignored_online"
	// HeldOffline: the server decodes the config strictly, logs the asset as
	// unsupported ("Detected unsupported stream ...") and keeps it offline,
	// running on.
	HeldOffline Outcome = "held_offline"
	// NotLoaded: the server cannot decode the config at all (a value its
	// decoder rejects), logs "failed to decode ... assignment" and runs on,
	// but never loads the asset: as a peer its replica never runs.
	NotLoaded Outcome = "not_loaded"
	// NotCreated: the server decodes the config, but refuses it as it
	// creates the asset: from its store at start it logs "Error recreating
	// stream" and runs on without it; as a peer its replica never runs.
	// Unlike NotLoaded, nothing marks the asset as held: the server lists
	// it nowhere.
	NotCreated Outcome = "not_created"
	// CreateRefused: as the server that handles the create, the server
	// answers it with an error (invalid JSON, err_code 10025).
	CreateRefused Outcome = "create_refused"
	// CrashesOnDecode: like NotLoaded, and the server's next meta snapshot
	// (about a minute after it starts) decodes the assignment again and
	// panics; the process exits, peer or not. Restarted, it replays the
	// assignment and fails to decode it again.
	CrashesOnDecode Outcome = "crashes_on_decode"
	// HaltsMeta: the server cannot decode the config; applying the meta
	// group's entry fails, the server logs "JetStream cluster meta group
	// critical write error" and turns observer of the meta group, peer or
	// not: it runs on, but applies no later change to any stream or
	// consumer of its domain. Restarted, it replays the entry and halts
	// again.
	HaltsMeta Outcome = "halts_meta"
)

// Handling is what the servers of one version range do with an asset that
// uses a feature.
type Handling struct {
	// From and Below bound the range [From, Below); a zero From is every
	// older version.
	From, Below version.Version
	// Asset is what such a server does with an asset that exists (created
	// through a newer meta leader).
	Asset Outcome
	// Create is what it does with a create request it handles: as the meta
	// leader for a stream; for a consumer, every server decodes the request
	// and one that cannot answers the client first with an error, although a
	// newer meta leader may still create it.
	Create Outcome
	// Evidence is the real-server test or the server source lines the row
	// rests on.
	Evidence string
}

// Feature is a JetStream feature an asset's config can use, what brings
// it, and what servers that predate it do with such an asset.
type Feature struct {
	// Name is a stable identifier, as findings and metrics write it.
	Name string
	// Title is the feature as operators call it.
	Title string
	Kind  AssetKind
	// Level is the JetStream API level that brings the feature. The level
	// the server records in the asset's _nats.req.level may be lower (see
	// DurableSourcing).
	Level int
	// Since is the first release with the feature.
	Since version.Version
	// Uses reports whether a config of the feature's Kind uses it.
	Uses func(*AssetConfig) bool
	// Source cites the server source that defines the feature.
	Source string
	// Older is what each range of older releases does, oldest first;
	// together the ranges cover every version below Since.
	Older []Handling
}

// AssetConfig is the part of a stream's or consumer's config (as JSZ with
// config:true reports it) that Features detect. The JSON names are
// nats-server's StreamConfig and ConsumerConfig fields.
type AssetConfig struct {
	// Stream config.
	AllowMsgTTL            bool            `json:"allow_msg_ttl,omitempty"`
	SubjectDeleteMarkerTTL int64           `json:"subject_delete_marker_ttl,omitempty"`
	AllowMsgCounter        bool            `json:"allow_msg_counter,omitempty"`
	AllowAtomicPublish     bool            `json:"allow_atomic,omitempty"`
	AllowMsgSchedules      bool            `json:"allow_msg_schedules,omitempty"`
	PersistMode            string          `json:"persist_mode,omitempty"`
	AllowBatchPublish      bool            `json:"allow_batched,omitempty"`
	Mirror                 *StreamSource   `json:"mirror,omitempty"`
	Sources                []*StreamSource `json:"sources,omitempty"`
	// SubjectTransform and RePublish map subjects, as a mirror's or a
	// source's SubjectTransforms do: each destination may call a mapping
	// function a release brings.
	SubjectTransform *SubjectMapping `json:"subject_transform,omitempty"`
	RePublish        *SubjectMapping `json:"republish,omitempty"`

	// Consumer config.
	AckPolicy string `json:"ack_policy,omitempty"`
	// Sourcing marks a consumer that durable sourcing reads through; a
	// client can set it too.
	Sourcing       bool     `json:"sourcing,omitempty"`
	DeliverSubject string   `json:"deliver_subject,omitempty"`
	PauseUntil     string   `json:"pause_until,omitempty"`
	PriorityGroups []string `json:"priority_groups,omitempty"`
	PriorityPolicy string   `json:"priority_policy,omitempty"`
	PinnedTTL      int64    `json:"priority_timeout,omitempty"`
}

// StreamSource is a mirror's or source's origin, as StreamConfig's mirror
// and sources name it.
type StreamSource struct {
	Name string `json:"name"`
	// Consumer is set for durable sourcing (2.14): the mirror or source
	// reads through this durable consumer of the origin.
	Consumer *struct {
		Name           string `json:"name,omitempty"`
		DeliverSubject string `json:"deliver_subject,omitempty"`
	} `json:"consumer,omitempty"`
	External *struct {
		APIPrefix string `json:"api,omitempty"`
	} `json:"external,omitempty"`
	SubjectTransforms []SubjectMapping `json:"subject_transforms,omitempty"`
}

// SubjectMapping is the destination of a subject transform or a republish
// (SubjectTransformConfig, RePublish), where mapping functions are called.
type SubjectMapping struct {
	Destination string `json:"dest"`
}

// mappingDestinations are the destinations of every subject mapping of a
// stream config: its transform, its republish, and its mirror's and
// sources' transforms.
func mappingDestinations(c *AssetConfig) []string {
	var out []string
	for _, m := range []*SubjectMapping{c.SubjectTransform, c.RePublish} {
		if m != nil && m.Destination != "" {
			out = append(out, m.Destination)
		}
	}
	for _, s := range append([]*StreamSource{c.Mirror}, c.Sources...) {
		if s == nil {
			continue
		}
		for _, m := range s.SubjectTransforms {
			out = append(out, m.Destination)
		}
	}
	return out
}

// usesMappingFunction returns whether a stream config calls the mapping
// function fn (lower case) in any destination, spelled as the server's
// pattern for it accepts: any case of the first letter, and space inside
// the braces (2.12.0 subject_transform.go:38).
func usesMappingFunction(fn string) func(*AssetConfig) bool {
	return usesMappingFunctionIn(mappingDestinations, fn)
}

// mappingFunctionPattern matches a call of the mapping function fn (lower
// case) as the server's pattern for it does.
func mappingFunctionPattern(fn string) *regexp.Regexp {
	return regexp.MustCompile(`{{\s*[` + strings.ToLower(fn[:1]) + strings.ToUpper(fn[:1]) + `]` + regexp.QuoteMeta(fn[1:]) + `\s*\(`)
}

// leftRightRefused is what a release from 2.11.0 to 2.14.6 does with a
// stream whose transform, or whose mirror's or source's, calls left() or
// right(): ValidateMapping, which checkStreamCfg runs on those
// destinations, knows no such function.
const leftRightRefused = "ValidateMapping refuses them (2.11.12 sublist.go:1258-1280; 2.12.15 :1271-1293; 2.14.6 :1271-1291) " +
	"in the stream's transform and its mirror's and sources' (2.11.12 stream.go:1783, :1516, :1609; 2.14.6 :2226, :1936, :2023); " +
	"checkStreamCfg runs it on a create and as the server creates the stream from its assignment (2.11.12 stream.go:522; 2.14.6 :751) " +
	"or from its store at start, logging \"Error recreating stream\" and running on (2.11.12 jetstream.go:1568; 2.12.15 :1592; 2.14.6 :1571)"

// streamAndMirrorDestinations are the destinations of a stream's own
// transform and its mirror's transforms.
func streamAndMirrorDestinations(c *AssetConfig) []string {
	var out []string
	if m := c.SubjectTransform; m != nil && m.Destination != "" {
		out = append(out, m.Destination)
	}
	if c.Mirror != nil {
		for _, m := range c.Mirror.SubjectTransforms {
			out = append(out, m.Destination)
		}
	}
	return out
}

// sourceDestinations are the destinations of a stream's sources'
// transforms.
func sourceDestinations(c *AssetConfig) []string {
	var out []string
	for _, s := range c.Sources {
		if s != nil {
			for _, m := range s.SubjectTransforms {
				out = append(out, m.Destination)
			}
		}
	}
	return out
}

// usesMappingFunctionIn returns whether a stream config calls one of the
// mapping functions fns (lower case) in the destinations dests gives,
// spelled as the server's patterns accept (usesMappingFunction).
func usesMappingFunctionIn(dests func(*AssetConfig) []string, fns ...string) func(*AssetConfig) bool {
	var res []*regexp.Regexp
	for _, fn := range fns {
		res = append(res, mappingFunctionPattern(fn))
	}
	return func(c *AssetConfig) bool {
		for _, d := range dests(c) {
			for _, re := range res {
				if re.MatchString(d) {
					return true
				}
			}
		}
		return false
	}
}

// Version ranges the handling rows use, each where the server's decoders
// changed.
var (
	// v2.11.0: API levels, TTLs, pause, priority groups. Assignments are
	// still decoded leniently (2.11.8 jetstream_cluster.go:7269, :7695).
	v211 = version.Must("2.11.0")
	// v2.11.9: assignments decoded strictly; an unknown field makes the
	// asset unsupported (held offline) (2.11.12 jetstream_cluster.go:7717,
	// :177-190; absent in 2.11.8).
	v2119 = version.Must("2.11.9")
	v212  = version.Must("2.12.0")
	// v2.12.5: the asynchronous meta snapshot re-decodes the log's
	// assignments and panics on one it cannot decode (2.12.15
	// jetstream_cluster.go:2326-2355, called from :1765 every minute
	// (:1580); absent in 2.12.4).
	v2125 = version.Must("2.12.5")
	v214  = version.Must("2.14.0")
	// v2.14.7: the config check takes the left() and right() mapping
	// functions (sublist.go:1291-1292).
	v2147 = version.Must("2.14.7")
	// v2.14.10 and v2.15.3: decodeConfig decodes an assignment's config
	// strictly, then field by field, and holds an asset with a value it
	// cannot decode offline as "unsupported - config error" (2.14.10
	// jetstream_versioning.go:60-106, jetstream_cluster.go:9835, :10346,
	// :370-375; 2.15.3 jetstream_versioning.go:60, jetstream_cluster.go:12813,
	// :13323, :562-566). 2.15.0 to 2.15.2 have no such decoder.
	v21410 = version.Must("2.14.10")
	v2153  = version.Must("2.15.3")
)

// UndecodableValue is what each release does with an asset whose config
// holds a value its decoder rejects: an enum value a later release brings.
// Its ranges cover every version; ValueFeature cuts them at a feature's
// release. The Create of every range is CreateRefused: the API's request
// decoders reject such a value at every release (createStrict,
// createLenient, and the enum's UnmarshalJSON error in both).
var UndecodableValue = []Handling{
	{Below: v211, Asset: NotLoaded, Create: CreateRefused,
		Evidence: "2.10.27 logs the decode error and runs on (jetstream_cluster.go:1948-1951)"},
	{From: v211, Below: v2125, Asset: NotLoaded, Create: CreateRefused,
		Evidence: "2.11.12 logs the decode error and runs on (jetstream_cluster.go:2163-2167, :1512-1524); 2.12.4 has no re-decoding snapshot"},
	{From: v2125, Below: v21410, Asset: CrashesOnDecode, Create: CreateRefused,
		Evidence: "the meta snapshot re-decodes the assignment and panics (2.12.15 jetstream_cluster.go:2326-2355; 2.14.0 :2254-2255; 2.14.9 :2515-2516)"},
	{From: v21410, Below: v215, Asset: HeldOffline, Create: CreateRefused,
		Evidence: "decodeConfig holds it offline as \"unsupported - config error\" (2.14.10 jetstream_versioning.go:60-106, jetstream_cluster.go:9835-9846, :370-375)"},
	{From: v215, Below: v2153, Asset: HaltsMeta, Create: CreateRefused,
		Evidence: "decodeStreamAssignmentConfig returns the error (2.15.0 jetstream_cluster.go:11737-11742, :12214-12219); " +
			"applyMetaEntries returns it (:3487-3490), and monitorCluster sets a meta write error and returns (:2257, :2276-2280): " +
			"\"meta group critical write error\", step down, observer (:1772-1791); the async snapshot returns it instead of panicking (:2714-2717)"},
	{From: v2153, Asset: HeldOffline, Create: CreateRefused,
		Evidence: "decodeConfig holds it offline as \"unsupported - config error\" (2.15.3 jetstream_versioning.go:60-106, jetstream_cluster.go:12813, :562-566)"},
}

// UndecodableValueBy returns what a server of the given version does with
// an asset whose config holds a value its decoder rejects; a version that
// is not one gets the worst of every range.
func UndecodableValueBy(v version.Version) Handling {
	if v.IsZero() {
		return Feature{Since: v2153, Older: UndecodableValue}.HandlingBy(v)
	}
	// The ranges run oldest first, each from where the one before ends;
	// the last is open.
	last := len(UndecodableValue) - 1
	for _, h := range UndecodableValue[:last] {
		if v.Before(h.Below) {
			return h
		}
	}
	return UndecodableValue[last]
}

// ValueFeature is the handling of a feature that adds an enum value, which
// every older release's decoder rejects: UndecodableValue below since.
// evidence, where given, replaces a range's evidence with what was seen
// for the feature itself, in the order of the ranges kept.
func ValueFeature(since version.Version, evidence ...string) []Handling {
	var out []Handling
	for _, h := range UndecodableValue {
		if h.From.AtLeast(since) {
			break
		}
		if h.Below.IsZero() || h.Below.Compare(since) > 0 {
			h.Below = since
		}
		if i := len(out); i < len(evidence) && evidence[i] != "" {
			h.Evidence = evidence[i]
		}
		out = append(out, h)
	}
	return out
}

// Create-path handling, from the API request decoders: 2.10.27 decodes
// create requests leniently (jetstream_api.go:1402, :3855); 2.11.12 strictly
// only with jetstream strict mode, off by default (jetstream_api.go:1194-1215,
// jetstream.go:568); 2.12.15 strictly by default (jetstream_api.go:1226-1247,
// jetstream.go:570). A value the decoder rejects fails every one of them.
const (
	// streams210 and streams211 are where 2.10 and 2.11 decode stream
	// assignments: leniently, and from 2.11.9 strictly, holding an asset
	// with an unknown field offline.
	streams210 = "2.10.27 decodes stream assignments leniently (jetstream_cluster.go:7214); " + createLenient
	streams211 = "2.11.12 jetstream_cluster.go:7715-7717 (strict stream decode), :177-190 (unsupported); " + createLenient

	createLenient = "create: 2.10.27 jetstream_api.go:1402/:3855 (lenient), 2.11.12 jetstream_api.go:1194-1215 with jetstream.go:568 (strict mode off by default)"
	createStrict  = "create: 2.12.15 jetstream_api.go:1226-1247 with jetstream.go:570 (strict by default)"
)

// fieldFeature is the handling of a feature that adds a config field: older
// servers drop an unknown field (2.10, and 2.11 before 2.11.9) or hold the
// asset offline (2.11.9 on).
func fieldFeature(since version.Version, evidence ...string) []Handling {
	ev := func(i int) string {
		if i < len(evidence) {
			return evidence[i]
		}
		return ""
	}
	var out []Handling
	add := func(from, below version.Version, asset, create Outcome, e string) {
		if from.AtLeast(since) {
			return
		}
		if below.Compare(since) > 0 {
			below = since
		}
		out = append(out, Handling{From: from, Below: below, Asset: asset, Create: create, Evidence: e})
	}
	add(version.Version{}, v211, IgnoredOnline, IgnoredOnline, ev(0))
	add(v211, v2119, IgnoredOnline, IgnoredOnline, "2.11.8 jetstream_cluster.go:7269 (lenient stream decode, no unsupported state); "+createLenient)
	add(v2119, v212, HeldOffline, IgnoredOnline, ev(1))
	add(v212, since, HeldOffline, CreateRefused, ev(2))
	return out
}

// Features lists the JetStream features the audit detects in asset
// configs, with what older servers do with them. Each row's evidence is a
// real-server test (TestFact..., cmd/nats-version-auditor) or cited source
// lines in the nats-server module of that version.
var Features = []Feature{
	{
		Name: "msg_ttl", Title: "per-message TTLs", Kind: KindStream, Level: 1, Since: v211,
		Uses:   func(c *AssetConfig) bool { return c.AllowMsgTTL },
		Source: "2.11.0 stream.go:105; jetstream_versioning.go (2.15.3 :124-127)",
		Older: []Handling{{Below: v211, Asset: IgnoredOnline, Create: IgnoredOnline,
			Evidence: "TestFactAPIGapsOfOldPeers/a_2.10_peer_runs_a_TTL_stream_online_and_diverges; " + createLenient}},
	},
	{
		Name: "delete_marker_ttl", Title: "subject delete-marker TTLs", Kind: KindStream, Level: 1, Since: v211,
		Uses:   func(c *AssetConfig) bool { return c.SubjectDeleteMarkerTTL > 0 },
		Source: "2.11.0 stream.go:109; jetstream_versioning.go (2.15.3 :124-127)",
		Older: []Handling{{Below: v211, Asset: IgnoredOnline, Create: IgnoredOnline,
			Evidence: "2.10.27 has no such field; " + streams210}},
	},
	{
		Name: "pause", Title: "consumer pause", Kind: KindConsumer, Level: 1, Since: v211,
		Uses:   func(c *AssetConfig) bool { return c.PauseUntil != "" && !strings.HasPrefix(c.PauseUntil, "0001-01-01") },
		Source: "2.11.0 consumer.go:124; 2.14.0 jetstream_versioning.go:155-160",
		Older: []Handling{{Below: v211, Asset: IgnoredOnline, Create: IgnoredOnline,
			Evidence: "2.10.27 has no such field; decodes leniently (jetstream_cluster.go:7613); " + createLenient}},
	},
	{
		Name: "priority_groups", Title: "priority groups (overflow, pinned_client)", Kind: KindConsumer, Level: 1, Since: v211,
		Uses: func(c *AssetConfig) bool {
			return len(c.PriorityGroups) > 0 || c.PinnedTTL != 0 || (c.PriorityPolicy != "" && c.PriorityPolicy != "none")
		},
		Source: "2.11.0 consumer.go:127-129, :224-225; 2.14.0 jetstream_versioning.go:162-164",
		Older: []Handling{{Below: v211, Asset: IgnoredOnline, Create: IgnoredOnline,
			Evidence: "2.10.27 has no priority fields; decodes leniently (jetstream_cluster.go:7613); " + createLenient}},
	},
	{
		// An enum value: 2.11's PriorityPolicy decoder rejects it.
		Name: "priority_prioritized", Title: "prioritized priority policy", Kind: KindConsumer, Level: 1, Since: v212,
		Uses:   func(c *AssetConfig) bool { return c.PriorityPolicy == "prioritized" },
		Source: "2.12.0 consumer.go:239",
		Older: []Handling{
			{Below: v211, Asset: IgnoredOnline, Create: IgnoredOnline,
				Evidence: "TestFactUndecodableAssets (2.10.27 logs nothing, runs on); 2.10.27 has no priority_policy field"},
			{From: v211, Below: v212, Asset: NotLoaded, Create: CreateRefused,
				Evidence: "TestFactUndecodableAssets (2.11.12 logs the decode error, runs on, never loads it as a peer); 2.11.12 consumer.go:268-277, jetstream_cluster.go:2163-2167, :1512-1524"},
		},
	},
	{
		Name: "msg_counter", Title: "counters", Kind: KindStream, Level: 2, Since: v212,
		Uses:   func(c *AssetConfig) bool { return c.AllowMsgCounter },
		Source: "2.12.0 stream.go:114; jetstream_versioning.go (2.15.3 :129-132)",
		Older: fieldFeature(v212,
			streams210,
			streams211),
	},
	{
		Name: "atomic_batch", Title: "atomic batch publishing", Kind: KindStream, Level: 2, Since: v212,
		Uses:   func(c *AssetConfig) bool { return c.AllowAtomicPublish },
		Source: "2.12.0 stream.go:117; jetstream_versioning.go (2.15.3 :134-137)",
		Older: fieldFeature(v212,
			streams210,
			"TestFactUndecodableAssets (2.11.12 peer: held offline); "+streams211),
	},
	{
		Name: "msg_schedules", Title: "message schedules", Kind: KindStream, Level: 2, Since: v212,
		Uses:   func(c *AssetConfig) bool { return c.AllowMsgSchedules },
		Source: "2.12.0 stream.go:120; jetstream_versioning.go (2.15.3 :139-142)",
		Older: fieldFeature(v212,
			streams210,
			streams211),
	},
	{
		Name: "async_persist", Title: "async persist mode", Kind: KindStream, Level: 2, Since: v212,
		Uses:   func(c *AssetConfig) bool { return c.PersistMode == "async" },
		Source: "2.12.0 stream.go:123, :198; jetstream_versioning.go (2.15.3 :144-147)",
		Older: fieldFeature(v212,
			streams210,
			"(no persist_mode field) "+streams211),
	},
	{
		Name: "fast_batch", Title: "fast batch publishing (allow_batched)", Kind: KindStream, Level: 4, Since: v214,
		Uses:   func(c *AssetConfig) bool { return c.AllowBatchPublish },
		Source: "2.14.0 stream.go:126; jetstream_versioning.go:85-88",
		Older: fieldFeature(v214,
			streams210,
			"TestFactUndecodableAssets (2.11.12 peer: held offline); "+streams211,
			"TestFactAPIGapsOfOldPeers/a_2.12_peer_runs_a_level-4_stream_offline; "+createStrict),
	},
	{
		// An enum value: every AckPolicy decoder before 2.14 rejects it.
		Name: "ack_flow_control", Title: "flow-control acks (ack_policy: flow_control)", Kind: KindConsumer, Level: 4, Since: v214,
		Uses:   func(c *AssetConfig) bool { return c.AckPolicy == "flow_control" },
		Source: "2.14.0 store.go:603, :636; jetstream_versioning.go:166-169",
		Older: ValueFeature(v214,
			"TestFactUndecodableAssets (2.10.27 logs the decode error, runs on); 2.10.27 store.go:618-630, jetstream_cluster.go:1948-1951",
			"TestFactUndecodableAssets (2.11.12 logs the decode error, runs on); 2.11.12 store.go:633-643, jetstream_cluster.go:2163-2167, :1512-1524; 2.12.4 has no re-decoding snapshot",
			"TestFactUndecodableAssets (2.12.15 panics at its meta snapshot, peer or not; restarted, fails to decode it again); 2.12.15 store.go:631-641, jetstream_cluster.go:2337-2342"),
	},
	{
		// A mapping function: the config decodes on every release, and
		// _nats.req.level does not record it (2.14.0
		// jetstream_versioning.go:46-90), so no unsupported state holds
		// it; an older release fails to build the transform and never
		// creates the stream.
		Name: "transform_random", Title: "the {{random(n)}} mapping function in a subject transform", Kind: KindStream, Level: 2, Since: v212,
		Uses:   usesMappingFunction("random"),
		Source: "2.12.0 subject_transform.go:38, :357 (randomMappingFunctionRegEx); absent in 2.11.17",
		Older: []Handling{{Below: v212, Asset: NotCreated, Create: CreateRefused,
			Evidence: "TestPeerThatCannotLoadAStreamOnRealServers: 2.11.12 restarted on its store logs " +
				"`Error recreating stream \"T\": stream transform: invalid mapping destination: unknown function in {{random(3)}} (10156)` and runs on " +
				"(2.11.12 jetstream.go:1568, subject_transform.go:337; 2.10.27 jetstream.go:1336, stream.go:591, subject_transform.go:336); " +
				"a create it handles fails checkStreamCfg (2.11.12 stream.go:1783)"}},
	},
	{
		// Functions the transform engine has known since 2.10.0, which the
		// config check (ValidateMapping) took only from 2.14.7. 2.10 checks
		// only its sources' transforms (source_transform_left_right); a
		// republish goes through the engine alone, so every release takes
		// them there.
		Name: "transform_left_right", Title: "the {{left()}} and {{right()}} mapping functions in a stream's or a mirror's subject transform",
		Kind: KindStream, Level: 4, Since: v2147,
		Uses:   usesMappingFunctionIn(streamAndMirrorDestinations, "left", "right"),
		Source: "2.14.7 sublist.go:1291-1292 (ValidateMapping); absent in 2.14.6",
		Older: []Handling{
			{Below: v211, Asset: Supported, Create: Supported,
				Evidence: "2.10.27 checks only a source's transforms (stream.go:1397); its engine takes left() and right() (subject_transform.go:305-315)"},
			{From: v211, Below: v2147, Asset: NotCreated, Create: CreateRefused,
				Evidence: "TestLeftRightTransformOnRealServers (2.14.0 restarted on a 2.14.10 store logs " +
					"`Error recreating stream \"L\": stream transform: invalid mapping destination: unknown function in {{left(1,2)}} (10156)`, runs on and hosts the other stream; " +
					"as the meta leader it refuses the create; as a peer of a create through a 2.14.10 meta leader, it fails to create the stream, " +
					"which the meta leader then removes, the client told of the failure or of the create, whichever peer answers first); " + leftRightRefused},
		},
	},
	{
		Name: "source_transform_left_right", Title: "the {{left()}} and {{right()}} mapping functions in a source's subject transform",
		Kind: KindStream, Level: 4, Since: v2147,
		Uses:   usesMappingFunctionIn(sourceDestinations, "left", "right"),
		Source: "2.14.7 sublist.go:1291-1292 (ValidateMapping); absent in 2.14.6",
		Older: []Handling{{Below: v2147, Asset: NotCreated, Create: CreateRefused,
			Evidence: "2.10.27 ValidateMappingDestination (sublist.go:1275-1296) refuses them in a source's transforms (stream.go:1397), " +
				"run by checkStreamCfg as the server creates the stream from its assignment (:412); " + leftRightRefused}},
	},
	{
		// A consumer field a client can set, meant for the consumers
		// durable sourcing reads through; _nats.req.level does not record
		// it (2.14.0 jetstream_versioning.go:141-171). A server that holds
		// the consumer offline stops its stream too (stopsStreamSince).
		Name: "consumer_sourcing", Title: "a consumer's sourcing flag", Kind: KindConsumer, Level: 4, Since: v214,
		Uses:   func(c *AssetConfig) bool { return c.Sourcing },
		Source: "2.14.0 consumer.go:129 (ConsumerConfig.Sourcing); absent in 2.12.15",
		Older: fieldFeature(v214,
			"2.10.27 has no such field; decodes consumer assignments leniently (jetstream_cluster.go:7613); "+createLenient,
			"(ConsumerConfig has no sourcing field) 2.11.12 jetstream_cluster.go:8173-8189 (strict consumer decode: unsupported); "+createLenient,
			"TestSourcingConsumerStopsItsStream: 2.12.15 logs `Detected unsupported consumer 'APP > S > C': unsupported - config error: unknown field \"sourcing\"` "+
				"and `Stopping unsupported stream 'APP > S'` (jetstream_cluster.go:9655-9662, :5738-5762); "+createStrict),
	},
	{
		// A nested field: older servers see an unknown field in mirror or
		// sources. The server does not raise _nats.req.level for it
		// (2.14.0 jetstream_versioning.go:46-90), although the mirror
		// requires a level-4 origin (stream.go:3596-3597).
		Name: "durable_sourcing", Title: "durable sourcing", Kind: KindStream, Level: 4, Since: v214,
		Uses: func(c *AssetConfig) bool {
			if c.Mirror != nil && c.Mirror.Consumer != nil {
				return true
			}
			for _, s := range c.Sources {
				if s != nil && s.Consumer != nil {
					return true
				}
			}
			return false
		},
		Source: "2.14.0 stream.go:411-423 (StreamSource.Consumer), :3564-3590 (RESET instead of a consumer create)",
		Older: fieldFeature(v214,
			streams210,
			"(StreamSource has no consumer field) "+streams211,
			"TestFactDurableSourcing (2.12.15 not a peer: runs on); 2.12.15 jetstream_cluster.go:9205-9219 (strict stream decode: the nested field is unknown); "+createStrict),
	},
}

// FeatureSet is a set of Features, by index.
type FeatureSet uint64

// Has reports whether the set holds the feature named name.
func (s FeatureSet) Has(name string) bool {
	for i, f := range Features {
		if f.Name == name {
			return s&(1<<i) != 0
		}
	}
	return false
}

// Features lists the set's features in table order.
func (s FeatureSet) Features() []Feature {
	var out []Feature
	for i, f := range Features {
		if s&(1<<i) != 0 {
			out = append(out, f)
		}
	}
	return out
}

// Names lists the names of the set's features in table order.
func (s FeatureSet) Names() []string {
	var out []string
	for _, f := range s.Features() {
		out = append(out, f.Name)
	}
	return out
}

// DetectFeatures returns the features a config of the given kind uses.
func DetectFeatures(kind AssetKind, c *AssetConfig) FeatureSet {
	if c == nil {
		return 0
	}
	var s FeatureSet
	for i, f := range Features {
		if f.Kind == kind && f.Uses(c) {
			s |= 1 << i
		}
	}
	return s
}

// HandlingBy returns what a server of the given version does with an asset
// using the feature. A version at or above Since supports it; the zero
// Version (a report that is no version) gets the worst outcome of any
// older range, since the audit cannot tell.
func (f Feature) HandlingBy(v version.Version) Handling {
	if v.IsZero() {
		worst := Handling{Asset: Supported, Create: Supported, Evidence: "version unreadable: the worst of every older range"}
		for _, h := range f.Older {
			if h.Asset.Rank() > worst.Asset.Rank() {
				worst.Asset = h.Asset
			}
			if h.Create.Rank() > worst.Create.Rank() {
				worst.Create = h.Create
			}
		}
		return worst
	}
	if v.AtLeast(f.Since) {
		return Handling{From: f.Since, Asset: Supported, Create: Supported, Evidence: f.Source}
	}
	// A pre-release sorts below its release: 2.14.0-RC.2 counts as older.
	for _, h := range f.Older {
		if !v.Before(h.From) && v.Before(h.Below) {
			return h
		}
	}
	return Handling{Asset: Supported, Create: Supported}
}

// Rank orders outcomes by how much they take from a cluster: the worst of
// several is the one ranked highest, a supported asset lowest.
func (o Outcome) Rank() int {
	switch o {
	case IgnoredOnline:
		return 1
	case HeldOffline, HaltsReplica, ResetsReplica:
		return 2
	case CreateRefused:
		return 3
	case NotLoaded, NotCreated:
		return 4
	case HaltsMeta:
		return 5
	case CrashesOnDecode, CrashesOnApply:
		return 6
	}
	return 0
}

// DurableSources lists the origin consumers a stream config reads through.
func DurableSources(c *AssetConfig) []DurableSource {
	var out []DurableSource
	add := func(s *StreamSource, mirror bool) {
		if s == nil || s.Consumer == nil || s.Consumer.Name == "" {
			return
		}
		d := DurableSource{Stream: s.Name, Consumer: s.Consumer.Name, Mirror: mirror}
		if s.External != nil {
			d.APIPrefix = s.External.APIPrefix
		}
		out = append(out, d)
	}
	add(c.Mirror, true)
	for _, s := range c.Sources {
		add(s, false)
	}
	return out
}

// AssetKind tells streams from consumers.
type AssetKind string

// The kinds of JetStream asset the audit inventories.
const (
	KindStream   AssetKind = "stream"
	KindConsumer AssetKind = "consumer"
)

// DurableSource is an origin consumer a mirror or source reads through.
type DurableSource struct {
	Stream   string
	Consumer string
	// APIPrefix is the origin's JetStream API prefix when it is in another
	// account or domain ("$JS.hub.API"); empty for the stream's own.
	APIPrefix string
	Mirror    bool
}
