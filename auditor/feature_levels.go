package auditor

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
