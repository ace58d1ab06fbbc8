package auditor

import (
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// broken lists the codes of the rules a move from → to breaks, a code once
// per rule.
func broken(from, to version.Version) []string {
	out := []string{}
	for _, r := range releases.PathRules {
		if r.Breaks(from, to) {
			out = append(out, string(pathCode[r.Kind]))
		}
	}
	return out
}

func TestPathRules(t *testing.T) {
	const (
		path  = "UPGRADE_PATH_UNSUPPORTED"
		floor = "DOWNGRADE_BELOW_FLOOR"
	)
	for _, tt := range []struct {
		from, to string
		want     []string
	}{
		// Into 2.15: from 2.14.7 on.
		{"2.14.6", "2.15.0", []string{path}},
		{"2.14.7", "2.15.3", nil},
		{"2.14.10", "2.15.3", nil},
		{"2.14.0", "2.15.3", []string{path}},
		{"2.12.15", "2.15.3", []string{path}},
		{"2.14.6-fips", "2.15.0", []string{path}}, // a FIPS build is its release
		{"2.14.7-RC.1", "2.15.0", []string{path}}, // a pre-release of 2.14.7 is before it
		{"2.14.6", "2.15.0-RC.1", []string{path}}, // a pre-release of 2.15 is 2.15's
		{"2.14.6", "2.16.0", []string{path}},      // a later line is the same
		{"2.14.0", "2.14.10", nil},
		{"2.12.15", "2.14.0", nil},
		// Down from 2.15: no lower than 2.14.7, and one patch back.
		{"2.15.3", "2.14.6", []string{path, path}},
		{"2.15.3", "2.14.7", []string{path}},
		{"2.15.3", "2.15.2", nil},
		{"2.15.3", "2.15.1", []string{path}},
		{"2.15.1", "2.15.0", nil},
		{"2.15.1-RC.1", "2.15.0", nil},
		{"2.15.0", "2.15.0-RC.1", []string{path}}, // not a release
		// Down from 2.12 or later: no lower than 2.11.9.
		{"2.14.0", "2.11.8", []string{floor, path}},
		{"2.12.0", "2.11.8", []string{floor, path}},
		{"2.14.0", "2.11.9", []string{path}},
		{"2.11.12", "2.11.8", []string{path}},
		// Down from 2.10 or later: no lower than 2.9.22.
		{"2.10.29", "2.9.21", []string{floor, path}},
		{"2.10.29", "2.9.22", []string{path}},
		// Nothing to judge.
		{"2.14.0", "2.14.0", nil},
	} {
		from, to := version.Must(tt.from), version.Must(tt.to)
		if got := broken(from, to); !slices.Equal(got, append([]string{}, tt.want...)) {
			t.Errorf("%s → %s breaks %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	// A server whose version is no version moves from nothing that can be
	// judged, and to nothing: VERSION_UNPARSEABLE says so.
	for _, pair := range [][2]version.Version{{{}, version.Must("2.15.0")}, {version.Must("2.14.0"), {}}, {{}, {}}} {
		if got := broken(pair[0], pair[1]); len(got) != 0 {
			t.Errorf("%q → %q breaks %v, want none", pair[0], pair[1], got)
		}
	}
	if _, err := version.ParseRelease("14"); err == nil {
		t.Error(`ParseRelease("14") is a release`)
	}
}

func TestPathRulesName(t *testing.T) {
	for _, r := range releases.PathRules {
		k, ok := findings.Info(pathCode[r.Kind])
		if !ok || k.Description == "" {
			t.Errorf("rule %+v gives code %s, which is not registered", r, pathCode[r.Kind])
		}
		if r.Why == "" || !strings.Contains(r.Cite, "NATS") {
			t.Errorf("rule %+v says no why or cites no NATS docs", r)
		}
		if (r.OnePatch && !r.Line.IsZero()) || (!r.OnePatch && (r.Line.IsZero() || r.Floor.IsZero())) {
			t.Errorf("rule %+v: a rule is either one patch back or between a line and a floor", r)
		}
	}
	// The release to go to before 2.15: the newest 2.14 release the level
	// table knows, at least 2.14.7.
	if got := releases.PathRules[0].First(); got != version.Must("2.14.10") {
		t.Errorf("first go to %s before 2.15, want 2.14.10", got)
	}
	if got := releases.PathRules[1].First(); !got.IsZero() {
		t.Errorf("a downgrade rule names %s to go to first", got)
	}
}

func TestBadReleases(t *testing.T) {
	for _, tt := range []struct{ v, fix string }{
		{"2.14.4", "2.14.5"}, {"2.14.4-fips", "2.14.5"}, {"2.12.14", "2.12.15"}, {"2.12.0", "2.12.1"}, {"2.11.9", "2.11.10"},
		{"2.14.5", ""}, {"2.14.3", ""}, {"2.12.15", ""}, {"2.12.1", ""}, {"2.11.10", ""}, {"2.11.8", ""}, {"2.14.4-RC.1", ""},
	} {
		v, err := version.ParseVersion(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		b, bad := releases.BadReleaseOf(v)
		if got := b.Fix.String(); bad != (tt.fix != "") || got != tt.fix {
			t.Errorf("%s: bad %t, fixed by %q; want fixed by %q", tt.v, bad, got, tt.fix)
		}
	}
	for _, b := range releases.BadReleases {
		if !b.Release.Before(b.Fix) || b.Release.Line() != b.Fix.Line() || b.Defect == "" || !strings.Contains(b.Cite, "#") || !strings.Contains(b.Evidence, "jetstream_cluster.go:") {
			t.Errorf("%+v: the fix is a later release of its line, and the row says what it loses and where it is shown", b)
		}
	}
}

func TestEvaluateReleases(t *testing.T) {
	onDomain := func(s snapshot.Server, domain string) snapshot.Server { s.Domain = domain; return s }
	noJS := srv("n9", "c1", "2.14.0", 0)
	noJS.JetStream = false
	for _, tt := range []struct {
		name    string
		servers []snapshot.Server
		want    []string
	}{
		{"bad releases", []snapshot.Server{srv("n1", "c1", "2.14.4", 4), srv("n2", "c1", "2.12.14", 3), srv("n3", "c1", "2.14.5", 4)},
			[]string{"KNOWN_BAD_RELEASE(n1,2.14.5)", "KNOWN_BAD_RELEASE(n2,2.12.15)"}},
		{"2.15 beside 2.14.6", []snapshot.Server{srv("n1", "c1", "2.15.3", 5), srv("n2", "c1", "2.14.6", 4), srv("n3", "c1", "2.14.7", 4), noJS},
			[]string{"UPGRADE_PATH_MIXED(n2," + releases.PathRules[0].First().String() + ")"}},
		{"2.15 in another domain, of the same cluster name", []snapshot.Server{onDomain(srv("n1", "c1", "2.15.3", 5), "hub"), onDomain(srv("n2", "c1", "2.14.0", 4), "leaf")}, nil},
		{"no 2.15", []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.12.15", 3)}, nil},
	} {
		// Each domain's meta group: every JetStream server of it.
		var meta []snapshot.MetaGroup
		for _, s := range tt.servers {
			if s.JetStream && !slices.ContainsFunc(meta, func(m snapshot.MetaGroup) bool { return m.Domain == s.Domain }) {
				meta = append(meta, snapshot.MetaGroup{Domain: s.Domain, Leader: s.Name})
			}
		}
		r := Evaluate(&snapshot.Snapshot{Servers: tt.servers, ExpectedCount: len(tt.servers), Meta: meta}, Policy{Floor: version.Must("2.12.0")})
		var got []string
		for _, f := range r.Findings {
			if f.Code == findings.KnownBadRelease || f.Code == findings.UpgradePathMixed {
				got = append(got, string(f.Code)+"("+f.Server+","+f.Release+")")
				if f.Code == findings.KnownBadRelease && f.Severity != findings.Critical {
					t.Errorf("%s: %s is %s", tt.name, f.Code, f.Severity)
				}
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestAssumeAndPlanHoldPaths: a what-if onto a bad release finds it; a plan
// from 2.14.0 to 2.15.3 says at every step that the path is not supported
// and names the newest 2.14 the level table knows to go to first; from
// there it says nothing of paths.
func TestAssumeAndPlanHoldPaths(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams: []snapshot.Asset{stream("S", "n2", "n1", "n2", "n3")},
		Meta:    []snapshot.MetaGroup{{Cluster: "c1", Leader: "n1", Peers: []string{"n1", "n2", "n3"}, Size: 3}}}
	w := assume(t, &snap, Policy{}, "n1=2.14.4")
	if got := briefs(w.Appear); !slices.Equal(got, []string{"KNOWN_BAD_RELEASE(n1,,//)", "CLUSTER_MIXED_VERSIONS(,,//)"}) {
		t.Errorf("--assume n1=2.14.4: appear %v", got)
	}
	if w.After.Status != findings.Critical {
		t.Errorf("--assume n1=2.14.4: %s", w.After.Status)
	}

	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.15.3"), PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	if plan.First != releases.PathRules[0].First() || len(plan.Steps) != 3 {
		t.Fatalf("plan to 2.15.3 from 2.14.0: first %s, %d steps", plan.First, len(plan.Steps))
	}
	for _, st := range plan.Steps {
		if len(st.Path) != 1 || st.Path[0].Code != findings.UpgradePathUnsupported || st.Path[0].Server != st.Server || st.First != plan.First {
			t.Errorf("%s: path %v, first %s", st, briefs(st.Path), st.First)
		}
		if st.Status != findings.Warning && st.Status != findings.Critical {
			t.Errorf("%s: %s", st, st.Status)
		}
	}
	// n3 moves first; while it runs 2.15.3, the others, at 2.14.0, are off
	// the path too.
	if got := briefs(plan.Steps[0].Appear); !slices.Equal(got, []string{"CLUSTER_MIXED_VERSIONS(,,//)",
		"UPGRADE_PATH_UNSUPPORTED(n3,,//)", "UPGRADE_PATH_MIXED(n1,,//)", "UPGRADE_PATH_MIXED(n2,,//)"}) {
		t.Errorf("step 1 appear %v, want n3's path and the other two beside it", got)
	}

	for i := range snap.Servers {
		snap.Servers[i].SetVersion("2.14.10")
	}
	plan, err = MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.15.3"), PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range plan.Steps {
		if len(st.Path) != 0 || !st.First.IsZero() || slices.ContainsFunc(st.After.Findings, func(f findings.Finding) bool { return f.Code == findings.UpgradePathUnsupported }) {
			t.Errorf("%s from 2.14.10: path %v, first %s, findings %v", st, briefs(st.Path), st.First, briefs(st.After.Findings))
		}
	}
	if !plan.First.IsZero() {
		t.Errorf("plan from 2.14.10: first %s", plan.First)
	}
}

// TestMetaGroupsOf holds the groups UPGRADE_PATH_MIXED judges to what a
// meta group is: a cluster's JetStream servers, joined by the leader each
// names, whether or not it names one now; not a leafnode's own JetStream
// beside its hub, though both have the empty domain.
func TestMetaGroupsOf(t *testing.T) {
	noJS := srv("x1", "c1", "2.15.3", 5)
	noJS.JetStream = false
	snap := &snapshot.Snapshot{
		Servers: []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.15.3", 5), srv("e1", "c2", "2.14.0", 4),
			srv("leaf", "", "2.15.3", 5), srv("hub2", "", "2.14.0", 4), noJS},
		// n1 names no leader (an election); e1's cluster joins c1's by the
		// leader it names.
		Meta: []snapshot.MetaGroup{{Follows: map[string]string{"n2": "n2", "e1": "n2", "leaf": "leaf"}}},
	}
	var got []string
	for _, g := range metaGroupsOf(snap) {
		var names []string
		for _, s := range g {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		got = append(got, strings.Join(names, ","))
	}
	slices.Sort(got)
	if want := []string{"e1,n1,n2", "hub2", "leaf"}; !slices.Equal(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	r := Evaluate(snap, Policy{})
	var mixed []string
	for _, f := range r.Findings {
		if f.Code == findings.UpgradePathMixed {
			mixed = append(mixed, f.Server)
		}
	}
	slices.Sort(mixed)
	if want := []string{"e1", "n1"}; !slices.Equal(mixed, want) {
		t.Errorf("UPGRADE_PATH_MIXED on %v, want %v (not hub2: the leaf's JetStream is its own)", mixed, want)
	}
}

// TestMemberVotesOnly: nats-server #8353 reached 2.12.14 and 2.14.4; 2.14.0
// to 2.14.3 came out before it. TestOpTablesAgainstSource holds the table
// to the source at each bound.
func TestMemberVotesOnly(t *testing.T) {
	for v, want := range map[string]bool{"2.10.27": false, "2.11.12": false, "2.12.12": false, "2.12.14": true, "2.12.15": true,
		"2.14.0": false, "2.14.3": false, "2.14.4": true, "2.14.10": true, "2.15.0": true, "2.15.3": true, "2.16.0-RC.1": true} {
		if got := releases.MemberVotesOnly(version.Must(v)); got != want {
			t.Errorf("%s: %v, want %v", v, got, want)
		}
	}
	if releases.MemberVotesOnly(version.Version{}) {
		t.Error("no version counts only its members' votes")
	}
}

// TestReleaseCodesDescribeTheTables: the descriptions of the release codes
// (the runbook's and the findings table's words) name the releases of the
// tables, so a new row of BadReleases or PathRules cannot leave them stale.
func TestReleaseCodesDescribeTheTables(t *testing.T) {
	desc := func(c findings.Code) string { k, _ := findings.Info(c); return k.Description }
	for _, b := range releases.BadReleases {
		if !strings.Contains(desc(findings.KnownBadRelease), b.Release.String()) {
			t.Errorf("%s's description does not name %s", findings.KnownBadRelease, b.Release)
		}
	}
	for _, r := range releases.PathRules {
		if r.OnePatch {
			continue
		}
		codes := []findings.Code{pathCode[r.Kind]}
		if r.Mixed {
			codes = append(codes, findings.UpgradePathMixed)
		}
		for _, c := range codes {
			if !strings.Contains(desc(c), r.Floor.String()) || !strings.Contains(desc(c), r.Line.Minor()) {
				t.Errorf("%s's description does not name %s and %s, of a rule of its", c, r.Line.Minor(), r.Floor)
			}
		}
	}
}
