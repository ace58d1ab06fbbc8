package auditor

import (
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// heldOffline reports whether a peer of API level level, whose worst
// outcome of the asset's features is o, holds an asset of the required
// level offline as unsupported: its level says so and no feature makes
// it run, fail to load or fail to create the asset instead.
func heldOffline(o releases.Outcome, required, level int) bool {
	switch {
	case o == releases.HeldOffline:
		return true
	case !levelSpeaks(required, level) || level == 0:
		return false
	}
	return o != releases.IgnoredOnline && o != releases.NotLoaded && o != releases.NotCreated
}

// stopsStreamSince is the first release that, holding a consumer offline
// as unsupported, stops the consumer's stream on that server too, "to
// protect the whole stream" (2.11.9 jetstream_cluster.go:4535-4553;
// 2.12.15 :5738-5762; 2.15.3 :7642-7660; absent in 2.11.8).
var stopsStreamSince = version.Must("2.11.9")

// stopsItsStream is what a finding that peer s holds consumer a offline
// adds: s stops the consumer's stream too, from stopsStreamSince on
// (TestSourcingConsumerStopsItsStream); "" for a stream or an older peer.
func stopsItsStream(a *snapshot.Asset, s snapshot.Server) string {
	if a.Kind != releases.KindConsumer || !s.Parsed.AtLeast(stopsStreamSince) {
		return ""
	}
	return "; and, as every server from 2.11.9 on does for a consumer it holds offline, it stops the consumer's stream " +
		snapshot.AccountLabel(a.Account, a.AccountName) + " > " + a.Stream + " with it: " + s.Name + " runs no copy of the stream either"
}

// levelSpeaks reports whether a peer of API level level falls short of an
// asset's required level: an ASSET_API_LEVEL_UNSUPPORTED finding.
func levelSpeaks(required, level int) bool {
	// A level nothing can tell (a what-if's release the table does not
	// list) says nothing here: unknownLevelFindings says what cannot be
	// told. A 2.10 server knows no API levels and no level metadata: an
	// unreadable level means nothing to it.
	return level != releases.LevelUnknown && required > level && (required != snapshot.LevelUnreadable || level > 0)
}

// worstFeature is the worst first-axis outcome of a server of version v
// for the features, with its feature; Supported when there is none.
func worstFeature(features releases.FeatureSet, v version.Version) (releases.Outcome, releases.Feature) {
	worst, which := releases.Supported, releases.Feature{}
	for _, ft := range features.Features() {
		if h := ft.HandlingBy(v); h.Asset.Rank() > worst.Rank() {
			worst, which = h.Asset, ft
		}
	}
	return worst, which
}
