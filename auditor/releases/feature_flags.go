package releases

import (
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// FeatureFlagsSince is the first release that reads a feature_flags block
// in its config (server/feature_flags.go; 2.14.0 opts.go:1826-1848) and
// reports its flags in STATSZ. An older server refuses to start with the
// block (unknown field "feature_flags": 2.12.15 opts.go:1803-1811, seen on
// 2.10.27, 2.11.12 and 2.12.15), so it must go before a downgrade below it.
var FeatureFlagsSince = v214

// v215 is where js_raft_delete_range turned on by default, and where an
// op a follower has no case for stopped crashing it (ops.go).
var v215 = version.Must("2.15.0")

// The feature flags the table knows, as a server's config and STATSZ name
// them.
const (
	FlagAckFormatV2      = "js_ack_fc_v2"
	FlagRaftDeleteRange  = "js_raft_delete_range"
	FlagAPIReplyFormatV2 = "js_api_reply_v2"
	FlagSnapshotSources  = "js_snapshot_sources"
)

// FlagDefault is a flag's default in the releases [From, Below); an empty
// Below is every later release.
type FlagDefault struct {
	From, Below version.Version
	On          bool
	Evidence    string
}

// FeatureFlag is one nats-server feature flag and its default per version
// range.
type FeatureFlag struct {
	Name  string
	Title string
	// Defaults covers every release from the first that knows the flag,
	// oldest first. A release before the first knows nothing of it: the
	// flag is off there, and setting it keeps the server from starting
	// (FeatureFlagsSince).
	Defaults []FlagDefault
	// Hazard says what turning the flag on does to older peers; empty when
	// nothing.
	Hazard string
}

// FeatureFlags lists every flag of every release read (ops_test.go reads
// server/feature_flags.go again at each). A server reports its version's
// defaults merged with its config (getMergedFeatureFlags, 2.14.0
// feature_flags.go; events.go:523, :541), so what it reports wins over the
// table, which only stands in for servers whose flags the audit did not read
// (a what-if's assumed version).
var FeatureFlags = []FeatureFlag{
	{
		Name: FlagAckFormatV2, Title: "v2 ack and flow-control reply subjects",
		Defaults: []FlagDefault{{From: v214, On: false,
			Evidence: "2.14.0 feature_flags.go:23, :35 (\"Introduced: 2.14.0, both v1 and v2 supported, only using v1\"; " +
				"\"Enabled: TBD, both supported, v2 becomes the default\", :28-31); 2.15.3 :23, :37, the same words (:30-32)"}},
		// A leader from 2.14.0 on subscribes both formats, whatever the
		// flag (2.14.0 consumer.go:1700; 2.15.3 :1847): only an older
		// leader misses the v2 acks.
		Hazard: "a consumer it leads delivers with v2 ack subjects ($JS.ACK.<domain>.<account hash>.<stream>.<consumer>…, 2.15.3 consumer.go:1444-1459); " +
			"a leader before 2.14.0 subscribes only the v1 subjects ($JS.ACK.<stream>.<consumer>.*.*.*.*.*, 2.12.15 consumer.go:1286-1288, :1576), " +
			"so an ack for a message delivered before the leadership moved to it is lost and the message is delivered again after ack_wait " +
			"(seen on 2.15.3, 2.15.3 and 2.12.15: num_ack_pending stayed 1; with the flag off the ack applied)",
	},
	{
		Name: FlagRaftDeleteRange, Title: "mirror gaps proposed as one delete range",
		Defaults: []FlagDefault{
			{From: v214, Below: v215, On: false, Evidence: "2.14.0 feature_flags.go:24, :46; 2.14.10 the same"},
			{From: v215, On: true, Evidence: "2.15.3 feature_flags.go:25, :61 (\"Enabled: 2.15.0\", :55-56)"},
		},
		Hazard: "a mirror it leads proposes deleteRangeOp, on which followers before 2.14.0 panic (2.14.0 feature_flags.go:43-45)",
	},
	{
		Name: FlagAPIReplyFormatV2, Title: "v2 JetStream API reply subjects",
		Defaults: []FlagDefault{{From: v215, On: false, Evidence: "2.15.3 feature_flags.go:24, :49"}},
	},
	{
		Name: FlagSnapshotSources, Title: "stream snapshots carrying sourcing state (v2 encoding)",
		Defaults: []FlagDefault{{From: v215, On: false, Evidence: "2.15.3 feature_flags.go:26, :73"}},
		Hazard: "a stream with sources it leads sends a follower it catches up its snapshot in encoding 2, which followers before 2.15.0 reject: " +
			"2.14 with a critical write error, older releases by resetting the replica in a loop (ReplicatedOps, snapshot_sources; 2.15.3 feature_flags.go:63-72)",
	},
}

// FlagByName returns the flag of that name, if the table knows it.
func FlagByName(name string) (FeatureFlag, bool) {
	for _, f := range FeatureFlags {
		if f.Name == name {
			return f, true
		}
	}
	return FeatureFlag{}, false
}

// DefaultBy returns the flag's default in the given version: known is false
// for a version before the flag's first, which has no such flag (it is off
// there). A version that is not one gets the flag on if any range has it
// on: the audit cannot tell, and on is the hazard.
func (f FeatureFlag) DefaultBy(v version.Version) (d FlagDefault, known bool) {
	if v.IsZero() {
		for _, d := range f.Defaults {
			if d.On {
				return FlagDefault{On: true, Evidence: "version unreadable: on in some release"}, true
			}
		}
		return FlagDefault{Evidence: "version unreadable: off in every release"}, true
	}
	for _, d := range f.Defaults {
		if v.AtLeast(d.From) && (d.Below.IsZero() || v.Before(d.Below)) {
			return d, true
		}
	}
	return FlagDefault{Evidence: fmt.Sprintf("%s has no flag %s", v, f.Name)}, false
}
