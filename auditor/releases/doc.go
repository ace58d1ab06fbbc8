// Package releases is what each nats-server release does, read from the
// servers' source at the tags each row cites: with an asset whose config
// uses a newer feature, with a replicated operation a newer leader
// proposes, with a feature flag, which JetStream API level it reports, and
// which release it may move to. Its tables take versions, flags and configs,
// never a server or a snapshot, so the collection, the rules and the
// what-ifs all read the same rows. It imports only auditor/version.
//
// Files:
//   - features.go: the features an asset's config can use (Features,
//     DetectFeatures), what each older release does with them (Outcome,
//     Handling), and the durable sources a stream reads through.
//   - ops.go: the replicated operations a leader proposes (ReplicatedOps)
//     and what each follower's release does on applying one.
//   - feature_flags.go: the feature flags, their defaults by release, and
//     what each flag makes a leader propose.
//   - levels.go: the JetStream API level each release reports (LevelOf).
//   - feature_levels.go: the level each feature needs, for the capability
//     view.
//   - releases.go: the upgrade paths (PathRules) and the releases that lose
//     data (BadReleases).
//
// A new row about a release goes into the table of its axis; its test
// reads the source at the tags the row cites.
package releases
