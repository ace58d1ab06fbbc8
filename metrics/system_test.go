package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// TestWithSystemLabelsEverySeries: every series of every collector registered through
// WithSystem carries the system, the process collector's included (the Stale alert joins
// process_start_time_seconds on it); without a system nothing is added.
func TestWithSystemLabelsEverySeries(t *testing.T) {
	for _, system := range []string{"nats/nats", ""} {
		reg := prometheus.NewPedanticRegistry()
		r := WithSystem(reg, system)
		r.MustRegister(NewCollector(mixedResult, 0), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				n++
				got, has := "", false
				for _, l := range m.GetLabel() {
					if l.GetName() == SystemLabel {
						got, has = l.GetValue(), true
					}
				}
				if has != (system != "") || got != system {
					t.Errorf("system %q: %s has %s=%q (present %v)", system, mf.GetName(), SystemLabel, got, has)
				}
			}
		}
		if n < 10 {
			t.Fatalf("system %q: gathered only %d series", system, n)
		}
	}
}
