package exporter

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// floorMessage is what version.ParseFloor says of a floor that is not one.
var floorMessage = func() string {
	_, err := version.ParseFloor("14")
	return strings.TrimPrefix(err.Error(), `"14" `)
}()

func TestReadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content string
		floor         string // want this floor, or an error containing every want
		want          []string
	}{
		{name: "quoted", content: "floor: \"2.14.0\"\n", floor: "v2.14.0"},
		{name: "two parts", content: "floor: '2.12'\n", floor: "v2.12.0"},
		{name: "leading v", content: "floor: v2.15.3\n", floor: "v2.15.3"},
		// Three parts are no YAML number: a string without quotes.
		{name: "unquoted three parts", content: "floor: 2.14.0\n", floor: "v2.14.0"},
		{name: "json", content: `{"floor": "2.14.0"}`, floor: "v2.14.0"},
		{name: "number", content: "floor: 2.10\n", want: []string{"floor must be a quoted string", "not 2.1 "}},
		{name: "json number", content: `{"floor": 2.14}`, want: []string{"floor must be a quoted string", "not 2.14 "}},
		{name: "integer", content: "floor: 2\n", want: []string{"floor must be a quoted string"}},
		{name: "empty", content: "", want: []string{"no floor"}},
		{name: "other key", content: "other: 1\n", want: []string{`unknown field "other"`}},
		{name: "misspelt", content: "flor: \"2.14.0\"\n", want: []string{`unknown field "flor"`}},
		{name: "not a version", content: "floor: banana\n", want: []string{"floor:", "banana", floorMessage}},
		// semver's shorthand would read these as 14.0.0 and 2.0.0.
		{name: "one number", content: "floor: \"14\"\n", want: []string{`floor: "14" ` + floorMessage}},
		{name: "one number with v", content: "floor: v14\n", want: []string{`floor: "v14" ` + floorMessage}},
		{name: "pre-release", content: "floor: 2.15.0-RC.1\n", floor: "v2.15.0-RC.1"},
		{name: "list", content: "- floor: \"2.14.0\"\n", want: []string{"want a mapping"}},
		{name: "not yaml", content: "floor: [\n", want: []string{"not YAML or JSON"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("policy-%d.yaml", i))
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			pol, err := readPolicyFile(path)
			if tc.want == nil {
				if err != nil || "v"+pol.Floor.String() != tc.floor {
					t.Fatalf("%q: floor %q, %v; want %q", tc.content, pol.Floor, err, tc.floor)
				}
				return
			}
			if err == nil {
				t.Fatalf("%q: floor %q, want an error", tc.content, pol.Floor)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: error %q does not say %q", tc.content, err, w)
				}
			}
		})
	}
	missing := filepath.Join(dir, "absent.yaml")
	if _, err := readPolicyFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v, want an error naming %s", err, missing)
	}
}
