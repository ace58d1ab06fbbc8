// Package rulefile holds the shape of a Prometheus rules file, which is also
// the spec of a PrometheusRule, for the rules generator and the deploy tests.
// Decoding is strict, so a misspelt key fails before it reaches Prometheus.
package rulefile

import (
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// File is a Prometheus rules file.
type File struct {
	Groups []Group `json:"groups"`
}

// Group is a rule group.
type Group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is an alerting or recording rule.
type Rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Parse decodes a rules file strictly: unknown keys are errors.
func Parse(data []byte) (File, error) {
	var f File
	err := yaml.UnmarshalStrict(data, &f)
	return f, err
}

// FindingsMetric is the series of finding counts by code and severity that
// the catch-all alerts select on.
const FindingsMetric = "nats_version_auditor_findings"

// FindingCodes reads which registered finding codes expr alerts on: selected
// are those whose FindingsMetric series a selector of expr matches (by its
// code and severity matchers); excluded are those only a negative code
// matcher keeps out, the codes with alerts of their own. Both come in the
// order of findings.Codes.
func FindingCodes(expr string) (selected, excluded []findings.CodeInfo, err error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, nil, err
	}
	var selectors [][]*labels.Matcher
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name == FindingsMetric {
			selectors = append(selectors, vs.LabelMatchers)
		}
		return nil
	})
	for _, k := range findings.Codes {
		sel, excl := false, false
		for _, ms := range selectors {
			severity, code, negated := true, true, false
			for _, m := range ms {
				switch m.Name {
				case "severity":
					severity = severity && m.Matches(k.Severity.String())
				case "code":
					if !m.Matches(string(k.Code)) {
						code = false
						negated = negated || m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp
					}
				}
			}
			sel = sel || (severity && code)
			excl = excl || (severity && negated)
		}
		switch {
		case sel:
			selected = append(selected, k)
		case excl:
			excluded = append(excluded, k)
		}
	}
	return selected, excluded, nil
}
