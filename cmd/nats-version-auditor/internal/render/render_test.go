package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render/rendertest"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from what the code prints now")

// operatorKey is the public key of account APP in the operator-mode goldens.
const operatorKey = "ACXD4KXKPV6KCL7X5IK2SQAS4XAA5ACP77V4TC5SZUKVU47U5LSM7DWJ"

// otherKey is an account of the operator-mode goldens with no asset.
const otherKey = "AB3YHYJUXVPOZ6JAW7CDUYEZCNTRBKJ7Z4XDRDKH6UDLGG3JIV3S4HJQ"

// TestOutputsAreGolden pins what check, report and plan print for the
// shared fixture (internal/fixture) in every format, as it is, under
// --assume n2=2.12.15, as an operator-mode system reports it, and for an
// audit that could not run; `go test -run
// TestOutputsAreGolden -update` rewrites the files after a deliberate change.
func TestOutputsAreGolden(t *testing.T) {
	r := fixture.Report()
	pol := auditor.Policy{Floor: version.DefaultFloor}
	// --assume n2=2.12.15 on the fixture: a downgrade.
	what, err := auditor.Assume(auditor.Evaluate(r.Snapshot, pol), pol, []auditor.Assumption{{Target: "n2", Version: mustRelease(t, "2.12.15")}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := auditor.MakePlan(auditor.Evaluate(r.Snapshot, pol), pol, mustRelease(t, "2.14.0"), auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	down, err := auditor.MakePlan(auditor.Evaluate(r.Snapshot, pol), pol, mustRelease(t, "2.12.15"), auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// To 2.15.3 from 2.14.0 and 2.12.15: a path the docs do not support,
	// through 2.14.7 or later first.
	through, err := auditor.MakePlan(auditor.Evaluate(r.Snapshot, pol), pol, mustRelease(t, "2.15.3"), auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// The fixture as an operator-mode system reports it: account APP is a
	// public key with its JWT's name beside it (JSZ), and only the key on
	// the leafnode link (LEAFZ).
	opSnap := fixture.Snapshot()
	for _, assets := range [][]snapshot.Asset{opSnap.Streams, opSnap.Consumers} {
		for i := range assets {
			assets[i].Account, assets[i].AccountName = operatorKey, assets[i].Account
		}
	}
	for i := range opSnap.Leafnodes {
		opSnap.Leafnodes[i].Account = operatorKey
	}
	// It listened to the pulls of APP, and could not to those of an
	// account with no asset, which has no name to show beside its key.
	opSnap.Pulls = &snapshot.PullSight{Since: opSnap.Started.Add(-35 * time.Second), Watched: 35 * time.Second,
		Visible: map[string]bool{operatorKey: true, otherKey: false}}
	op := auditor.Evaluate(opSnap, pol)
	opPlan, err := auditor.MakePlan(auditor.Evaluate(opSnap, pol), pol, mustRelease(t, "2.14.0"), auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// An audit that could not run: every list of its documents is one, and
	// it has no blocks of what it did not see.
	unreachable := errors.New("cannot reach NATS at nats://127.0.0.1:1: nats: no servers available for connection")
	failed := findings.Failed(unreachable, version.DefaultFloor, "", r.Snapshot.Started, time.Millisecond)
	// The fixture with a server without JetStream (no API level; it reports
	// flags all the same, as a real 2.15.3 does) and one that reports no
	// flags, beside 2.14 servers that report them and a 2.12 one that
	// cannot; and a second cluster in the domain, so that no cluster has
	// the domain's servers.
	mixedSnap := fixture.Snapshot()
	for _, i := range []int{0, 1} {
		mixedSnap.Servers[i].FeatureFlags = map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: false}
	}
	noJS := snapshot.Server{ID: "ID5", Name: "n5", Cluster: "c1", FeatureFlags: map[string]bool{releases.FlagAckFormatV2: false, releases.FlagRaftDeleteRange: true}}
	noJS.SetVersion("2.15.3")
	other := snapshot.Server{ID: "ID6", Name: "n6", Cluster: "c2", JetStream: true, APILevel: 4}
	other.SetVersion("2.14.0")
	mixedSnap.Servers = append(mixedSnap.Servers, noJS, other)
	mixed := auditor.Evaluate(mixedSnap, pol)
	// The official chart's names: the plan names each step's pod; the meta
	// leader, nats-0, goes last, so a partition follows the order.
	podSnap := &snapshot.Snapshot{ExpectedCount: 3,
		Streams: []snapshot.Asset{{Kind: releases.KindStream, Account: "APP", Stream: "ORDERS", Leader: "nats-1", Peers: []string{"nats-0", "nats-1", "nats-2"}, Replicas: 3}},
		Meta:    []snapshot.MetaGroup{{Cluster: "nats", Leader: "nats-0", Peers: []string{"nats-0", "nats-1", "nats-2"}, Size: 3}}}
	for i := range 3 {
		s := snapshot.Server{ID: fmt.Sprint("ID", i), Name: fmt.Sprint("nats-", i), Cluster: "nats", JetStream: true, APILevel: 3}
		s.SetVersion("2.12.15")
		podSnap.Servers = append(podSnap.Servers, s)
	}
	podBefore := auditor.Evaluate(podSnap, pol)
	podPlan, err := auditor.MakePlan(podBefore, pol, mustRelease(t, "2.14.0"), auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// How a check --wait ended: after 4 audits in 12.3 s, or interrupted
	// before any audit ended.
	waited := Wait{Took: 12345 * time.Millisecond, Audits: 4}
	interrupted, stopped := Wait{Took: 400 * time.Millisecond, Interrupted: true}, errors.New("wait interrupted")
	for _, tt := range []struct {
		file  string
		write func(io.Writer) error
	}{
		{"check.txt", func(w io.Writer) error { return WriteCheck(w, FormatText, r, nil) }},
		{"check.json", func(w io.Writer) error { return WriteCheck(w, FormatJSON, r, nil) }},
		{"check.nagios", func(w io.Writer) error { return WriteCheck(w, FormatNagios, r, nil) }},
		{"report.txt", func(w io.Writer) error { return WriteReport(w, FormatText, r, nil) }},
		{"report.json", func(w io.Writer) error { return WriteReport(w, FormatJSON, r, nil) }},
		{"check-assume.txt", func(w io.Writer) error { return WriteCheck(w, FormatText, what.After, what) }},
		{"check-assume.json", func(w io.Writer) error { return WriteCheck(w, FormatJSON, what.After, what) }},
		{"check-assume.nagios", func(w io.Writer) error { return WriteCheck(w, FormatNagios, what.After, what) }},
		{"report-assume.txt", func(w io.Writer) error { return WriteReport(w, FormatText, what.After, what) }},
		{"report-assume.json", func(w io.Writer) error { return WriteReport(w, FormatJSON, what.After, what) }},
		{"plan.txt", func(w io.Writer) error { return WritePlan(w, FormatText, up, r) }},
		{"plan.json", func(w io.Writer) error { return WritePlan(w, FormatJSON, up, r) }},
		{"plan-downgrade.txt", func(w io.Writer) error { return WritePlan(w, FormatText, down, r) }},
		{"plan-path.txt", func(w io.Writer) error { return WritePlan(w, FormatText, through, r) }},
		{"plan-path.json", func(w io.Writer) error { return WritePlan(w, FormatJSON, through, r) }},
		{"plan-statefulset.txt", func(w io.Writer) error { return WritePlan(w, FormatText, podPlan, podBefore) }},
		{"plan-statefulset.json", func(w io.Writer) error { return WritePlan(w, FormatJSON, podPlan, podBefore) }},
		{"check-operator.txt", func(w io.Writer) error { return WriteCheck(w, FormatText, op, nil) }},
		{"report-operator.txt", func(w io.Writer) error { return WriteReport(w, FormatText, op, nil) }},
		{"report-operator.json", func(w io.Writer) error { return WriteJSON(w, ReportOf(op, nil)) }},
		{"plan-operator.txt", func(w io.Writer) error { return WritePlan(w, FormatText, opPlan, op) }},
		{"check-failed.json", func(w io.Writer) error { return WriteCheckFailed(w, FormatJSON, unreachable, failed) }},
		{"check-failed.nagios", func(w io.Writer) error { return WriteCheckFailed(w, FormatNagios, unreachable, failed) }},
		{"report-mixed.txt", func(w io.Writer) error { return WriteReport(w, FormatText, mixed, nil) }},
		{"check-waited.json", func(w io.Writer) error { return WriteCheckWaited(w, FormatJSON, r, nil, waited) }},
		{"check-waited.txt", func(w io.Writer) error { return WriteCheckWaited(w, FormatText, r, nil, waited) }},
		{"check-waited.nagios", func(w io.Writer) error { return WriteCheckWaited(w, FormatNagios, r, nil, waited) }},
		{"check-interrupted.json", func(w io.Writer) error {
			return WriteCheckFailedWaited(w, FormatJSON, stopped, findings.Failed(stopped, version.DefaultFloor, "", r.Snapshot.Started, 0), interrupted)
		}},
		{"report-failed.json", func(w io.Writer) error { return WriteReportFailed(w, FormatJSON, unreachable, failed) }},
		{"plan-failed.json", func(w io.Writer) error { return WritePlanFailed(w, FormatJSON, unreachable, "2.14.0", failed) }},
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
			// The first line is read in one glance (a Nagios status, a
			// console): what was checked and found, short. A Nagios line's
			// perfdata, after " | ", is for graphs, not for reading.
			first, _, _ := strings.Cut(b.String(), "\n")
			first, _, _ = strings.Cut(first, " | ")
			if filepath.Ext(tt.file) != ".json" && utf8.RuneCountInString(first) >= firstLineMax {
				t.Errorf("%s: first line of %d characters, want under %d: %s", tt.file, utf8.RuneCountInString(first), firstLineMax, first)
			}
			if filepath.Ext(tt.file) == ".json" {
				if !json.Valid(b.Bytes()) {
					t.Errorf("%s is not JSON", tt.file)
				} else if nulls := rendertest.UnexpectedNulls(b.Bytes()); len(nulls) > 0 {
					t.Errorf("%s has null where a list belongs: %s", tt.file, strings.Join(nulls, ", "))
				}
			}
		})
	}
}

func TestSummaryCountsInWords(t *testing.T) {
	r := &findings.Report{Status: findings.Unknown, Floor: version.DefaultFloor, ServersExpected: 1, Snapshot: &snapshot.Snapshot{},
		Findings: []findings.Finding{{Code: findings.AuditIncomplete, Severity: findings.Unknown, Message: "m"}}}
	if got, want := summary(r), "0 of 1 expected servers answered, floor 2.14.0, 0 streams, 0 consumers; 1 finding (1 unknown)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	var b strings.Builder
	if err := writeCheckNagios(&b, r, nil, Wait{}); err != nil ||
		!strings.HasPrefix(b.String(), "NATS VERSIONS UNKNOWN - 0 of 1 expected servers answered, floor 2.14.0, 0 streams, 0 consumers; 1 finding, worst: m | ") {
		t.Errorf("nagios %q, %v", b.String(), err)
	}
	// What was checked: the versions from oldest to newest, those that are
	// none counted; the streams and consumers seen.
	server := func(name, v string) findings.ServerReport {
		s := findings.ServerReport{Server: snapshot.Server{Name: name, Cluster: "c1"}}
		s.SetVersion(v)
		return s
	}
	r = &findings.Report{Status: findings.OK, Floor: version.DefaultFloor, ServersExpected: 4,
		Servers:  []findings.ServerReport{server("a", "2.15.3"), server("b", "2.14.0"), server("c", "banana"), server("d", "2.14.10")},
		Snapshot: &snapshot.Snapshot{Streams: make([]snapshot.Asset, 12), Consumers: make([]snapshot.Asset, 1)}}
	if got, want := summary(r), "4 of 4 expected servers answered, 2.14.0 to 2.15.3, 1 unparseable, floor 2.14.0, 12 streams, 1 consumer; no findings"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	// A report made again of a document has no assets: what its servers
	// lead is what it knows.
	led := &findings.Report{Floor: version.DefaultFloor, ServersExpected: 1, Snapshot: &snapshot.Snapshot{},
		Servers: []findings.ServerReport{{Server: snapshot.Server{Name: "a"}, StreamsLed: 2, ConsumersLed: 5}}}
	if got, want := checked(led), "1 of 1 expected servers answered, 1 unparseable, floor 2.14.0, 2 streams, 5 consumers"; got != want {
		t.Errorf("checked %q, want %q", got, want)
	}
	if got, want := clusterVersions(r.Servers), []string{"cluster c1: 2.14.0 on 1 server, 2.14.10 on 1 server, 2.15.3 on 1 server, banana on 1 server"}; !slices.Equal(got, want) {
		t.Errorf("versions %q, want %q", got, want)
	}
}

// TestFirstLinesStayShort: however many assumptions, however long the
// wait, the first line of check's and report's text and check's Nagios
// status stay under firstLineMax characters, and still say the status. (A
// failure's Nagios line is its error, whole.)
func TestFirstLinesStayShort(t *testing.T) {
	r := fixture.Report()
	pol := auditor.Policy{Floor: version.DefaultFloor}
	var as []auditor.Assumption
	for range 20 {
		as = append(as, auditor.Assumption{Target: "cluster/c1", Version: mustRelease(t, "2.15.3")},
			auditor.Assumption{Target: "n2", Version: mustRelease(t, "2.12.15")}, auditor.Assumption{Target: "n1", Version: mustRelease(t, "2.14.10")})
	}
	what, err := auditor.Assume(auditor.Evaluate(r.Snapshot, pol), pol, as)
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(io.Writer) error{
		"text":   func(w io.Writer) error { return WriteCheck(w, FormatText, what.After, what) },
		"nagios": func(w io.Writer) error { return WriteCheck(w, FormatNagios, what.After, what) },
		"waited nagios": func(w io.Writer) error {
			return WriteCheckWaited(w, FormatNagios, r, nil, Wait{Took: time.Hour, Audits: 1000, Interrupted: true})
		},
		"report --assume": func(w io.Writer) error { return WriteReport(w, FormatText, what.After, what) },
	} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(b.String(), "\n")
		first, _, _ = strings.Cut(first, " | ")
		if n := utf8.RuneCountInString(first); n >= firstLineMax || !strings.Contains(first, "CRITICAL") && !strings.Contains(first, "UNKNOWN") {
			t.Errorf("%s: first line of %d characters: %s", name, n, first)
		}
	}
}

// mustRelease is the Version of a release the test names.
func mustRelease(t testing.TB, s string) version.Version {
	t.Helper()
	v, err := version.ParseRelease(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReportListsFeatureFlags: the report's text lists each server's flags
// that are on, and those its config sets, as the feature-flag table tells
// them from its release's defaults; a server before 2.14.0 reports none and
// says why.
func TestReportListsFeatureFlags(t *testing.T) {
	server := func(name, version string, flags map[string]bool) findings.ServerReport {
		s := findings.ServerReport{Server: snapshot.Server{Name: name, Cluster: "c1", FeatureFlags: flags}}
		s.SetVersion(version)
		return s
	}
	r := &findings.Report{Status: findings.OK, Floor: mustRelease(t, "2.12.0"), ServersExpected: 4, Snapshot: &snapshot.Snapshot{},
		Servers: []findings.ServerReport{
			server("n1", "2.14.0", map[string]bool{"js_ack_fc_v2": false, "js_raft_delete_range": true}),
			server("n2", "2.15.3", map[string]bool{"js_ack_fc_v2": false, "js_api_reply_v2": false, "js_raft_delete_range": true, "js_snapshot_sources": false}),
			server("n3", "2.15.3", map[string]bool{"js_ack_fc_v2": false, "js_api_reply_v2": false, "js_raft_delete_range": false, "js_snapshot_sources": false}),
			server("n4", "2.12.15", nil),
		}}
	var b strings.Builder
	if err := WriteReport(&b, FormatText, r, nil); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(b.String(), "SERVER  FEATURE FLAGS\n")
	if !ok {
		t.Fatalf("no feature flags section:\n%s", b.String())
	}
	section, _, _ = strings.Cut(section, "\n\n")
	section = strings.TrimSuffix(section, "\n")
	want := "n1      js_raft_delete_range (its config)\n" +
		"n2      js_raft_delete_range\n" +
		"n3      js_raft_delete_range off (its config)\n" +
		"n4      none: before 2.14.0"
	if section != want {
		t.Errorf("feature flags section:\n%s\nwant:\n%s", section, want)
	}
}

// TestReportListsShards: the report shows each consumer with a priority
// policy with its leader's record (backlog, waiting pulls, idle time, the
// pin's holder and age), and only its policy without that record.
func TestReportListsShards(t *testing.T) {
	at := time.Now()
	shard := func(name string, p *snapshot.PullState) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: "WORK", Consumer: name, Leader: "n1", Replicas: 3, Pull: p}
	}
	snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{
		shard("s0", &snapshot.PullState{Policy: "pinned_client", Group: "g", FromLeader: true, At: at, Created: at.Add(-time.Hour),
			Waiting: 1, LastDelivery: at.Add(-2 * time.Second), PinnedID: "pin-a", PinnedAt: at.Add(-90 * time.Second)}),
		shard("s1", &snapshot.PullState{Policy: "pinned_client", Group: "g", FromLeader: true, At: at, Created: at.Add(-time.Hour),
			Pending: 5, AckPending: 1, LastAck: at.Add(-200 * time.Second)}),
		shard("s2", &snapshot.PullState{Policy: "overflow", Group: "g"}),
		shard("plain", nil),
	}}
	r := &findings.Report{Status: findings.OK, Floor: version.DefaultFloor, Snapshot: snap}
	var b strings.Builder
	if err := WriteReport(&b, FormatText, r, nil); err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(b.String(), "\nSHARD ")
	section, _, _ = strings.Cut(section, "\n\n")
	section = strings.TrimSuffix(section, "\n")
	want := []string{"APP > WORK > s0  pinned_client  n1      0        0        1        2s    pin-a      90s",
		"APP > WORK > s1  pinned_client  n1      5        1        0        200s  -          -",
		"APP > WORK > s2  overflow       n1      -        -        -        -     -          -"}
	if lines := strings.Split(section, "\n")[1:]; !ok || !slices.Equal(lines, want) {
		t.Errorf("shards section:\n%s\nwant:\n%s", section, strings.Join(want, "\n"))
	}
	doc := ReportOf(r, nil)
	if len(doc.Shards) != 3 || doc.Shards[0].Pull.PinnedID != "pin-a" || doc.Shards[0].Pull.PinAgeSeconds != 90 || doc.Shards[2].Pull.FromLeader {
		t.Errorf("report JSON shards: %+v", doc.Shards)
	}
}
