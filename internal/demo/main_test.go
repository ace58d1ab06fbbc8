package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/internal/modroot"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// demoVersions is the nats-server versions the demo's cluster runs, each
// once, sorted.
func demoVersions() []string {
	var vs []string
	for _, n := range nodes {
		vs = append(vs, n.Version)
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// TestMakeDemoBuildsOnlyWhatItRuns: what `make demo` runs (make -n, its
// prerequisites resolved) builds the nats-server versions the demo starts,
// and no other: the servers builder is called once, with exactly those.
func TestMakeDemoBuildsOnlyWhatItRuns(t *testing.T) {
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "demo")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n demo: %v", err)
	}
	var builds [][]string
	for line := range strings.SplitSeq(string(out), "\n") {
		if _, args, ok := strings.Cut(line, " run ./internal/natstest/servers"); ok {
			builds = append(builds, strings.Fields(args))
		}
	}
	if len(builds) != 1 {
		t.Fatalf("make demo calls the servers builder %d times, want once:\n%s", len(builds), out)
	}
	got := slices.Sorted(slices.Values(builds[0]))
	if want := demoVersions(); !slices.Equal(got, want) {
		t.Errorf("make demo builds nats-server %q (an empty list: every version the tests use), the demo runs %q", builds[0], want)
	}
}

var release = regexp.MustCompile(`\b\d+\.\d+\.\d+\b`)

// TestReadmeSaysWhatTheDemoBuilds: the README's `make demo` line names the
// versions the demo runs, and no other.
func TestReadmeSaysWhatTheDemoBuilds(t *testing.T) {
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The line and the comment lines under it that continue it.
	var said []string
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "make demo ") {
			continue
		}
		said = append(said, line)
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(strings.TrimSpace(next), "#") || !strings.HasPrefix(next, " ") {
				break
			}
			said = append(said, next)
		}
		break
	}
	if said == nil {
		t.Fatal("README.md shows no `make demo` line")
	}
	var named []string
	for _, v := range release.FindAllString(strings.Join(said, "\n"), -1) {
		named = append(named, "v"+v)
	}
	slices.Sort(named)
	named = slices.Compact(named)
	if want := demoVersions(); !slices.Equal(named, want) {
		t.Errorf("README.md's make demo line names nats-server %v, the demo runs %v:\n%s", named, want, strings.Join(said, "\n"))
	}
}

// agreeingReport is a `report --format json` document that says, of the
// demo's fleet, what the simulation computes: each shard pulled by its
// owners (the first holding the pin), CONSUMER_PULLED_BY_NOBODY and
// CONSUMER_PULLED_BY_TWO where it has none or two, and a finding on
// another stream that the comparison leaves alone.
func agreeingReport(t *testing.T, pf *natstest.PlayedFleet) *auditorReport {
	t.Helper()
	var shards []map[string]any
	fs := []reportFinding{{Code: findings.ConsumerLeaderBelowFloor, Stream: "ORDERS", Consumer: "worker"}}
	for i, shard := range pf.Shards {
		var ps []reportPuller
		for j, who := range pf.Owners(i) {
			ps = append(ps, reportPuller{Process: "_INBOX_" + who + ".abc", Name: who, Holder: j == 0})
		}
		shards = append(shards, map[string]any{"account": "APP", "stream": pf.Stream, "consumer": shard,
			"pull": map[string]any{"priority_policy": "pinned_client", "pullers": ps}})
		switch len(ps) {
		case 0:
			fs = append(fs, reportFinding{Code: findings.ConsumerPulledByNobody, Stream: pf.Stream, Consumer: shard})
		case 1:
		default:
			fs = append(fs, reportFinding{Code: findings.ConsumerPulledByTwo, Stream: pf.Stream, Consumer: shard})
		}
	}
	b, err := json.Marshal(map[string]any{"status": "CRITICAL", "findings": fs, "shards": shards,
		"pulls": map[string]any{"accounts": []pullAccount{{"APP", true}, {"SYS", false}}, "watched_seconds": 5.0}})
	if err != nil {
		t.Fatal(err)
	}
	var rep auditorReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestCompareFleet: the demo's verdict. A report that says what the
// simulation computes matches it; one that misses a puller, names a puller
// by its inbox only, misses a finding, adds one or did not hear the
// fleet's account differs, and says where.
func TestCompareFleet(t *testing.T) {
	f := natstest.NewFleet(fleetPods, fleetPartitions, fleetOldV, fleetNewV, fleetRolled)
	pf := &natstest.PlayedFleet{Fleet: f, Stream: fleetStream}
	for i := range f.Shards() {
		pf.Shards = append(pf.Shards, "shard-"+strconv.Itoa(i))
	}
	nobody, two := f.Counted()
	if len(nobody) == 0 || len(two) == 0 {
		t.Fatalf("the demo's fleet has %d shards pulled by nobody and %d by two: it shows nothing", len(nobody), len(two))
	}
	one := -1 // a shard with one owner
	for i := range f.Shards() {
		if len(f.Owners(i)) == 1 {
			one = i
		}
	}

	rows, diffs := compareFleet(pf, "APP", agreeingReport(t, pf))
	if len(diffs) != 0 || len(rows) != f.Shards() {
		t.Fatalf("an agreeing report: %d rows, diffs %q", len(rows), diffs)
	}
	for _, r := range rows {
		if !r.ok {
			t.Errorf("an agreeing report: %s marked as differing", r.shard)
		}
	}

	for _, c := range []struct {
		name   string
		change func(*auditorReport)
		want   string
	}{
		{"a second owner not heard", func(r *auditorReport) {
			p := r.Shards[two[0]].Pull
			p.Pullers = p.Pullers[:1]
		}, pf.Shards[two[0]] + ": the auditor heard"},
		{"a puller named by its inbox only", func(r *auditorReport) { r.Shards[one].Pull.Pullers[0].Name = "" }, pf.Shards[one] + ": the auditor heard _INBOX_"},
		{"no finding where nobody pulls", func(r *auditorReport) {
			r.Findings = slices.DeleteFunc(r.Findings, func(fd reportFinding) bool { return fd.Consumer == pf.Shards[nobody[0]] })
		}, pf.Shards[nobody[0]] + ": the auditor's finding -, the simulation's CONSUMER_PULLED_BY_NOBODY"},
		{"a second finding on a shard", func(r *auditorReport) {
			fd := r.Findings[0]
			fd.Code, fd.Stream, fd.Consumer = findings.ConsumerStalePin, pf.Stream, pf.Shards[two[0]]
			r.Findings = append(r.Findings, fd)
		}, pf.Shards[two[0]] + ": 2 findings"},
		{"the fleet's account not heard", func(r *auditorReport) { r.Pulls.Accounts[0].Heard = false }, "did not hear the pulls of account APP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := agreeingReport(t, pf)
			c.change(rep)
			_, diffs := compareFleet(pf, "APP", rep)
			if !slices.ContainsFunc(diffs, func(d string) bool { return strings.Contains(d, c.want) }) {
				t.Errorf("diffs %q, want one that says %q", diffs, c.want)
			}
		})
	}
}
