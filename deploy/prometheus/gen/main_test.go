package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/natsaudit/nats-version-auditor/deploy/prometheus/rulefile"
	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGeneratedFilesUpToDate fails when a copy of rules.yml differs from what the generator
// would write now: edit deploy/prometheus/rules.yml, then run go generate ./deploy/prometheus/gen.
func TestGeneratedFilesUpToDate(t *testing.T) {
	r := root(t)
	if outs, err := generate(r); err != nil || len(outs) != 6 {
		t.Fatalf("generator writes %d files (%v), want 6 (three copies of the rules, the runbook, the inhibition for the chart and the kustomize base)", len(outs), err)
	}
	if err := run(r, true); err != nil {
		t.Errorf("gen -check: %v", err)
	}
}

// TestGeneratedCopiesCarryTheSourceGroups checks that both copies hold exactly the groups of the
// source, and that the PrometheusRule is one.
func TestGeneratedCopiesCarryTheSourceGroups(t *testing.T) {
	r := root(t)
	src, err := os.ReadFile(filepath.Join(r, sourcePath))
	if err != nil {
		t.Fatal(err)
	}
	var want rulefile.File
	if err := yaml.UnmarshalStrict(src, &want); err != nil {
		t.Fatal(err)
	}
	outs, err := generate(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Path == runbookPath || o.Path == chartInhibitPath || o.Path == baseInhibitPath {
			continue // TestRunbookCodes; TestChartInhibitRules and the deploy tests
		}
		if o.Path != sidecarValuesPath && !bytes.HasPrefix(o.Content, []byte(header)) {
			t.Errorf("%s does not start with the generated-file header", o.Path)
		}
		var got rulefile.File
		switch o.Path {
		case sidecarValuesPath:
			// The last extraResources entry is the PrometheusRule; the rest of the file is checked
			// by the deploy tests.
			var vals struct {
				ExtraResources []struct {
					Kind string        `json:"kind"`
					Spec rulefile.File `json:"spec"`
				} `json:"extraResources"`
			}
			if err := yaml.Unmarshal(o.Content, &vals); err != nil {
				t.Fatalf("%s: %v", o.Path, err)
			}
			n := len(vals.ExtraResources)
			if n == 0 || vals.ExtraResources[n-1].Kind != "PrometheusRule" {
				t.Fatalf("%s: the last extraResources entry is not the PrometheusRule", o.Path)
			}
			got = vals.ExtraResources[n-1].Spec
		case prometheusRulePath:
			var pr struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec rulefile.File `json:"spec"`
			}
			if err := yaml.UnmarshalStrict(o.Content, &pr); err != nil {
				t.Fatalf("%s: %v", o.Path, err)
			}
			if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" || pr.Metadata.Name == "" {
				t.Errorf("%s: %s/%s %q is not a named PrometheusRule", o.Path, pr.APIVersion, pr.Kind, pr.Metadata.Name)
			}
			got = pr.Spec
		default:
			if err := yaml.UnmarshalStrict(o.Content, &got); err != nil {
				t.Fatalf("%s: %v", o.Path, err)
			}
		}
		a, _ := yaml.Marshal(want)
		b, _ := yaml.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: groups differ from %s", o.Path, sourcePath)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for name, src := range map[string]string{
		"unknown key":    "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    labels: {severity: warning}\n    annotations: {summary: s, description: d}\n    fro: 5m\n",
		"no severity":    "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    annotations: {summary: s, description: d}\n",
		"bad severity":   "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    labels: {severity: page}\n    annotations: {summary: s, description: d}\n",
		"no summary":     "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    labels: {severity: warning}\n    annotations: {description: d}\n",
		"no description": "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    labels: {severity: warning}\n    annotations: {summary: s}\n",
		"no expr":        "groups:\n- name: g\n  rules:\n  - alert: A\n    labels: {severity: warning}\n    annotations: {summary: s, description: d}\n",
		"repeated group": "groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n",
		"no groups":      "groups: []\n",
	} {
		if err := validate([]byte(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestIndentAndStrip(t *testing.T) {
	src := "# a\n#\n\ngroups:\n  - name: g\n    rules:\n      - expr: |\n          a\n\n          b\n"
	body := stripLeadingComments([]byte(src))
	if !strings.HasPrefix(string(body), "groups:") {
		t.Fatalf("leading comments kept: %q", body)
	}
	got := string(indent(body, "  "))
	want := "  groups:\n    - name: g\n      rules:\n        - expr: |\n            a\n\n            b\n"
	if got != want {
		t.Fatalf("indent:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunbookCodes: each alert on finding codes gets the list of the codes it reports in its
// runbook section, and a list without its alert, or an alert without its list, is an error.
func TestRunbookCodes(t *testing.T) {
	rules := []byte("groups:\n- name: g\n  rules:\n" +
		"  - alert: Crit\n    expr: sum(nats_version_auditor_findings{severity=\"CRITICAL\", code=~\"ASSET_.*\", code!~\"ASSET_(CRASHES|HALTS|OP|PEER)_.*\"}) > 0\n" +
		"  - alert: Other\n    expr: up == 0\n")
	start := "<!-- codes of Crit: generated -->\n"
	got, err := runbookCodes([]byte("# R\n\n"+start+"- stale\n"+codesEnd+"after\n"), rules)
	want := "# R\n\n" + start +
		"- `ASSET_API_LEVEL_UNSUPPORTED` (CRITICAL): a stream's or consumer's required API level (its _nats.req.level, or durable sourcing, which that does not record) is above the API level of a server in its peer set.\n" +
		codesEnd + "after\n"
	if err != nil || string(got) != want {
		t.Errorf("runbookCodes: %v\n%s\nwant\n%s", err, got, want)
	}
	for name, runbook := range map[string]string{
		"no list":            "# R\n",
		"no end":             "# R\n" + start + "- x\n",
		"list of no codes":   "# R\n" + start + codesEnd + "<!-- codes of Other: x -->\n" + codesEnd,
		"list of no alert":   "# R\n" + start + codesEnd + "<!-- codes of Gone: x -->\n" + codesEnd,
		"start without line": "# R\n<!-- codes of Crit",
	} {
		if _, err := runbookCodes([]byte(runbook), rules); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestChartInhibitRules: the chart's inhibitRules are the example's, matcher for matcher (the
// chart test renders them and holds them to the rules' labels).
func TestChartInhibitRules(t *testing.T) {
	f, err := chartInhibitRules(root(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(f.Content, []byte(inhibitHeader)) {
		t.Errorf("%s does not start with the generated-file header", f.Path)
	}
	var spec struct {
		InhibitRules []monitoringv1alpha1.InhibitRule `json:"inhibitRules"`
	}
	if err := yaml.UnmarshalStrict(f.Content, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.InhibitRules) != 4 {
		t.Fatalf("%d rules, want the example's 4", len(spec.InhibitRules))
	}
	first := spec.InhibitRules[0]
	if len(first.SourceMatch) != 1 || first.SourceMatch[0] != (monitoringv1alpha1.Matcher{Name: "alertname", Value: "NatsServerBelowVersionFloor", MatchType: monitoringv1alpha1.MatchEqual}) ||
		len(first.TargetMatch) != 1 || first.TargetMatch[0].MatchType != monitoringv1alpha1.MatchRegexp {
		t.Errorf("first rule %+v, want alertname=\"NatsServerBelowVersionFloor\" inhibiting a regexp of the consumer alerts", first)
	}
	for _, bad := range [][]string{{`alertname~"A"`}, nil} {
		if _, err := operatorMatchers(bad); err == nil {
			t.Errorf("operatorMatchers(%q) accepted", bad)
		}
	}
}
