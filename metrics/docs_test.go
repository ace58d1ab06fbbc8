package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const metricsDoc = "../docs/metrics.md"

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	docRow     = regexp.MustCompile("^\\| `(nats_version_auditor_[a-z_]+)` \\|([^|]*)\\| (.*) \\|$")
	docLabel   = regexp.MustCompile("`([a-z_]+)`")
)

// described is every metric the collectors can emit, by name, with its
// labels in order: the descriptors Describe sends, which Collect uses and
// which the registry holds each scrape to.
func described(t *testing.T) map[string][]string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 100)
	NewCollector(mixedResult, 0).Describe(ch)
	NewEventCollector(func() EventStats { return EventStats{} }).Describe(ch)
	close(ch)
	out := map[string][]string{}
	for d := range ch {
		s := d.String()
		name := descName.FindStringSubmatch(s)
		labels := descLabels.FindStringSubmatch(s)
		if name == nil || labels == nil {
			t.Fatalf("cannot read the descriptor %s", s)
		}
		var ls []string
		for l := range strings.SplitSeq(labels[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				ls = append(ls, l)
			}
		}
		out[name[1]] = ls
	}
	return out
}

// documented is docs/metrics.md's table: each metric's labels, in order,
// and its value column.
func documented(t *testing.T) (labels map[string][]string, values map[string]string) {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	labels, values = map[string][]string{}, map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, twice := values[m[1]]; twice {
			t.Errorf("%s lists %s twice", metricsDoc, m[1])
		}
		var ls []string
		for _, l := range docLabel.FindAllStringSubmatch(m[2], -1) {
			ls = append(ls, l[1])
		}
		labels[m[1]], values[m[1]] = ls, m[3]
	}
	if len(values) == 0 {
		t.Fatalf("%s: no metric rows found: the pattern no longer matches", metricsDoc)
	}
	return labels, values
}

// TestDocsListEveryMetric holds docs/metrics.md ("every metric") to what
// the collectors of this package can emit, the per-asset gauges of
// findings.Codes among them: a row for each metric and none for another,
// with its labels in order, and "counter:" exactly for the counters.
func TestDocsListEveryMetric(t *testing.T) {
	code := described(t)
	docLabels, docValues := documented(t)
	for name, labels := range code {
		got, ok := docLabels[name]
		if !ok {
			t.Errorf("%s lists no %s (labels %v)", metricsDoc, name, labels)
			continue
		}
		if !slices.Equal(got, labels) {
			t.Errorf("%s: %s has labels %v, the collector's %v", metricsDoc, name, got, labels)
		}
		if counter := strings.HasSuffix(name, "_total"); counter != strings.HasPrefix(docValues[name], "counter:") {
			t.Errorf("%s: %s's value %q, want it to start with \"counter:\" exactly for a counter (_total)", metricsDoc, name, docValues[name])
		}
	}
	for name := range docLabels {
		if _, ok := code[name]; !ok {
			t.Errorf("%s lists %s, which no collector here emits", metricsDoc, name)
		}
	}
}

// TestCountersEndInTotal: what the exposition calls a counter ends in
// _total and nothing else does, which the docs test above reads the type by.
func TestCountersEndInTotal(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(mixedResult, 0), NewEventCollector(func() EventStats { return EventStats{} }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if counter := mf.GetType() == dto.MetricType_COUNTER; counter != strings.HasSuffix(mf.GetName(), "_total") {
			t.Errorf("%s is a %s", mf.GetName(), mf.GetType())
		}
	}
}
