package version

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// Version is a nats-server version, parsed once where it enters the audit:
// a flag or a policy file (ParseFloor, ParseRelease), a server's STATSZ
// (ParseVersion, kept beside the text the server reported), or the tables
// of this package. It prints itself as servers and operators write it
// ("2.14.0") and compares by semantic-version order. The zero Version is no
// version: what an unparseable report leaves.
type Version struct {
	// canonical is the semantic-version form golang.org/x/mod/semver
	// compares ("v2.14.0", "v2.15.0-RC.1"); empty for the zero Version.
	canonical string
}

// DefaultFloor is the oldest nats-server release the audit accepts by default:
// 2.14.0 is the first release that answers $JS.API.CONSUMER.RESET.
var DefaultFloor = Must("2.14.0")

// fipsSuffix marks a FIPS build of a release. It is a build flavour, not a
// pre-release: 2.14.0-fips is 2.14.0.
const fipsSuffix = "-fips"

// errVersionEmpty is returned by ParseVersion for an empty version string.
var errVersionEmpty = errors.New("empty version")

// ParseVersion reads a version as nats-server reports it ("2.14.0", "v2.14",
// "2.14.3-fips", "2.14.0-RC.2"): an optional leading v, and a -fips suffix
// that names a build flavour of its release. It returns the zero Version
// with the error for anything else.
func ParseVersion(s string) (Version, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return Version{}, errVersionEmpty
	}
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		// "2.14-fips" is 2.14.0 as "2.14" is.
		t, ok := strings.CutSuffix(v, fipsSuffix)
		if !ok || !semver.IsValid(t) {
			return Version{}, fmt.Errorf("%q is not a semantic version", s)
		}
		v = t
	}
	return Version{withoutFIPS(semver.Canonical(v))}, nil
}

// withoutFIPS removes the -fips suffixes of a canonical version while what
// is left is a version: each is a flavour of the build, and a version
// parses as the String of what it parsed as.
func withoutFIPS(c string) string {
	for {
		t, ok := strings.CutSuffix(c, fipsSuffix)
		if !ok || !semver.IsValid(t) {
			return c
		}
		c = t
	}
}

// mustVersion is ParseVersion for the tables of this package, which hold
// releases written as they are published: a typo fails at start-up.
func Must(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic("auditor: a version table holds " + err.Error())
	}
	return v
}

// floorForm is what a floor may look like: MAJOR.MINOR or
// MAJOR.MINOR.PATCH, an optional leading v, and on three parts an optional
// pre-release. semver's own shorthand ("v14" is v14.0.0) would read a floor
// of one number as a major release nobody runs.
var floorForm = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?)?$`)

// ParseFloor reads a version floor as an operator writes it ("2.14",
// "2.14.0", "v2.14.0", "2.15.0-RC.1"). Everything else, a single number
// such as "14" included, is refused with the one message every place that
// reads a floor (--floor, --policy.file) prints.
func ParseFloor(s string) (Version, error) {
	if v, ok := parseWritten(s); ok {
		return v, nil
	}
	return Version{}, fmt.Errorf("%q is not a floor: want MAJOR.MINOR or MAJOR.MINOR.PATCH, such as 2.14, 2.14.0 or v2.14.0 (a pre-release such as 2.15.0-RC.1 is allowed)", s)
}

// ParseRelease reads a version an operator names for servers to run
// (plan --to, --assume) in the form of a floor: "14" is no release a
// server runs, although semver reads it as v14.0.0.
func ParseRelease(s string) (Version, error) {
	if v, ok := parseWritten(s); ok {
		return v, nil
	}
	return Version{}, fmt.Errorf("%q is not a version: want MAJOR.MINOR.PATCH such as 2.14.0 or v2.12.15 (MAJOR.MINOR is .0; a pre-release such as 2.15.0-RC.1 is allowed)", s)
}

// parseWritten reads a version in floorForm.
func parseWritten(s string) (Version, bool) {
	w := strings.TrimSpace(s)
	if !floorForm.MatchString(w) {
		return Version{}, false
	}
	v, err := ParseVersion(w)
	return v, err == nil
}

// String writes the version as servers and operators write it ("2.14.0",
// "2.15.0-RC.1"); the zero Version is "".
func (v Version) String() string { return strings.TrimPrefix(v.canonical, "v") }

// IsZero reports whether v is no version.
func (v Version) IsZero() bool { return v.canonical == "" }

// Compare returns -1, 0 or +1 as v is older than, the same as, or newer
// than o. A pre-release is older than its release; the zero Version is
// older than every version.
func (v Version) Compare(o Version) int { return semver.Compare(v.canonical, o.canonical) }

// Before reports whether v is older than o.
func (v Version) Before(o Version) bool { return v.Compare(o) < 0 }

// AtLeast reports whether v is a version and o or newer.
func (v Version) AtLeast(o Version) bool { return !v.IsZero() && v.Compare(o) >= 0 }

// IsPrerelease reports whether v is a pre-release ("2.14.0-RC.2").
func (v Version) IsPrerelease() bool { return semver.Prerelease(v.canonical) != "" }

// MarshalText writes String: documents show "2.14.0".
func (v Version) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText reads what MarshalText writes, and any floor an operator
// may write (ParseFloor, with its message), so that a policy file's floor
// can be read into a Version. Empty text is the zero Version.
func (v *Version) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*v = Version{}
		return nil
	}
	p, err := ParseFloor(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Verdict says where a server version stands against the floor.
type Verdict string

// The verdicts of CompareToFloor.
const (
	VerdictBelow       Verdict = "below"
	VerdictAtFloor     Verdict = "at_floor"
	VerdictAbove       Verdict = "above"
	VerdictUnparseable Verdict = "unparseable"
)

// CompareToFloor judges a server's version against a floor; the zero
// Version, what a report that is no version parses as, is unparseable.
func CompareToFloor(v, floor Version) Verdict {
	if v.IsZero() {
		return VerdictUnparseable
	}
	switch c := v.Compare(floor); {
	case c < 0:
		return VerdictBelow
	case c == 0:
		return VerdictAtFloor
	default:
		return VerdictAbove
	}
}

// line is the first release of v's minor line: 2.15.0 for 2.15.3 and for
// 2.15.0-RC.1.
func (v Version) Line() Version {
	if v.IsZero() {
		return v
	}
	return Version{semver.MajorMinor(v.canonical) + ".0"}
}

// patch is v's patch number, -1 for no version.
func (v Version) Patch() int {
	if v.IsZero() {
		return -1
	}
	core := strings.TrimPrefix(v.canonical, semver.MajorMinor(v.canonical)+".")
	n, err := strconv.Atoi(strings.TrimSuffix(core, semver.Prerelease(v.canonical)))
	if err != nil {
		return -1
	}
	return n
}

// minor writes v's minor line ("2.15").
func (v Version) Minor() string { return strings.TrimPrefix(semver.MajorMinor(v.canonical), "v") }
