package auditor

import (
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// BenchmarkAssume100kConsumers is the what-if of one cluster's upgrade on
// the system of BenchmarkEvaluate100kConsumers, beside which it runs.
func BenchmarkAssume100kConsumers(b *testing.B) {
	asShipped(b)
	snap := syntheticSnapshot(100_000)
	p := Policy{Floor: version.DefaultFloor}
	as := []Assumption{{Target: "cluster/c0", Version: version.Must("2.14.3")}}
	for b.Loop() {
		if _, err := Assume(Evaluate(snap, p), p, as); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlan100kConsumers plans the upgrade of the five servers below the
// floor: five what-ifs.
func BenchmarkPlan100kConsumers(b *testing.B) {
	asShipped(b)
	snap := syntheticSnapshot(100_000)
	p := Policy{Floor: version.DefaultFloor}
	for b.Loop() {
		if _, err := MakePlan(Evaluate(snap, p), p, version.Must("2.14.3"), PlanScope{}); err != nil {
			b.Fatal(err)
		}
	}
}
