package auditor

import "testing"

// BenchmarkAssume100kConsumers is the what-if of one cluster's upgrade on
// the system of BenchmarkEvaluate100kConsumers, beside which it runs.
func BenchmarkAssume100kConsumers(b *testing.B) {
	snap := syntheticSnapshot(100_000)
	p := Policy{Floor: DefaultFloor}
	as := []Assumption{{Target: "cluster/c0", Version: mustVersion("2.14.3")}}
	for b.Loop() {
		if _, err := Assume(snap, p, as); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan100kConsumers plans the upgrade of the five servers below the
// floor: five what-ifs.
func BenchmarkPlan100kConsumers(b *testing.B) {
	snap := syntheticSnapshot(100_000)
	p := Policy{Floor: DefaultFloor}
	for b.Loop() {
		if _, err := MakePlan(snap, p, mustVersion("2.14.3"), PlanScope{}); err != nil {
			b.Fatal(err)
		}
	}
}
