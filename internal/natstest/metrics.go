package natstest

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one /metrics page of the auditor, parsed.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses a /metrics page in the text exposition format.
func ParseMetrics(text string) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(text))
}

// Value is the value of a family with a single series, gauge or counter;
// -1 when the family has none or several.
func (m Metrics) Value(name string) float64 {
	ms := m[name].GetMetric()
	if len(ms) != 1 {
		return -1
	}
	if c := ms[0].GetCounter(); c != nil {
		return c.GetValue()
	}
	return ms[0].GetGauge().GetValue()
}

// ServerVersion is the version server_info gives the named server, or "".
func (m Metrics) ServerVersion(server string) string {
	for _, s := range m["nats_version_auditor_server_info"].GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["server_name"] == server {
			return labels["server_version"]
		}
	}
	return ""
}
