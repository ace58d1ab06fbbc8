package auditor

import (
	"fmt"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// podCluster is oldCluster with the official chart's pod names: nats-0 the
// meta leader, nats-1 leading the R3 stream and its consumer, nats-2
// hosting an R1 stream.
func podCluster() snapshot.Snapshot {
	return snapshot.Snapshot{
		Servers:       []snapshot.Server{srv("nats-0", "c1", "2.12.15", 3), srv("nats-1", "c1", "2.12.15", 3), srv("nats-2", "c1", "2.12.15", 3)},
		ExpectedCount: 3,
		Streams:       []snapshot.Asset{stream("S", "nats-1", "nats-0", "nats-1", "nats-2"), stream("LOCAL", "nats-2", "nats-2")},
		Consumers:     []snapshot.Asset{consumer("S", "C", "nats-1", "nats-0", "nats-1", "nats-2")},
		Meta:          []snapshot.MetaGroup{{Cluster: "c1", Leader: "nats-0", Peers: []string{"nats-0", "nats-1", "nats-2"}, Size: 3}},
	}
}

func TestPlanNamesStatefulSetPods(t *testing.T) {
	p := Policy{Floor: version.DefaultFloor}
	rollout := func(t *testing.T, snap snapshot.Snapshot, scope PlanScope) (*Plan, string) {
		t.Helper()
		plan, err := MakePlan(Evaluate(&snap, p), p, version.Must("2.14.0"), scope)
		if err != nil {
			t.Fatal(err)
		}
		steps := ""
		for _, st := range plan.Steps {
			if st.Pod == nil {
				steps += st.Server + "(no pod) "
				continue
			}
			steps += fmt.Sprintf("%s=%s/%d ", st.Server, st.Pod.StatefulSet, st.Pod.Ordinal)
		}
		return plan, steps
	}
	strategies := func(plan *Plan) string {
		out := ""
		for _, r := range plan.StatefulSets {
			out += fmt.Sprintf("%s:%s%v ", r.StatefulSet, r.Strategy, r.Pods)
		}
		return out
	}

	t.Run("the meta leader at ordinal 0: a partition follows the plan", func(t *testing.T) {
		plan, steps := rollout(t, podCluster(), PlanScope{})
		if want := "nats-2=nats/2 nats-1=nats/1 nats-0=nats/0 "; steps != want {
			t.Fatalf("steps %q, want %q", steps, want)
		}
		if got, want := strategies(plan), "nats:partition[nats-2 nats-1 nats-0] "; got != want {
			t.Errorf("statefulsets %q, want %q", got, want)
		}
	})
	t.Run("the meta leader at the highest ordinal: OnDelete", func(t *testing.T) {
		snap := podCluster()
		snap.Meta[0].Leader = "nats-2"
		plan, _ := rollout(t, snap, PlanScope{})
		if got, want := strategies(plan), "nats:OnDelete[nats-0 nats-1 nats-2] "; got != want {
			t.Errorf("statefulsets %q, want %q", got, want)
		}
	})
	t.Run("a pod already on the release: OnDelete, or the partition restarts it", func(t *testing.T) {
		snap := podCluster()
		snap.Servers[2] = srv("nats-2", "c1", "2.14.0", 4)
		plan, _ := rollout(t, snap, PlanScope{})
		if got, want := strategies(plan), "nats:OnDelete[nats-1 nats-0] "; got != want {
			t.Errorf("statefulsets %q, want %q", got, want)
		}
	})
	t.Run("names that are not one set's pods: no pods", func(t *testing.T) {
		snap := podCluster()
		snap.Servers[1].Name = "other-1"
		plan, steps := rollout(t, snap, PlanScope{})
		if len(plan.StatefulSets) != 0 || steps != "other-1(no pod) nats-2(no pod) nats-0(no pod) " {
			t.Errorf("statefulsets %q, steps %q: want none", strategies(plan), steps)
		}
		plan, steps = rollout(t, oldCluster(), PlanScope{})
		if len(plan.StatefulSets) != 0 || steps != "n3(no pod) n2(no pod) n1(no pod) " {
			t.Errorf("n1-n3: statefulsets %q, steps %q: want none", strategies(plan), steps)
		}
	})
}
