package releases

import "github.com/natsaudit/nats-version-auditor/auditor/version"

// FeatureLevels lists what the capability view holds the servers' levels
// against: the rows of the feature table (Features), which the audit detects
// in asset configs, and the features of the JetStream API itself, which no
// config shows (apiFeatures).
func FeatureLevels() []FeatureLevel {
	out := make([]FeatureLevel, 0, len(Features)+len(apiFeatures))
	for _, f := range Features {
		out = append(out, FeatureLevel{Name: f.Name, Title: f.Title, Kind: f.Kind, Level: f.Level, Since: f.Since})
	}
	return append(out, apiFeatures...)
}

// apiFeatures are requests a server below their level does not serve,
// whatever the assets' configs say. What RESET does to a consumer's leader
// and followers is reset.go's.
//
// Level 5 (2.15) brings no feature of its own here: 2.15.3's
// setStaticStreamMetadata and setStaticConsumerMetadata
// (jetstream_versioning.go:110-236) require no level above 4.
var apiFeatures = []FeatureLevel{
	// Subscribed only by the consumer's leader, from 2.14.0 (consumer.go,
	// setLeader); a 2.12.15 leader leaves it unanswered
	// (TestConsumerResetAgainstMixedCluster).
	{Name: "consumer_reset", Title: "consumer RESET ($JS.API.CONSUMER.RESET)", Kind: KindConsumer, Level: 4, Since: ResetVersion},
}

// FeatureLevel is the part of a feature the capability view needs: its
// name, the API level that brings it and the first release with it.
type FeatureLevel struct {
	Name  string
	Title string
	// Kind is the kind of asset whose config uses it; empty for any.
	Kind  AssetKind
	Level int
	// Since is the first release with it. A feature can come after its
	// level (a new value of an older field): a server supports it only
	// from Since.
	Since version.Version
}

// ResetVersion is the first nats-server release that answers
// $JS.API.CONSUMER.RESET (and the first that knows its replicated entry).
// A pre-release of it counts as older.
var ResetVersion = version.Must("2.14.0")
