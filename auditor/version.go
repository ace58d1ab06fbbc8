package auditor

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/mod/semver"
)

// DefaultFloor is the oldest nats-server release the audit accepts by default:
// 2.14.0 is the first release that answers $JS.API.CONSUMER.RESET.
const DefaultFloor = "v2.14.0"

// fipsSuffix marks a FIPS build of a release. It is a build flavour, not a
// pre-release: 2.14.0-fips is 2.14.0.
const fipsSuffix = "-fips"

// errVersionEmpty is returned by ParseVersion for an empty version string.
var errVersionEmpty = errors.New("empty version")

// ParseVersion normalises a nats-server version ("2.14.0", "v2.14",
// "2.14.3-fips", "2.14.0-RC.2") into canonical semantic-version form
// ("v2.14.0", "v2.14.3", "v2.14.0-RC.2") that golang.org/x/mod/semver compares.
func ParseVersion(s string) (string, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return "", errVersionEmpty
	}
	v = strings.TrimSuffix(v, fipsSuffix)
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !semver.IsValid(v) {
		return "", fmt.Errorf("%q is not a semantic version", s)
	}
	return semver.Canonical(v), nil
}

// floorForm is what a floor may look like: MAJOR.MINOR or
// MAJOR.MINOR.PATCH, an optional leading v, and on three parts an optional
// pre-release. semver's own shorthand ("v14" is v14.0.0) would read a floor
// of one number as a major release nobody runs.
var floorForm = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?)?$`)

// ParseFloor reads a version floor as an operator writes it ("2.14",
// "2.14.0", "v2.14.0", "2.15.0-RC.1") into ParseVersion's canonical form.
// Everything else, a single number such as "14" included, is refused with
// the one message every place that reads a floor (--floor, --policy.file)
// prints.
func ParseFloor(s string) (string, error) {
	if c, ok := parseWritten(s); ok {
		return c, nil
	}
	return "", fmt.Errorf("%q is not a floor: want MAJOR.MINOR or MAJOR.MINOR.PATCH, such as 2.14, 2.14.0 or v2.14.0 (a pre-release such as 2.15.0-RC.1 is allowed)", s)
}

// ParseRelease reads a version an operator names for servers to run
// (plan --to, --assume) in the form of a floor, into ParseVersion's
// canonical form: "14" is no release a server runs, although semver reads
// it as v14.0.0.
func ParseRelease(s string) (string, error) {
	if c, ok := parseWritten(s); ok {
		return c, nil
	}
	return "", fmt.Errorf("%q is not a version: want MAJOR.MINOR.PATCH such as 2.14.0 or v2.12.15 (MAJOR.MINOR is .0; a pre-release such as 2.15.0-RC.1 is allowed)", s)
}

// parseWritten reads a version in floorForm.
func parseWritten(s string) (string, bool) {
	v := strings.TrimSpace(s)
	if !floorForm.MatchString(v) {
		return "", false
	}
	c, err := ParseVersion(v)
	return c, err == nil
}

// Display writes a version normalised by ParseVersion as servers and
// operators write it: "v2.14.0" is "2.14.0".
func Display(version string) string {
	return strings.TrimPrefix(version, "v")
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

// CompareToFloor judges a server's version against a floor already
// normalised by ParseVersion.
func CompareToFloor(version, floor string) Verdict {
	v, err := ParseVersion(version)
	if err != nil {
		return VerdictUnparseable
	}
	switch c := semver.Compare(v, floor); {
	case c < 0:
		return VerdictBelow
	case c == 0:
		return VerdictAtFloor
	default:
		return VerdictAbove
	}
}
