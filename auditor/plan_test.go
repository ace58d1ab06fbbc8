package auditor

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func impacts(gs []GroupImpact) []string {
	out := []string{}
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%s/%s/%s", g.Kind, g.Stream, g.Consumer))
	}
	return out
}

func risks(rs []ResetRisk) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s=%s", r.Consumer, r.Reset))
	}
	return out
}

// oldCluster is three 2.12.15 servers: n1 the meta leader, n2 leading an
// R3 stream and its consumer, n3 hosting an R1 stream.
func oldCluster() snapshot.Snapshot {
	return snapshot.Snapshot{
		Servers:       []snapshot.Server{srv("n1", "c1", "2.12.15", 3), srv("n2", "c1", "2.12.15", 3), srv("n3", "c1", "2.12.15", 3)},
		ExpectedCount: 3,
		Streams:       []snapshot.Asset{stream("S", "n2", "n1", "n2", "n3"), stream("LOCAL", "n3", "n3")},
		Consumers:     []snapshot.Asset{consumer("S", "C", "n2", "n1", "n2", "n3")},
		Meta:          []snapshot.MetaGroup{{Cluster: "c1", Leader: "n1", Peers: []string{"n1", "n2", "n3"}, Size: 3}},
	}
}

func TestPlanRollingUpgrade(t *testing.T) {
	snap := oldCluster()
	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.14.0"), PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		line                 string
		status               findings.Severity
		stillOld, down, bare []string
		noReset              []string
		floorMet             bool
	}
	all3 := []string{"stream/S/", "consumer/S/C", "meta//"}
	wants := []want{
		{"1. upgrade n3 2.12.15 → 2.14.0 (leads 1 stream or consumer)", findings.Critical,
			// n3 at 2.14 may lead C after its restart and answer a RESET
			// that crashes n1 and n2.
			[]string{"n1", "n2"}, []string{"stream/LOCAL/"}, all3, []string{"C=crashes_follower"}, false},
		{"2. upgrade n2 2.12.15 → 2.14.0 (leads 2 streams and consumers)", findings.Critical,
			[]string{"n1"}, []string{}, all3, []string{"C=crashes_follower"}, false},
		{"3. upgrade n1 2.12.15 → 2.14.0 (JetStream meta leader: last)", findings.OK,
			[]string{}, []string{}, all3, []string{}, true},
	}
	if len(plan.Steps) != len(wants) {
		t.Fatalf("%d steps: %v", len(plan.Steps), plan.Steps)
	}
	for i, w := range wants {
		st := plan.Steps[i]
		if st.String() != w.line || st.Status != w.status {
			t.Errorf("step %q %s, want %q %s", st, st.Status, w.line, w.status)
		}
		if !slices.Equal(st.StillOld, w.stillOld) {
			t.Errorf("step %d: still old %v, want %v", st.Step, st.StillOld, w.stillOld)
		}
		if got := impacts(st.Unavailable); !slices.Equal(got, w.down) {
			t.Errorf("step %d: unavailable %v, want %v", st.Step, got, w.down)
		}
		if got := impacts(st.BareQuorum); !slices.Equal(got, w.bare) {
			t.Errorf("step %d: bare quorum %v, want %v", st.Step, got, w.bare)
		}
		if got := risks(st.NoReset); !slices.Equal(got, w.noReset) {
			t.Errorf("step %d: no reset %v, want %v", st.Step, got, w.noReset)
		}
		if st.FloorMet != w.floorMet {
			t.Errorf("step %d: floor met %v", st.Step, st.FloorMet)
		}
	}
	if plan.Status != findings.Critical || plan.FloorMetAt == nil || *plan.FloorMetAt != 3 || plan.ToLevel != 4 {
		t.Errorf("plan status %s, floor met at %v, level %d", plan.Status, plan.FloorMetAt, plan.ToLevel)
	}
	// The last step takes every finding away.
	if got := briefs(plan.Steps[2].After.Findings); len(got) != 0 {
		t.Errorf("after the last step: %q", got)
	}
}

func TestPlanDowngrade(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams:   []snapshot.Asset{levelAsset(stream("FAST", "n1", "n1", "n2", "n3"), 4), levelAsset(stream("TTL", "n1", "n1", "n2", "n3"), 1)},
		Consumers: []snapshot.Asset{consumer("FAST", "C", "n1", "n1", "n2", "n3")},
		Meta:      []snapshot.MetaGroup{{Cluster: "c1", Leader: "n1", Peers: []string{"n1", "n2", "n3"}, Size: 3}}}
	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.12.15"), PlanScope{Servers: []string{"n3"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 1 || plan.Steps[0].Direction != "downgrade" || plan.Steps[0].Server != "n3" {
		t.Fatalf("steps %v", plan.Steps)
	}
	st := plan.Steps[0]
	if got := briefs(st.LevelFindings); !slices.Equal(got, []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/FAST/)"}) {
		t.Errorf("level findings %q", got)
	}
	if got := risks(st.NoReset); !slices.Equal(got, []string{"C=crashes_follower"}) {
		t.Errorf("no reset %v", got)
	}
	if st.Status != findings.Critical || plan.FloorMetAt != nil || !slices.Equal(plan.Unchanged, []string{}) {
		t.Errorf("status %s, floor met at %v, unchanged %v", st.Status, plan.FloorMetAt, plan.Unchanged)
	}

	// To 2.10: the TTL stream runs online on n3 and diverges.
	plan, err = MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.10.27"), PlanScope{Servers: []string{"n3"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(plan.Steps[0].LevelFindings, func(f findings.Finding) bool {
		return f.Stream == "TTL" && strings.Contains(f.Message, "its copy diverges")
	}) {
		t.Errorf("no diverging TTL stream in %q", briefs(plan.Steps[0].LevelFindings))
	}
}

func TestPlanScopeAndUnknownVersion(t *testing.T) {
	snap := oldCluster()
	snap.Servers = append(snap.Servers, srv("w1", "c2", "2.12.15", 3), srv("w2", "c2", "2.14.0", 4))
	snap.Streams = append(snap.Streams, levelAsset(stream("W", "w2", "w1", "w2"), 3))
	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.16.0"), PlanScope{Clusters: []string{"c2"}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, st := range plan.Steps {
		order = append(order, st.Server)
	}
	if !slices.Equal(order, []string{"w1", "w2"}) || plan.ToLevel != releases.LevelUnknown {
		t.Errorf("order %v, level %d", order, plan.ToLevel)
	}
	// c1 stays below the floor: it is never met. The level of 2.16 is not
	// known: W on it cannot be judged.
	if plan.FloorMetAt != nil {
		t.Errorf("floor met at %d", *plan.FloorMetAt)
	}
	if got := briefs(plan.Steps[1].LevelFindings); !slices.Equal(got, []string{"API_LEVEL_UNKNOWN(w1,,APP/W/)", "API_LEVEL_UNKNOWN(w2,,APP/W/)"}) {
		t.Errorf("level findings %q", got)
	}
	// An R2 group is down while either peer restarts.
	if got := impacts(plan.Steps[0].Unavailable); !slices.Equal(got, []string{"stream/W/"}) || plan.Steps[0].Status != findings.Critical {
		t.Errorf("unavailable %v, status %s", got, plan.Steps[0].Status)
	}

	for _, tt := range []struct {
		scope PlanScope
		want  string
	}{
		{PlanScope{Clusters: []string{"c9"}}, `no server of cluster "c9" answered the audit`},
		{PlanScope{Servers: []string{"typo"}}, `no server named "typo" answered the audit`},
		{PlanScope{Domains: []string{"hub"}}, `no server of domain "hub" answered the audit`},
	} {
		if _, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.14.0"), tt.scope); err == nil || err.Error() != tt.want {
			t.Errorf("%+v: err %v, want %q", tt.scope, err, tt.want)
		}
	}
	if _, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Version{}, PlanScope{}); err == nil {
		t.Error("a plan to no version was made")
	}
}

func TestPlanNothingToDo(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3}
	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.14.0"), PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Steps) != 0 || plan.Status != findings.OK || plan.FloorMetAt == nil || *plan.FloorMetAt != 0 || len(plan.Unchanged) != 3 {
		t.Errorf("%+v", plan)
	}
}

// TestPlanNamesOperatorAccounts: in operator mode an asset's account is its
// public key, and the plan carries the JWT name beside it.
func TestPlanNamesOperatorAccounts(t *testing.T) {
	snap := oldCluster()
	for _, as := range [][]snapshot.Asset{snap.Streams, snap.Consumers} {
		for i := range as {
			as[i].Account, as[i].AccountName = "ACZK", "APP"
		}
	}
	plan, err := MakePlan(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, version.Must("2.14.0"), PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	st := plan.Steps[0]
	if g := st.Unavailable[0]; g.Account != "ACZK" || g.AccountName != "APP" {
		t.Errorf("unavailable %+v", g)
	}
	if r := st.NoReset[0]; r.Account != "ACZK" || r.AccountName != "APP" {
		t.Errorf("no reset %+v", r)
	}
	if d := st.Depend[0]; d.AccountName != "APP" || !strings.Contains(d.Message, "APP (ACZK) > S") {
		t.Errorf("depends %+v", d)
	}
}
