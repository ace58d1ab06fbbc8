package auditor

import "testing"

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
