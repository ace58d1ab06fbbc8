package deploy_test

import (
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/deploy/prometheus/rulefile"

	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/natsaudit/nats-version-auditor/metrics"
)

const (
	rulesPath      = "deploy/prometheus/rules.yml"
	rulesTestPath  = "deploy/prometheus/rules_test.yml"
	chartRulesPath = chartDir + "/files/rules.yml"
	baseRulePath   = "deploy/kubernetes/prometheusrule.yaml"
)

func sourceRules(t testing.TB) rulefile.File {
	t.Helper()
	var f rulefile.File
	if err := strict(readFile(t, rulesPath), &f); err != nil {
		t.Fatalf("%s: %v", rulesPath, err)
	}
	return f
}

func alerts(f rulefile.File) []rulefile.Rule {
	var out []rulefile.Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// sameRules fails unless got holds exactly the groups of deploy/prometheus/rules.yml.
func sameRules(t testing.TB, what string, got rulefile.File) {
	t.Helper()
	a, _ := yaml.Marshal(sourceRules(t))
	b, _ := yaml.Marshal(got)
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from %s (run: go generate ./deploy/prometheus/gen)", what, rulesPath)
	}
}

func TestRuleCopiesMatchTheSource(t *testing.T) {
	var chart rulefile.File
	if err := strict(readFile(t, chartRulesPath), &chart); err != nil {
		t.Fatalf("%s: %v", chartRulesPath, err)
	}
	sameRules(t, chartRulesPath, chart)

	objs := decodeObjects(t, baseRulePath, readFile(t, baseRulePath))
	sameRules(t, baseRulePath, one[prometheusRule](t, baseRulePath, objs).Spec)
	// The chart's rendering of its copy is checked in TestHelmTemplateMonitoring.
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool")
	// The kustomize PrometheusRule's spec, as a rules file promtool can read.
	objs := decodeObjects(t, baseRulePath, readFile(t, baseRulePath))
	spec, err := yaml.Marshal(one[prometheusRule](t, baseRulePath, objs).Spec)
	if err != nil {
		t.Fatal(err)
	}
	extracted := filepath.Join(t.TempDir(), "prometheusrule-spec.yml")
	if err := os.WriteFile(extracted, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path(t, rulesPath), path(t, chartRulesPath), extracted} {
		out, err := run(t, nil, promtool, "check", "rules", "--lint=all", "--lint-fatal", f)
		t.Logf("promtool check rules %s:\n%s", filepath.Base(f), out)
		if err != nil {
			t.Errorf("promtool check rules %s: %v", f, err)
		}
	}
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	out, err := run(t, nil, tool(t, "promtool"), "test", "rules", path(t, rulesTestPath))
	t.Logf("promtool test rules:\n%s", out)
	if err != nil {
		t.Errorf("promtool test rules: %v", err)
	}
}

// rulesTests is the part of a promtool unit test file this test reads.
type rulesTests struct {
	RuleFiles          []string `json:"rule_files"`
	EvaluationInterval string   `json:"evaluation_interval"`
	Tests              []struct {
		Interval    string `json:"interval"`
		InputSeries []struct {
			Series string `json:"series"`
			Values string `json:"values"`
		} `json:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `json:"exp_labels"`
				ExpAnnotations map[string]string `json:"exp_annotations"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestRulesTestsCoverEveryAlert requires, for each alert, a test where it fires and one where
// it does not.
func TestRulesTestsCoverEveryAlert(t *testing.T) {
	var rt rulesTests
	if err := strict(readFile(t, rulesTestPath), &rt); err != nil {
		t.Fatalf("%s: %v", rulesTestPath, err)
	}
	if !slices.Equal(rt.RuleFiles, []string{"rules.yml"}) {
		t.Errorf("%s tests %v, want rules.yml", rulesTestPath, rt.RuleFiles)
	}
	firing, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	names := map[string]bool{}
	for _, a := range alerts(sourceRules(t)) {
		names[a.Alert] = true
		if !firing[a.Alert] {
			t.Errorf("%s: no test where %s fires", rulesTestPath, a.Alert)
		}
		if !quiet[a.Alert] {
			t.Errorf("%s: no test where %s does not fire", rulesTestPath, a.Alert)
		}
	}
	for n := range maps.Keys(firing) {
		if !names[n] {
			t.Errorf("%s tests %s, which rules.yml does not have", rulesTestPath, n)
		}
	}
}

var templateVar = regexp.MustCompile(`\$(labels|value)\b`)

func TestAlertConventions(t *testing.T) {
	as := alerts(sourceRules(t))
	seen := map[string]bool{}
	for _, a := range as {
		if seen[a.Alert] {
			t.Errorf("alert %s defined twice", a.Alert)
		}
		seen[a.Alert] = true
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", a.Alert, s)
		}
		if a.Annotations["summary"] == "" {
			t.Errorf("%s: no summary", a.Alert)
		}
		if !templateVar.MatchString(a.Annotations["description"]) {
			t.Errorf("%s: the description does not use $labels or $value", a.Alert)
		}
		if a.For == "" {
			t.Errorf("%s: no for: a single scrape would page", a.Alert)
		}
		for k := range a.Annotations {
			if k != "summary" && k != "description" && k != "runbook_url" {
				t.Errorf("%s: unexpected annotation %s", a.Alert, k)
			}
		}
	}
	// The alerts issue 3 asks for, by what they watch.
	for _, want := range []string{
		"nats_version_auditor_server_below_floor", "nats_version_auditor_cluster_versions",
		"nats_version_auditor_consumer_leader_below_floor", "nats_version_auditor_consumer_replica_below_floor",
		"nats_version_auditor_leafnode_unaudited", "nats_version_auditor_server_missing",
		"absent_over_time(nats_version_auditor_up[6h])", "nats_version_auditor_last_success_timestamp_seconds",
	} {
		if !slices.ContainsFunc(as, func(a rulefile.Rule) bool { return strings.Contains(a.Expr, want) }) {
			t.Errorf("no alert on %s", want)
		}
	}
}

var (
	metricName = regexp.MustCompile(`\bnats_version_auditor_[a-z_]+`)
	fqName     = regexp.MustCompile(`fqName: "([^"]+)"`)
	varLabels  = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	byClause   = regexp.MustCompile(`\bby \(([^)]*)\)`)
	labelRef   = regexp.MustCompile(`\$labels\.([a-zA-Z_]+)`)
	codeMatch  = regexp.MustCompile(`code(?:=|!=|=~|!~)"([^"]*)"`)
	sevMatch   = regexp.MustCompile(`severity(?:=|!=|=~|!~)"([^"]*)"`)
)

// TestRulesUseTheCollectorsNames holds the rules to what package metrics exports: every metric
// name and label they use, every finding code and severity they match.
func TestRulesUseTheCollectorsNames(t *testing.T) {
	ch := make(chan *prometheus.Desc, 64)
	metrics.NewCollector(func() findings.Result { return findings.Result{} }, 0).Describe(ch)
	close(ch)
	names := map[string]bool{}
	labelNames := map[string]bool{"namespace": true, "job": true, "instance": true, metrics.SystemLabel: true}
	for d := range ch {
		s := d.String()
		if m := fqName.FindStringSubmatch(s); m != nil {
			names[m[1]] = true
		}
		if m := varLabels.FindStringSubmatch(s); m != nil {
			for _, l := range strings.Split(m[1], ",") {
				if c, ok := strings.CutPrefix(l, "c("); ok { // a constrained label: c(name)
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
	codes, severities := map[string]bool{}, map[string]bool{}
	for _, c := range findings.Codes {
		codes[string(c.Code)] = true
		severities[c.Severity.String()] = true
	}

	for _, a := range alerts(sourceRules(t)) {
		text := a.Expr + " " + a.Annotations["summary"] + " " + a.Annotations["description"]
		for _, n := range metricName.FindAllString(text, -1) {
			if !names[n] {
				t.Errorf("%s uses %s, which package metrics does not export", a.Alert, n)
			}
		}
		var ls []string
		for _, m := range byClause.FindAllStringSubmatch(a.Expr, -1) {
			ls = append(ls, strings.Split(m[1], ",")...)
		}
		for _, m := range labelRef.FindAllStringSubmatch(text, -1) {
			ls = append(ls, m[1])
		}
		for _, l := range ls {
			if l = strings.TrimSpace(l); !labelNames[l] {
				t.Errorf("%s uses label %s, which no metric of package metrics has", a.Alert, l)
			}
		}
		for _, m := range codeMatch.FindAllStringSubmatch(a.Expr, -1) {
			for _, c := range strings.Split(m[1], "|") {
				if !codes[c] {
					t.Errorf("%s matches finding code %s, which package auditor does not have", a.Alert, c)
				}
			}
		}
		for _, m := range sevMatch.FindAllStringSubmatch(a.Expr, -1) {
			if !severities[m[1]] {
				t.Errorf("%s matches severity %s, which no finding has", a.Alert, m[1])
			}
		}
	}
}

const (
	runbookPath = "deploy/RUNBOOK.md"
	runbookURL  = "https://github.com/natsaudit/nats-version-auditor/blob/main/" + runbookPath + "#"
	inhibitPath = "deploy/prometheus/alertmanager-inhibit.yml"
)

// TestRunbookCoversEveryAlert: each alert links a section of deploy/RUNBOOK.md named after it,
// and that section says what the alert means and what to do.
func TestRunbookCoversEveryAlert(t *testing.T) {
	runbook := string(readFile(t, runbookPath))
	sections := map[string]string{}
	for _, s := range strings.Split(runbook, "\n## ")[1:] {
		title, body, _ := strings.Cut(s, "\n")
		sections[strings.TrimSpace(title)] = body
	}
	for _, a := range alerts(sourceRules(t)) {
		if got, want := a.Annotations["runbook_url"], runbookURL+strings.ToLower(a.Alert); got != want {
			t.Errorf("%s: runbook_url %q, want %q", a.Alert, got, want)
		}
		body, ok := sections[a.Alert]
		if !ok {
			t.Errorf("%s has no section \"## %s\" in %s", a.Alert, a.Alert, runbookPath)
			continue
		}
		for _, want := range []string{"**Means**", "**Do**"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the runbook section lacks %s", a.Alert, want)
			}
		}
		codes, _, err := rulefile.FindingCodes(a.Expr)
		if err != nil {
			t.Fatalf("%s: %v", a.Alert, err)
		}
		for _, k := range codes {
			if !strings.Contains(body, "`"+string(k.Code)+"` ("+k.Severity.String()+"): "+k.Description) {
				t.Errorf("%s reports %s, which its runbook section does not list with its words", a.Alert, k.Code)
			}
		}
	}
}

// TestEveryFindingCodeAlerts holds the rules to the registry of finding codes: a finding of
// every code alerts, once, by a catch-all alert on its severity unless that alert leaves it to
// an alert of its own.
func TestEveryFindingCodeAlerts(t *testing.T) {
	reportedBy := map[findings.Code][]string{}
	leftOut := map[findings.Code]bool{}
	for _, a := range alerts(sourceRules(t)) {
		selected, excluded, err := rulefile.FindingCodes(a.Expr)
		if err != nil {
			t.Fatalf("%s: %v", a.Alert, err)
		}
		for _, k := range selected {
			reportedBy[k.Code] = append(reportedBy[k.Code], a.Alert)
		}
		for _, k := range excluded {
			leftOut[k.Code] = true
		}
	}
	if len(reportedBy) == 0 || len(leftOut) == 0 {
		t.Fatalf("no catch-all alert read: reported %v, left out %v", reportedBy, leftOut)
	}
	for _, k := range findings.Codes {
		switch by := reportedBy[k.Code]; {
		case len(by) > 1:
			t.Errorf("%s alerts twice: %v", k.Code, by)
		case len(by) == 0 && !leftOut[k.Code]:
			t.Errorf("%s (%s) never alerts: no alert on %s selects it", k.Code, k.Severity, rulefile.FindingsMetric)
		}
	}
}

// alertLabels returns the labels an alert's notifications carry: its by clause (the first, the
// outermost aggregation of every alert here) and its own labels.
func alertLabels(a rulefile.Rule) map[string]bool {
	out := map[string]bool{"alertname": true}
	if m := byClause.FindStringSubmatch(a.Expr); m != nil {
		for _, l := range strings.Split(m[1], ",") {
			out[strings.TrimSpace(l)] = true
		}
	}
	for l := range a.Labels {
		out[l] = true
	}
	return out
}

var queryMatchers = regexp.MustCompile(`printf "[a-z_]+\{([^}]*)\}"`)

// TestRulesTellSystemsApart: a NATS system is (namespace, nats_system). Every aggregation of
// every alert keeps both, every query a description makes for the alert's own system selects
// both, and every inhibition rule that requires namespace equal requires nats_system equal: two
// systems watched from one namespace never share an alert or silence each other's.
func TestRulesTellSystemsApart(t *testing.T) {
	for _, a := range alerts(sourceRules(t)) {
		bys := byClause.FindAllStringSubmatch(a.Expr, -1)
		if len(bys) == 0 {
			t.Errorf("%s aggregates by nothing: every auditor of every system would be its own alert", a.Alert)
		}
		for _, m := range bys {
			ls := strings.Split(m[1], ",")
			for i := range ls {
				ls[i] = strings.TrimSpace(ls[i])
			}
			if !slices.Contains(ls, "namespace") || !slices.Contains(ls, metrics.SystemLabel) {
				t.Errorf("%s: by (%s) does not keep namespace and %s", a.Alert, m[1], metrics.SystemLabel)
			}
		}
		for _, m := range queryMatchers.FindAllStringSubmatch(a.Annotations["description"], -1) {
			if strings.Contains(m[1], "namespace=") && !strings.Contains(m[1], metrics.SystemLabel+"=%q") {
				t.Errorf("%s: the description queries {%s}, another system's series too", a.Alert, m[1])
			}
		}
	}
	for _, r := range exampleInhibitRules(t) {
		if !slices.Contains(r.Equal, "namespace") || !slices.Contains(r.Equal, metrics.SystemLabel) {
			t.Errorf("%s: equal %v: one system's alert would inhibit another's", inhibitPath, r.Equal)
		}
	}
}

// TestRulesNameAccounts: in operator (JWT) mode account is an account's public key and
// account_name its JWT name, which need not be unique. Every alert on a metric with
// account_name keeps it beside account in each aggregation, and every text that prints the
// account prints the name too (falling back to account alone in plain mode, where it is
// empty: rules_test.yml shows both).
func TestRulesNameAccounts(t *testing.T) {
	ch := make(chan *prometheus.Desc, 64)
	metrics.NewCollector(func() findings.Result { return findings.Result{} }, 0).Describe(ch)
	close(ch)
	named := map[string]bool{}
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && strings.Contains(d.String(), "account_name") {
			named[m[1]] = true
		}
	}
	if !named["nats_version_auditor_consumer_leader_below_floor"] {
		t.Fatalf("no metric with account_name among the collector's descriptors: %v", named)
	}
	checked := 0
	for _, a := range alerts(sourceRules(t)) {
		if !slices.ContainsFunc(metricName.FindAllString(a.Expr, -1), func(n string) bool { return named[n] }) {
			continue
		}
		checked++
		for _, m := range byClause.FindAllStringSubmatch(a.Expr, -1) {
			ls := strings.Split(m[1], ",")
			for i := range ls {
				ls[i] = strings.TrimSpace(ls[i])
			}
			if slices.Contains(ls, "account") && !slices.Contains(ls, "account_name") {
				t.Errorf("%s: by (%s) keeps account without account_name", a.Alert, m[1])
			}
		}
		for _, k := range []string{"summary", "description"} {
			text := a.Annotations[k]
			if strings.Count(text, "$labels.account ")+strings.Count(text, "$labels.account}") > 0 && !strings.Contains(text, "$labels.account_name") {
				t.Errorf("%s: the %s prints the account without its name", a.Alert, k)
			}
		}
	}
	if checked < 4 {
		t.Errorf("%d alerts on metrics with account_name, want the 4 consumer and asset alerts", checked)
	}
}

var alertnameMatcher = regexp.MustCompile(`^alertname(=~|=)"([^"]+)"$`)

// inhibitRule is one Alertmanager inhibition rule with its matchers as Alertmanager writes them.
type inhibitRule struct {
	SourceMatchers []string `json:"source_matchers"`
	TargetMatchers []string `json:"target_matchers"`
	Equal          []string `json:"equal"`
}

// exampleInhibitRules decodes deploy/prometheus/alertmanager-inhibit.yml strictly.
func exampleInhibitRules(t testing.TB) []inhibitRule {
	t.Helper()
	var cfg struct {
		InhibitRules []inhibitRule `json:"inhibit_rules"`
	}
	if err := strict(readFile(t, inhibitPath), &cfg); err != nil {
		t.Fatalf("%s: %v", inhibitPath, err)
	}
	return cfg.InhibitRules
}

// TestAlertmanagerInhibition: the inhibition example names alerts that exist, and every label
// it requires equal is one both the source and the target alert carry (else it never inhibits).
func TestAlertmanagerInhibition(t *testing.T) {
	checkInhibition(t, inhibitPath, exampleInhibitRules(t))
}

// checkInhibition holds inhibition rules to the alerts of rules.yml.
func checkInhibition(t testing.TB, where string, rules []inhibitRule) {
	t.Helper()
	byName := map[string]rulefile.Rule{}
	for _, a := range alerts(sourceRules(t)) {
		byName[a.Alert] = a
	}
	matching := func(ms []string) []rulefile.Rule {
		var out []rulefile.Rule
		for _, m := range ms {
			p := alertnameMatcher.FindStringSubmatch(m)
			if p == nil {
				t.Errorf("%s: matcher %q is not on alertname", where, m)
				continue
			}
			re := regexp.MustCompile("^(?:" + p[2] + ")$")
			for name, a := range byName {
				if re.MatchString(name) {
					out = append(out, a)
				}
			}
		}
		if len(out) == 0 {
			t.Errorf("%s: %q match no alert of %s", where, ms, rulesPath)
		}
		return out
	}
	if len(rules) == 0 {
		t.Fatalf("%s: no inhibition rules", where)
	}
	pageOncePerServer := false
	for _, r := range rules {
		for _, a := range slices.Concat(matching(r.SourceMatchers), matching(r.TargetMatchers)) {
			ls := alertLabels(a)
			for _, l := range r.Equal {
				if !ls[l] {
					t.Errorf("%s: equal %v, but %s has no label %s: the rule never inhibits", where, r.Equal, a.Alert, l)
				}
			}
		}
		if slices.Contains(r.SourceMatchers, `alertname="NatsServerBelowVersionFloor"`) && slices.Contains(r.Equal, "server_name") &&
			slices.ContainsFunc(r.TargetMatchers, func(m string) bool { return strings.Contains(m, "NatsConsumerLeaderBelowVersionFloor") }) {
			pageOncePerServer = true
		}
	}
	if !pageOncePerServer {
		t.Errorf("%s: no inhibition of the consumer alerts by NatsServerBelowVersionFloor: one old server pages once per consumer", where)
	}
}

// TestRunbookQueries: every PromQL query of the runbook parses, uses only what the exporter
// exposes (the same check as the rules), and keeps each system apart as the alerts do.
func TestRunbookQueries(t *testing.T) {
	runbook := string(readFile(t, runbookPath))
	var queries []string
	for _, block := range strings.Split(runbook, "```promql\n")[1:] {
		body, _, ok := strings.Cut(block, "```")
		if !ok {
			t.Fatalf("%s: unterminated promql block", runbookPath)
		}
		queries = append(queries, strings.Split(strings.TrimSpace(body), "\n")...)
	}
	if len(queries) < 3 {
		t.Fatalf("%s: %d PromQL queries, want the diagnosis queries", runbookPath, len(queries))
	}
	for _, q := range queries {
		e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", runbookPath, q, err)
			continue
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.VectorSelector:
				if !metricName.MatchString(n.Name) {
					t.Errorf("%s: %q reads %s, not an auditor metric", runbookPath, q, n.Name)
				}
				has := func(l string) bool {
					return slices.ContainsFunc(n.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == l })
				}
				if !has("namespace") || !has(metrics.SystemLabel) {
					t.Errorf("%s: %q does not select one system (namespace and %s)", runbookPath, q, metrics.SystemLabel)
				}
			case *parser.AggregateExpr:
				if !slices.Contains(n.Grouping, "namespace") || !slices.Contains(n.Grouping, metrics.SystemLabel) {
					t.Errorf("%s: %q aggregates without namespace and %s", runbookPath, q, metrics.SystemLabel)
				}
			}
			return nil
		})
	}
}
