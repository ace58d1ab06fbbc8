package releases

import (
	"fmt"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// LevelUnknown is the API level of a version LevelOf does not know. It is
// never a guess: a what-if makes every finding that depends on it UNKNOWN.
const LevelUnknown = -1

// levelRange is a run of nats-server releases that report the same
// JetStream API level: every release from First (zero: any before Last) to
// Last, both included.
type levelRange struct {
	First, Last version.Version
	Level       int
	// Checked are the releases whose source (at their tags) the level was
	// read from.
	Checked []version.Version
}

// levelRow is a levelRange as the table writes it.
func levelRow(first, last string, level int, checked ...string) levelRange {
	r := levelRange{Last: version.Must(last), Level: level}
	if first != "" {
		r.First = version.Must(first)
	}
	for _, c := range checked {
		r.Checked = append(r.Checked, version.Must(c))
	}
	return r
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
	levelRow("", "2.10.29", 0, "2.10.27", "2.10.29"),
	levelRow("2.11.0", "2.11.17", 1, "2.11.0", "2.11.12", "2.11.17"),
	levelRow("2.12.0", "2.12.4", 2, "2.12.0", "2.12.1", "2.12.4"),
	levelRow("2.12.5", "2.12.15", 3, "2.12.5", "2.12.7", "2.12.15"),
	levelRow("2.14.0", "2.14.10", 4, "2.14.0", "2.14.10"),
	levelRow("2.15.0", "2.15.3", 5, "2.15.0", "2.15.2", "2.15.3"),
}

func (r levelRange) source() string {
	if r.Level == 0 {
		return "no JetStream API levels before 2.11.0 (nats-server source at " + joinVersions(r.Checked) + ")"
	}
	return fmt.Sprintf("JSApiLevel = %d in server/jetstream_versioning.go at %s", r.Level, joinVersions(r.Checked))
}

func joinVersions(vs []version.Version) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	return strings.Join(out, ", ")
}

// LevelOf returns the JetStream API level a released nats-server version
// reports, and the source of that level. A version the table does not list
// (a release after the last one known, a pre-release, anything that is not
// the zero Version) is LevelUnknown, with the reason. A FIPS build is its
// release.
func LevelOf(v version.Version) (int, string) {
	if v.IsZero() {
		return LevelUnknown, "no version"
	}
	if v.IsPrerelease() {
		return LevelUnknown, fmt.Sprintf("%s is a pre-release: the level table lists releases only", v)
	}
	for _, r := range levelRanges {
		if !v.Before(r.First) && v.Compare(r.Last) <= 0 {
			return r.Level, r.source()
		}
	}
	return LevelUnknown, fmt.Sprintf("the level table does not list %s", v)
}
