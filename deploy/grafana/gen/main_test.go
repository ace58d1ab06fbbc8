package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/natsaudit/nats-version-auditor/internal/modroot"
	"github.com/natsaudit/nats-version-auditor/metrics"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDashboardUpToDate fails when a committed copy differs from what the generator writes:
// edit main.go, then run go generate ./deploy/grafana/gen.
func TestDashboardUpToDate(t *testing.T) {
	if err := run(root(t), true); err != nil {
		t.Errorf("gen -check: %v", err)
	}
}

// exporterNames returns the metric names and label names package metrics exposes, read from the
// collector's own descriptors, so that a renamed metric fails here and not on a dashboard.
func exporterNames(t *testing.T) (names, labelNames map[string]bool) {
	t.Helper()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	varLabels := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	ch := make(chan *prometheus.Desc, 64)
	metrics.NewCollector(func() findings.Result { return findings.Result{} }, 0).Describe(ch)
	close(ch)
	names = map[string]bool{}
	// Target labels Prometheus Operator adds to every scraped series.
	labelNames = map[string]bool{"namespace": true, "job": true, "instance": true, "pod": true, metrics.SystemLabel: true}
	for d := range ch {
		s := d.String()
		if m := fqName.FindStringSubmatch(s); m != nil {
			names[m[1]] = true
		}
		if m := varLabels.FindStringSubmatch(s); m != nil {
			for _, l := range strings.Split(m[1], ",") {
				if c, ok := strings.CutPrefix(l, "c("); ok {
					l = strings.TrimSuffix(c, ")")
				}
				if l != "" {
					labelNames[l] = true
				}
			}
		}
	}
	if !names["nats_version_auditor_up"] || !labelNames["server_name"] {
		t.Fatalf("could not read the collector's descriptors: %v %v", names, labelNames)
	}
	return names, labelNames
}

// grafanaVars replaces the dashboard's variables in range and interval positions, where PromQL
// would not parse them; inside label values they are plain strings and stay.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")

// checkExpr parses a panel query with Prometheus' own PromQL parser and returns the problems:
// a syntax error, or a metric or label the exporter does not have. Labels made by the query
// itself (label_replace) are allowed.
func checkExpr(expr string, names, labelNames map[string]bool) []string {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return []string{fmt.Sprintf("does not parse: %v", err)}
	}
	made := map[string]bool{}
	var problems []string
	seen := 0
	label := func(l string) {
		if !labelNames[l] && !made[l] {
			problems = append(problems, "label "+l+" is not the exporter's")
		}
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok && c.Func.Name == "label_replace" && len(c.Args) > 1 {
			if s, ok := c.Args[1].(*parser.StringLiteral); ok {
				made[s.Val] = true
			}
		}
		return nil
	})
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			seen++
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
					continue
				}
				label(m.Name)
			}
			if !names[name] && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
				problems = append(problems, "metric "+name+" is not one the exporter exposes")
			}
		case *parser.AggregateExpr:
			for _, l := range n.Grouping {
				label(l)
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, l := range slices.Concat(n.VectorMatching.MatchingLabels, n.VectorMatching.Include) {
					label(l)
				}
			}
		}
		return nil
	})
	if seen == 0 {
		problems = append(problems, "reads no metric")
	}
	return problems
}

// dashboardQueries returns every PromQL expression of the committed dashboard: the panels'
// targets, and the selectors inside the variables' label_values().
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), filepath.FromSlash(dashboardPath)))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out["panel "+p.Title] = append(out["panel "+p.Title], tg.Expr)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), *([a-z_]+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		out["variable "+v.Name] = append(out["variable "+v.Name], m[1])
	}
	return out
}

// TestDashboardQueries: every query parses with the PromQL parser and uses only metrics and
// labels the exporter exposes.
func TestDashboardQueries(t *testing.T) {
	names, labelNames := exporterNames(t)
	qs := dashboardQueries(t)
	if len(qs) < 15 {
		t.Fatalf("only %d panels and variables with queries", len(qs))
	}
	for where, exprs := range qs {
		for _, e := range exprs {
			for _, p := range checkExpr(e, names, labelNames) {
				t.Errorf("%s: %s\n%s", where, p, e)
			}
		}
	}
}

// TestCheckExprCatches: the check above fails on what it is there to catch.
func TestCheckExprCatches(t *testing.T) {
	names, labelNames := exporterNames(t)
	for expr, want := range map[string]string{
		`max(nats_version_auditor_up{namespace=~"$namespace"}`: "does not parse",
		`nats_version_auditor_servers_below_floor`:             "not one the exporter exposes",
		`nats_server_info`: "not one the exporter exposes",
		`max by (server_release) (nats_version_auditor_server_below_floor)`:                               "label server_release",
		`rate(nats_version_auditor_audits_total[$__rate_interval])`:                                       "",
		`label_replace(nats_version_auditor_up, "role", "x", "", "") * on (role) nats_version_auditor_up`: "",
	} {
		got := strings.Join(checkExpr(expr, names, labelNames), "; ")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("checkExpr(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestDashboardPanels: the panels an operator needs during a rollout are there.
func TestDashboardPanels(t *testing.T) {
	qs := dashboardQueries(t)
	for _, c := range []struct{ title, metric string }{
		{"Status", "nats_version_auditor_status"},
		{"Last complete audit", "nats_version_auditor_last_success_timestamp_seconds"},
		{"Version matrix", "nats_version_auditor_server_info"},
		{"Servers below the floor", "nats_version_auditor_server_below_floor"},
		{"Consumers led below the floor, and with a follower below it", "CONSUMER_REPLICA_BELOW_FLOOR"},
		{"Missing servers", "nats_version_auditor_server_missing"},
		{"Leafnode gaps", "nats_version_auditor_leafnode_unaudited"},
		{"Audit duration", "nats_version_auditor_audit_duration_seconds"},
	} {
		if !strings.Contains(strings.Join(qs["panel "+c.title], "\n"), c.metric) {
			t.Errorf("no panel %q reading %s", c.title, c.metric)
		}
	}
}

// TestDashboardTellsSystemsApart: a NATS system is (namespace, nats_system), as in the alert
// rules. The dashboard has a variable for each, every selector of a panel filters on both, and
// every aggregation that keeps namespace keeps nats_system: two systems watched from one
// namespace, whose servers share names, are never merged into one row or line.
func TestDashboardTellsSystemsApart(t *testing.T) {
	if _, ok := dashboardQueries(t)["variable "+metrics.SystemLabel]; !ok {
		t.Fatalf("no dashboard variable %s", metrics.SystemLabel)
	}
	inspectPanels(t, func(where string, n parser.Node) {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if !slices.ContainsFunc(n.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == metrics.SystemLabel }) {
				t.Errorf("%s: %s does not filter on %s", where, n, metrics.SystemLabel)
			}
		case *parser.AggregateExpr:
			if slices.Contains(n.Grouping, "namespace") && !slices.Contains(n.Grouping, metrics.SystemLabel) {
				t.Errorf("%s: %s groups by namespace without %s", where, n.Op, metrics.SystemLabel)
			}
		case *parser.BinaryExpr:
			if m := n.VectorMatching; m != nil && slices.Contains(m.MatchingLabels, "namespace") && !slices.Contains(m.MatchingLabels, metrics.SystemLabel) {
				t.Errorf("%s: matches on namespace without %s", where, metrics.SystemLabel)
			}
		}
	})
}

// inspectPanels parses every panel's query and calls visit on each node.
func inspectPanels(t *testing.T, visit func(where string, n parser.Node)) {
	t.Helper()
	for where, exprs := range dashboardQueries(t) {
		if strings.HasPrefix(where, "variable ") {
			continue
		}
		for _, expr := range exprs {
			e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				visit(where, n)
				return nil
			})
		}
	}
}

// TestDashboardNamesAccounts: in operator (JWT) mode account is an account's public key and
// account_name its JWT name. Every table that keeps account of a metric with account_name
// keeps account_name too, so that a row reads APP beside its key (in plain mode the label is
// empty and Grafana shows no column for it).
func TestDashboardNamesAccounts(t *testing.T) {
	ch := make(chan *prometheus.Desc, 64)
	metrics.NewCollector(func() findings.Result { return findings.Result{} }, 0).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	named := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && strings.Contains(d.String(), "account_name") {
			named[m[1]] = true
		}
	}
	checked := 0
	inspectPanels(t, func(where string, n parser.Node) {
		agg, ok := n.(*parser.AggregateExpr)
		if !ok || !slices.Contains(agg.Grouping, "account") {
			return
		}
		parser.Inspect(agg.Expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && named[vs.Name] {
				checked++
				if !slices.Contains(agg.Grouping, "account_name") {
					t.Errorf("%s: %s by (%s) of %s keeps account without account_name", where, agg.Op, strings.Join(agg.Grouping, ", "), vs.Name)
				}
			}
			return nil
		})
	})
	if checked == 0 {
		t.Error("no aggregation of a metric with account_name: the consumers table is gone?")
	}
}
