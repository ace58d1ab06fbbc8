package auditor

import (
	"strings"
	"testing"
)

func TestCompareToFloor(t *testing.T) {
	floor, err := ParseVersion("2.14")
	if err != nil {
		t.Fatal(err)
	}
	if floor != DefaultFloor {
		t.Fatalf("floor 2.14 normalised to %q, want %q", floor, DefaultFloor)
	}
	tests := []struct {
		version string
		want    Verdict
	}{
		{"2.14.0", VerdictAtFloor},
		{"2.14.0-fips", VerdictAtFloor},
		{"v2.14.0", VerdictAtFloor},
		{"2.14.10", VerdictAbove},
		{"v2.14.1", VerdictAbove},
		{"2.14.3-fips", VerdictAbove},
		{"2.15.0-preview.1", VerdictAbove},
		{"2.15.3", VerdictAbove},
		{"2.14.0-RC.2", VerdictBelow},
		{"2.14.0-RC.2-fips", VerdictBelow},
		{"2.12.15", VerdictBelow},
		{"2.11.9", VerdictBelow},
		{"", VerdictUnparseable},
		{"  ", VerdictUnparseable},
		{"latest", VerdictUnparseable},
		{"2.14.x", VerdictUnparseable},
		{"vv2.14.0", VerdictUnparseable},
		{"-fips", VerdictUnparseable},
	}
	for _, tt := range tests {
		if got := CompareToFloor(tt.version, floor); got != tt.want {
			t.Errorf("CompareToFloor(%q, %q) = %s, want %s", tt.version, floor, got, tt.want)
		}
	}
}

func TestParseVersionFloorForms(t *testing.T) {
	for _, in := range []string{"2.14", "2.14.0", "v2.14.0", "v2.14"} {
		got, err := ParseVersion(in)
		if err != nil || got != "v2.14.0" {
			t.Errorf("ParseVersion(%q) = %q, %v; want v2.14.0", in, got, err)
		}
	}
	for _, in := range []string{"", "two", "2.14.0.1", "2.x"} {
		if got, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseFloor(t *testing.T) {
	for in, want := range map[string]string{
		"2.14": "v2.14.0", "2.14.0": "v2.14.0", "v2.14.0": "v2.14.0", "v2.14": "v2.14.0", " 2.14.0 ": "v2.14.0",
		"2.15.3": "v2.15.3", "2.15.0-RC.1": "v2.15.0-RC.1", "v2.14.0-preview.2": "v2.14.0-preview.2",
		"2.14.0-fips": "v2.14.0", "0.1": "v0.1.0",
	} {
		if got, err := ParseFloor(in); err != nil || got != want {
			t.Errorf("ParseFloor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// semver's shorthand reads "14" as v14.0.0 and "2" as v2.0.0: a floor
	// of one number would turn the gate CRITICAL, or lower it to 2.0.0.
	for _, in := range []string{"14", "2", "v14", "v2", "", " ", "latest", "2.14.x", "2.14.0.1", "2.14-RC.1",
		"02.14", "2.014", "2.14.00", "2.14.0+build", "vv2.14", "2.", ".14", "2..14", "2.14.", "2.14.0-", "V2.14"} {
		got, err := ParseFloor(in)
		if err == nil {
			t.Errorf("ParseFloor(%q) = %q, want an error", in, got)
			continue
		}
		want := `is not a floor: want MAJOR.MINOR or MAJOR.MINOR.PATCH, such as 2.14, 2.14.0 or v2.14.0`
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFloor(%q): %v; want the one floor message", in, err)
		}
	}
}

// plan --to and --assume name versions servers are to run, in the floor's
// form: one number is no release.
func TestParseRelease(t *testing.T) {
	for in, want := range map[string]string{"2.12.15": "v2.12.15", "v2.14.0": "v2.14.0", "2.14": "v2.14.0", "2.15.0-RC.1": "v2.15.0-RC.1"} {
		if got, err := ParseRelease(in); err != nil || got != want {
			t.Errorf("ParseRelease(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"14", "v2", "", "banana", "2.14.0.1"} {
		if got, err := ParseRelease(in); err == nil || !strings.Contains(err.Error(), "is not a version: want MAJOR.MINOR.PATCH") {
			t.Errorf("ParseRelease(%q) = %q, %v; want the release message", in, got, err)
		}
	}
	if _, err := ParseAssumption("n2=14"); err == nil {
		t.Error(`--assume n2=14 was taken as a version`)
	}
}
