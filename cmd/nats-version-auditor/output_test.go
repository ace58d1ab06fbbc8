package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the code prints now")

// operatorKey is the public key of account APP in the operator-mode goldens.
const operatorKey = "ACXD4KXKPV6KCL7X5IK2SQAS4XAA5ACP77V4TC5SZUKVU47U5LSM7DWJ"

// TestOutputsAreGolden pins what check, report and plan print for the
// shared fixture (internal/fixture) in every format, as it is, under
// --assume n2=2.12.15, as an operator-mode system reports it, and for an
// audit that could not run; `go test -run
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
	// The fixture as an operator-mode system reports it: account APP is a
	// public key with its JWT's name beside it (JSZ), and only the key on
	// the leafnode link (LEAFZ).
	opSnap := fixture.Snapshot()
	for _, assets := range [][]auditor.Asset{opSnap.Streams, opSnap.Consumers} {
		for i := range assets {
			assets[i].Account, assets[i].AccountName = operatorKey, assets[i].Account
		}
	}
	for i := range opSnap.Leafnodes {
		opSnap.Leafnodes[i].Account = operatorKey
	}
	op := auditor.Evaluate(opSnap, pol)
	opPlan, err := auditor.MakePlan(opSnap, pol, "2.14.0", auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// An audit that could not run: every list of its documents is one.
	unreachable := errors.New("cannot reach NATS at nats://127.0.0.1:1: nats: no servers available for connection")
	failed := failedReport(unreachable, pol, r.Snapshot.Started, time.Millisecond)
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
		{"check-operator.txt", func(w io.Writer) error { return writeCheckText(w, op, nil) }},
		{"report-operator.txt", func(w io.Writer) error { return writeReportText(w, reportOf(op, nil), op, nil) }},
		{"report-operator.json", func(w io.Writer) error { return writeJSON(w, reportOf(op, nil)) }},
		{"plan-operator.txt", func(w io.Writer) error { return writePlanText(w, opPlan) }},
		{"check-failed.json", func(w io.Writer) error { return writeJSON(w, failedJSON(unreachable, failed)) }},
		{"report-failed.json", func(w io.Writer) error { return writeJSON(w, failedReportJSON(unreachable, failed)) }},
		{"plan-failed.json", func(w io.Writer) error {
			return writeJSON(w, failedPlanJSON(unreachable, "2.14.0", failed.Floor, newAuditInfo(failed)))
		}},
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
			// In operator mode a key is never printed without the name
			// the audit knows for it.
			if strings.Contains(tt.file, "-operator.txt") {
				if n, named := strings.Count(b.String(), operatorKey), strings.Count(b.String(), "APP ("+operatorKey+")"); n == 0 || n != named {
					t.Errorf("%s: the account key %d times, %d of them as APP (key)", tt.file, n, named)
				}
			}
			if filepath.Ext(tt.file) == ".json" {
				if !json.Valid(b.Bytes()) {
					t.Errorf("%s is not JSON", tt.file)
				} else if nulls := unexpectedNulls(b.Bytes()); len(nulls) > 0 {
					t.Errorf("%s has null where a list belongs: %s", tt.file, strings.Join(nulls, ", "))
				}
			}
		})
	}
}
