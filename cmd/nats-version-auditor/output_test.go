package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the code prints now")

// TestOutputsAreGolden pins what check, report and plan print for the
// shared fixture (internal/fixture) in every format, as it is and under
// --assume n2=2.12.15; `go test -run
// TestOutputsAreGolden -update` rewrites the files after a deliberate change.
func TestOutputsAreGolden(t *testing.T) {
	r := fixture.Report()
	pol := auditor.Policy{Floor: auditor.DefaultFloor}
	// --assume n2=2.12.15 on the fixture: a downgrade.
	what, err := auditor.Assume(r.Snapshot, pol, []auditor.Assumption{{Target: "n2", Version: "v2.12.15"}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := auditor.MakePlan(r.Snapshot, pol, "2.14.0", auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	down, err := auditor.MakePlan(r.Snapshot, pol, "2.12.15", auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"check.txt", func(w io.Writer) error { return writeCheckText(w, r, nil) }},
		{"check.json", func(w io.Writer) error { return writeCheckJSON(w, checkJSON(r, nil)) }},
		{"check.nagios", func(w io.Writer) error { return writeNagios(w, r, nil) }},
		{"report.txt", func(w io.Writer) error { return writeReportText(w, reportOf(r, nil), r, nil) }},
		{"report.json", func(w io.Writer) error { return writeReportJSON(w, reportOf(r, nil)) }},
		{"check-assume.txt", func(w io.Writer) error { return writeCheckText(w, what.After, what) }},
		{"check-assume.json", func(w io.Writer) error { return writeCheckJSON(w, checkJSON(what.After, what)) }},
		{"check-assume.nagios", func(w io.Writer) error { return writeNagios(w, what.After, what) }},
		{"report-assume.txt", func(w io.Writer) error { return writeReportText(w, reportOf(what.After, what), what.After, what) }},
		{"report-assume.json", func(w io.Writer) error { return writeReportJSON(w, reportOf(what.After, what)) }},
		{"plan.txt", func(w io.Writer) error { return writePlanText(w, up) }},
		{"plan.json", func(w io.Writer) error { return writeJSON(w, planOutput{Plan: up, Audit: newAuditInfo(r)}) }},
		{"plan-downgrade.txt", func(w io.Writer) error { return writePlanText(w, down) }},
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
