package auditor

import (
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// LevelUnknown is the API level of a version LevelOf does not know. It is
// never a guess: a what-if makes every finding that depends on it UNKNOWN.
const LevelUnknown = -1

// levelRange is a run of nats-server releases that report the same
// JetStream API level: every release from First (empty: any before Last) to
// Last, both included.
type levelRange struct {
	First, Last string
	Level       int
	// Checked are the tags whose source the level was read from.
	Checked []string
}

// levelRanges map released nats-server versions to the JetStream API level
// they report: JSApiLevel in server/jetstream_versioning.go, read at the
// Checked tags (levels_test.go reads it again), and reported as
// data.api.level in JSZ and jetstream.stats.api.level in VARZ and STATSZ.
// The level does not follow the minor version (2.12.5 raised it within
// 2.12), so the table lists patch ranges, and a release after the last one
// listed is not known until the table says so. Releases before 2.11.0 have
// no jetstream_versioning.go and no JetStreamAPIStats.Level
// (server/jetstream.go): they report none, which the audit reads as 0.
var levelRanges = []levelRange{
	{"", "v2.10.29", 0, []string{"v2.10.27", "v2.10.29"}},
	{"v2.11.0", "v2.11.17", 1, []string{"v2.11.0", "v2.11.12", "v2.11.17"}},
	{"v2.12.0", "v2.12.4", 2, []string{"v2.12.0", "v2.12.1", "v2.12.4"}},
	{"v2.12.5", "v2.12.15", 3, []string{"v2.12.5", "v2.12.7", "v2.12.15"}},
	{"v2.14.0", "v2.14.10", 4, []string{"v2.14.0", "v2.14.10"}},
	{"v2.15.0", "v2.15.3", 5, []string{"v2.15.0", "v2.15.2", "v2.15.3"}},
}

func (r levelRange) source() string {
	if r.Level == 0 {
		return "no JetStream API levels before 2.11.0 (nats-server source at " + joinDisplay(r.Checked) + ")"
	}
	return fmt.Sprintf("JSApiLevel = %d in server/jetstream_versioning.go at %s", r.Level, joinDisplay(r.Checked))
}

func joinDisplay(vs []string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = Display(v)
	}
	return strings.Join(out, ", ")
}

// LevelOf returns the JetStream API level a released nats-server version
// reports, and the source of that level. A version the table does not list
// (a release after the last one known, a pre-release, anything that is not
// a version) is LevelUnknown, with the reason. A FIPS build is its release.
func LevelOf(version string) (int, string) {
	v, err := ParseVersion(version)
	if err != nil {
		return LevelUnknown, err.Error()
	}
	if semver.Prerelease(v) != "" {
		return LevelUnknown, fmt.Sprintf("%s is a pre-release: the level table lists releases only", Display(v))
	}
	for _, r := range levelRanges {
		if (r.First == "" || semver.Compare(v, r.First) >= 0) && semver.Compare(v, r.Last) <= 0 {
			return r.Level, r.source()
		}
	}
	return LevelUnknown, fmt.Sprintf("the level table does not list %s", Display(v))
}

// LevelFor is LevelOf, except that a version some server of the snapshot
// already runs takes the level those servers report: what servers say wins
// over the table. When servers of that version report different levels (they
// cannot, unless a build was changed), the table decides.
func LevelFor(snap *Snapshot, version string) (int, string) {
	v, err := ParseVersion(version)
	if err != nil {
		return LevelUnknown, err.Error()
	}
	reported, by, agree := LevelUnknown, "", true
	for _, s := range snap.Servers {
		sv, err := ParseVersion(s.Version)
		if err != nil || sv != v || !s.JetStream {
			continue
		}
		if reported == LevelUnknown {
			reported, by = s.APILevel, s.Name
		} else if reported != s.APILevel {
			agree = false
		}
	}
	if reported != LevelUnknown && agree {
		return reported, fmt.Sprintf("reported by %s, which runs %s", by, Display(v))
	}
	return LevelOf(version)
}
