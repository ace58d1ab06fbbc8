package version

import (
	"encoding/json"
	"strings"
	"testing"
)

// parsed is ParseVersion's Version of s: the zero Version when s is none.
func parsedVersion(s string) Version {
	v, _ := ParseVersion(s)
	return v
}

func TestParseVersionPrints(t *testing.T) {
	for in, want := range map[string]string{
		"2.14.0": "2.14.0", "v2.14.0": "2.14.0", "2.14": "2.14.0", "v2.14": "2.14.0", " 2.14.0 ": "2.14.0",
		"2.14.3-fips": "2.14.3", "2.14-fips": "2.14.0", "2.14.0-RC.2": "2.14.0-RC.2", "2.14.0-RC.2-fips": "2.14.0-RC.2",
		"2.15.0-preview.1": "2.15.0-preview.1", "2.14.0+build": "2.14.0", "2.14.0-fips-fips": "2.14.0",
	} {
		v, err := ParseVersion(in)
		if err != nil || v.String() != want || v.IsZero() {
			t.Errorf("ParseVersion(%q) = %q, %v; want %s", in, v, err, want)
		}
	}
	for _, in := range []string{"", "  ", "two", "latest", "2.14.0.1", "2.x", "2.14.x", "vv2.14.0", "-fips", "v", "custom-build"} {
		if v, err := ParseVersion(in); err == nil || !v.IsZero() {
			t.Errorf("ParseVersion(%q) = %q, %v; want the zero Version and an error", in, v, err)
		}
	}
	if s := (Version{}).String(); s != "" {
		t.Errorf("the zero Version prints %q", s)
	}
}

func TestVersionCompares(t *testing.T) {
	// Oldest first; the zero Version is older than any.
	order := []Version{{}, parsedVersion("2.10.27"), parsedVersion("2.12.15"), parsedVersion("2.14.0-RC.2"), parsedVersion("2.14.0"), parsedVersion("2.14.10"), parsedVersion("2.15.0-preview.1"), parsedVersion("3.0.0")}
	for i, a := range order {
		for j, b := range order {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%q.Compare(%q) = %d, want %d", a, b, got, want)
			}
			if got := a.Before(b); got != (i < j) {
				t.Errorf("%q.Before(%q) = %v", a, b, got)
			}
			if got := a.AtLeast(b); got != (i >= j && i > 0) {
				t.Errorf("%q.AtLeast(%q) = %v", a, b, got)
			}
		}
	}
	if parsedVersion("2.14.0-fips") != parsedVersion("v2.14.0") {
		t.Error("a FIPS build is not its release")
	}
	if !parsedVersion("2.14.0-RC.2").IsPrerelease() || parsedVersion("2.14.0").IsPrerelease() || parsedVersion("2.14.0-fips").IsPrerelease() {
		t.Error("IsPrerelease")
	}
}

func TestCompareToFloor(t *testing.T) {
	floor, err := ParseFloor("2.14")
	if err != nil {
		t.Fatal(err)
	}
	if floor != DefaultFloor || DefaultFloor.String() != "2.14.0" {
		t.Fatalf("floor 2.14 is %q, the default %q", floor, DefaultFloor)
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
		if got := CompareToFloor(parsedVersion(tt.version), floor); got != tt.want {
			t.Errorf("CompareToFloor(%q, %q) = %s, want %s", tt.version, floor, got, tt.want)
		}
	}
}

func TestParseFloor(t *testing.T) {
	for in, want := range map[string]string{
		"2.14": "2.14.0", "2.14.0": "2.14.0", "v2.14.0": "2.14.0", "v2.14": "2.14.0", " 2.14.0 ": "2.14.0",
		"2.15.3": "2.15.3", "2.15.0-RC.1": "2.15.0-RC.1", "v2.14.0-preview.2": "2.14.0-preview.2",
		"2.14.0-fips": "2.14.0", "0.1": "0.1.0",
	} {
		if got, err := ParseFloor(in); err != nil || got.String() != want {
			t.Errorf("ParseFloor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// semver's shorthand reads "14" as v14.0.0 and "2" as v2.0.0: a floor
	// of one number would turn the gate CRITICAL, or lower it to 2.0.0.
	for _, in := range []string{"14", "2", "v14", "v2", "", " ", "latest", "2.14.x", "2.14.0.1", "2.14-RC.1",
		"02.14", "2.014", "2.14.00", "2.14.0+build", "vv2.14", "2.", ".14", "2..14", "2.14.", "2.14.0-", "V2.14"} {
		got, err := ParseFloor(in)
		if err == nil || !got.IsZero() {
			t.Errorf("ParseFloor(%q) = %q, %v; want an error", in, got, err)
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
	for in, want := range map[string]string{"2.12.15": "2.12.15", "v2.14.0": "2.14.0", "2.14": "2.14.0", "2.15.0-RC.1": "2.15.0-RC.1"} {
		if got, err := ParseRelease(in); err != nil || got.String() != want {
			t.Errorf("ParseRelease(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"14", "v2", "", "banana", "2.14.0.1"} {
		if got, err := ParseRelease(in); err == nil || !strings.Contains(err.Error(), "is not a version: want MAJOR.MINOR.PATCH") {
			t.Errorf("ParseRelease(%q) = %q, %v; want the release message", in, got, err)
		}
	}
}

// Documents write a Version as operators do, and a policy file's floor
// reads into one with the floor's message.
func TestVersionMarshals(t *testing.T) {
	doc := struct {
		Floor Version `json:"floor"`
		To    Version `json:"to"`
		None  Version `json:"none"`
	}{Floor: DefaultFloor, To: parsedVersion("2.15.0-RC.1")}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"floor":"2.14.0","to":"2.15.0-RC.1","none":""}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	back := doc
	back.Floor, back.To, back.None = Version{}, Version{}, parsedVersion("2.12.0")
	if err := json.Unmarshal(b, &back); err != nil || back != doc {
		t.Fatalf("read back %+v, %v; want %+v", back, err, doc)
	}
	var policy struct{ Floor Version }
	for in, want := range map[string]string{`{"floor":"2.14"}`: "2.14.0", `{"floor":"v2.15.3"}`: "2.15.3"} {
		if err := json.Unmarshal([]byte(in), &policy); err != nil || policy.Floor.String() != want {
			t.Errorf("%s: %q, %v; want %s", in, policy.Floor, err, want)
		}
	}
	err = json.Unmarshal([]byte(`{"floor":"14"}`), &policy)
	if err == nil || !strings.Contains(err.Error(), `"14" is not a floor: want MAJOR.MINOR`) {
		t.Errorf("floor 14: %v; want the floor message", err)
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"2.14.0", "v2.14.0", "2.14", "2.14.0-fips", "2.14.0-RC.2", "2.15.0-preview.1", "", "-fips", "v", "2.14.0+build", "2.14.0-x-fips-fips"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			if !v.IsZero() || CompareToFloor(v, DefaultFloor) != VerdictUnparseable {
				t.Fatalf("%q does not parse but is judged", s)
			}
			return
		}
		if v.IsZero() {
			t.Fatalf("%q parses as no version", s)
		}
		// A version parses as what it prints, and reads back from a
		// document as itself.
		again, err := ParseVersion(v.String())
		if err != nil || again != v {
			t.Fatalf("ParseVersion(%q) = %q, but ParseVersion(%q) = %q, %v", s, v, v.String(), again, err)
		}
		b, _ := v.MarshalText()
		var read Version
		if err := read.UnmarshalText(b); err != nil || read != v {
			t.Fatalf("%q written as %s reads back as %q, %v", s, b, read, err)
		}
		if CompareToFloor(v, DefaultFloor) != CompareToFloor(again, DefaultFloor) {
			t.Fatalf("%q and its printed form %q are judged differently", s, v)
		}
	})
}
