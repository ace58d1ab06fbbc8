package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the code prints now")

// TestOutputsAreGolden pins what check and report print for the shared
// fixture (internal/fixture) in every format; `go test -run
// TestOutputsAreGolden -update` rewrites the files after a deliberate change.
func TestOutputsAreGolden(t *testing.T) {
	r := fixture.Report()
	for _, tt := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"check.txt", func(w io.Writer) error { return writeCheckText(w, r) }},
		{"check.json", func(w io.Writer) error { return writeJSON(w, checkJSON(r)) }},
		{"check.nagios", func(w io.Writer) error { return writeNagios(w, r) }},
		{"report.txt", func(w io.Writer) error { return writeReportText(w, reportOf(r), r) }},
		{"report.json", func(w io.Writer) error { return writeJSON(w, reportOf(r)) }},
	} {
		t.Run(tt.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs from %s:\n%s", tt.file, golden, b.String())
			}
			if filepath.Ext(tt.file) == ".json" && !json.Valid(b.Bytes()) {
				t.Errorf("%s is not JSON", tt.file)
			}
		})
	}
}
