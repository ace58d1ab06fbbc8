// Package rulefile holds the shape of a Prometheus rules file, which is also
// the spec of a PrometheusRule, for the rules generator and the deploy tests.
// Decoding is strict, so a misspelt key fails before it reaches Prometheus.
package rulefile

import "sigs.k8s.io/yaml"

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
