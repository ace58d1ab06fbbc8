package render

import (
	"maps"
	"slices"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// How a server's feature flags read in text: report's server table and the
// what-if block both show them, so neither document owns them.

// flagsShown are the flags server s has on, and those its config turns
// off, each marked where its config sets it rather than its release's
// default.
func flagsShown(s snapshot.Server) []string {
	configured := snapshot.ConfiguredFlags(s)
	var shown []string
	for _, name := range slices.Sorted(maps.Keys(s.FeatureFlags)) {
		_, set := configured[name]
		switch {
		case s.FeatureFlags[name] && set:
			shown = append(shown, name+" (its config)")
		case s.FeatureFlags[name]:
			shown = append(shown, name)
		case set:
			shown = append(shown, name+" off (its config)")
		}
	}
	return shown
}
