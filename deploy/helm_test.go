package deploy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "deploy/helm/nats-version-auditor"

// helm runs the helm binary with its cache, config and data in a temporary directory.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	env := []string{
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}
	return run(t, env, tool(t, "helm"), args...)
}

// valuesFile writes values to a temporary file and returns its path.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// requiredValues is what an install must give (nats.url), as the install line of deploy/README
// does; every render starts from it and values override it.
const requiredValues = `
nats:
  url: nats://nats.nats.svc:4222
`

// render runs helm template with the required values and values, and decodes every rendered
// document strictly.
func render(t *testing.T, name, values string) []object {
	t.Helper()
	out, err := helm(t, "template", "audit", chartDir, "--namespace", "monitoring", "-f", valuesFile(t, requiredValues), "-f", valuesFile(t, values))
	if err != nil {
		t.Fatalf("helm template (%s): %v\n%s", name, err, out)
	}
	return decodeObjects(t, "helm template ("+name+")", []byte(out))
}

const monitoringValues = `
serviceMonitor:
  enabled: true
  labels:
    release: kube-prometheus-stack
prometheusRule:
  enabled: true
  labels:
    release: kube-prometheus-stack
`

const contextValues = `
nats:
  url: ""
  system: payments/nats
  credentials:
    existingSecret: ""
  context:
    name: sys
    existingSecret: nats-sys-context
  tls:
    existingSecret: nats-client-tls
    ca: ca.crt
    cert: tls.crt
    key: tls.key
audit:
  floor: "2.15"
  minInterval: 30s
  fullInterval: 10m
web:
  config:
    existingSecret: auditor-web-config
  tls: true
log:
  format: json
serviceMonitor:
  enabled: true
  tlsConfig:
    insecureSkipVerify: true
`

const configMapContextValues = `
nats:
  context:
    name: prod-sys
    existingConfigMap: nats-contexts
    key: prod.json
serviceAccount:
  name: auditor
extraArgs:
  - --tlsfirst
extraEnv:
  - name: NATS_USER
    valueFrom:
      secretKeyRef: {name: nats-sys-user, key: user}
`

func TestHelmLint(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]string{"defaults": "", "monitoring": monitoringValues, "context": contextValues,
		"monitoring switch": "monitoring:\n  enabled: true\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "lint", "--strict", chartDir, "-f", valuesFile(t, requiredValues), "-f", valuesFile(t, values))
			t.Logf("helm lint --strict (%s):\n%s", name, out)
			if err != nil {
				t.Errorf("helm lint --strict (%s): %v", name, err)
			}
		})
	}
}

func TestHelmTemplateDefaults(t *testing.T) {
	t.Parallel()
	objs := render(t, "defaults", "")
	kinds := kindsOf(objs)
	if want := []string{"Deployment", "Service", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Fatalf("rendered %v, want %v (ServiceMonitor and PrometheusRule off by default)", kinds, want)
	}
	d := one[appsv1.Deployment](t, "defaults", objs)
	checkStandalone(t, "chart defaults", d, one[corev1.Service](t, "defaults", objs), one[corev1.ServiceAccount](t, "defaults", objs), nil)

	c := d.Spec.Template.Spec.Containers[0]
	want := map[string]string{
		"server": "nats://nats.nats.svc:4222", "metrics.system": "nats/nats", "creds": "/etc/nats-version-auditor/creds/sys.creds", "floor": "2.14.0",
		"scope": "cluster", "audit.min-interval": "15s", "audit.full-interval": "5m", "metrics.max-asset-series": "500", "timeout": "5s",
		"web.listen-address": ":7779", "web.telemetry-path": "/metrics", "log.level": "info", "log.format": "logfmt",
	}
	for f, v := range want {
		if got, _ := flagValue(c.Args, f); got != v {
			t.Errorf("--%s=%q, want %q", f, got, v)
		}
	}
	for _, f := range []string{"context", "tlsca", "web.config.file", "expect"} {
		if _, ok := flagValue(c.Args, f); ok {
			t.Errorf("--%s set by default", f)
		}
	}
	if tag := strings.TrimPrefix(c.Image, image+":"); tag != chartAppVersion(t) {
		t.Errorf("default image tag %s is not the chart's appVersion %s", tag, chartAppVersion(t))
	}
}

func TestHelmTemplateMonitoring(t *testing.T) {
	t.Parallel()
	objs := render(t, "monitoring", monitoringValues)
	if want := []string{"Deployment", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}; !slices.Equal(kindsOf(objs), want) {
		t.Fatalf("rendered %v, want %v", kindsOf(objs), want)
	}
	sm := one[serviceMonitor](t, "monitoring", objs)
	checkStandalone(t, "chart with monitoring", one[appsv1.Deployment](t, "monitoring", objs),
		one[corev1.Service](t, "monitoring", objs), one[corev1.ServiceAccount](t, "monitoring", objs), sm)
	pr := one[prometheusRule](t, "monitoring", objs)
	for what, l := range map[string]map[string]string{"ServiceMonitor": sm.Metadata.Labels, "PrometheusRule": pr.Metadata.Labels} {
		if l["release"] != "kube-prometheus-stack" {
			t.Errorf("%s labels %v lack the configured release label", what, l)
		}
	}
	if sm.Spec.Endpoints[0].Interval != "30s" {
		t.Errorf("ServiceMonitor interval %q", sm.Spec.Endpoints[0].Interval)
	}
	sameRules(t, "the chart's PrometheusRule", pr.Spec)
}

func TestHelmTemplateContext(t *testing.T) {
	t.Parallel()
	objs := render(t, "context", contextValues)
	d := one[appsv1.Deployment](t, "context", objs)
	sm := one[serviceMonitor](t, "context", objs)
	checkStandalone(t, "chart with a context", d, one[corev1.Service](t, "context", objs), one[corev1.ServiceAccount](t, "context", objs), sm)

	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	for f, v := range map[string]string{
		"context": "sys", "metrics.system": "payments/nats", "floor": "2.15", "audit.min-interval": "30s", "audit.full-interval": "10m", "log.format": "json",
		"tlsca": "/etc/nats-version-auditor/tls/ca.crt", "tlscert": "/etc/nats-version-auditor/tls/tls.crt",
		"tlskey": "/etc/nats-version-auditor/tls/tls.key", "web.config.file": "/etc/nats-version-auditor/web/web-config.yml",
	} {
		if got, _ := flagValue(c.Args, f); got != v {
			t.Errorf("--%s=%q, want %q", f, got, v)
		}
	}
	for _, f := range []string{"server", "creds"} {
		if _, ok := flagValue(c.Args, f); ok {
			t.Errorf("--%s set: the context should provide it", f)
		}
	}
	// natscli reads $XDG_CONFIG_HOME/nats/context/<name>.json.
	xdg := ""
	for _, e := range c.Env {
		if e.Name == "XDG_CONFIG_HOME" {
			xdg = e.Value
		}
	}
	ctxFile := ""
	for _, m := range c.VolumeMounts {
		if m.Name != "context" {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == "context" && v.Secret != nil && v.Secret.SecretName == "nats-sys-context" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "sys.json" {
				ctxFile = m.MountPath + "/" + v.Secret.Items[0].Path
			}
		}
	}
	if xdg == "" || ctxFile != xdg+"/nats/context/sys.json" {
		t.Errorf("context file at %q, natscli looks for $XDG_CONFIG_HOME/nats/context/sys.json with XDG_CONFIG_HOME=%q", ctxFile, xdg)
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Error("web.tls: probes do not use HTTPS")
		}
	}
	if sm.Spec.Endpoints[0].Scheme != "https" || sm.Spec.Endpoints[0].TLSConfig["insecureSkipVerify"] != true {
		t.Errorf("web.tls: ServiceMonitor endpoint %+v does not scrape over HTTPS with the tlsConfig", sm.Spec.Endpoints[0])
	}
}

// TestHelmTemplateScopeServer: --scope server audits its own server only
// and refuses --audit.full-interval (exit 3), so the chart leaves it out.
func TestHelmTemplateScopeServer(t *testing.T) {
	t.Parallel()
	objs := render(t, "scope-server", "audit:\n  scope: server\n  fullInterval: 10m\n")
	c := one[appsv1.Deployment](t, "scope server", objs).Spec.Template.Spec.Containers[0]
	if v, _ := flagValue(c.Args, "scope"); v != "server" {
		t.Errorf("--scope=%q", v)
	}
	if v, ok := flagValue(c.Args, "audit.full-interval"); ok {
		t.Errorf("--audit.full-interval=%q with --scope server: serve would exit 3", v)
	}
}

func TestHelmTemplateConfigMapContext(t *testing.T) {
	t.Parallel()
	objs := render(t, "configmap context", configMapContextValues)
	d := one[appsv1.Deployment](t, "configmap context", objs)
	sa := one[corev1.ServiceAccount](t, "configmap context", objs)
	if sa.Name != "auditor" {
		t.Errorf("ServiceAccount %s, want the configured name auditor", sa.Name)
	}
	checkStandalone(t, "chart with a ConfigMap context", d, one[corev1.Service](t, "configmap context", objs), sa, nil)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if v, _ := flagValue(c.Args, "context"); v != "prod-sys" {
		t.Errorf("--context=%q", v)
	}
	if _, ok := flagValue(c.Args, "creds"); !ok {
		t.Error("the creds Secret is dropped when a context is added")
	}
	if !slices.Contains(c.Args, "--tlsfirst") {
		t.Error("extraArgs not passed")
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NATS_USER" && e.ValueFrom != nil }) {
		t.Error("extraEnv not passed")
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "context" })
	if i < 0 || spec.Volumes[i].ConfigMap == nil || spec.Volumes[i].ConfigMap.Name != "nats-contexts" ||
		len(spec.Volumes[i].ConfigMap.Items) != 1 || spec.Volumes[i].ConfigMap.Items[0] != (corev1.KeyToPath{Key: "prod.json", Path: "prod-sys.json"}) {
		t.Errorf("context volume from the ConfigMap: %+v", spec.Volumes)
	}
}

// TestHelmTemplateExpectFromReplicas: nats.replicas, the official chart's config.cluster.replicas,
// becomes --expect, which nats.expect overrides; and an nkey user's seed is passed as --nkey from
// the mounted Secret.
func TestHelmTemplateExpectFromReplicas(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ values, expect string }{
		"3-replica NATS":       {"nats:\n  replicas: 3\n", "3"},
		"expect over replicas": {"nats:\n  replicas: 3\n  expect: 5\n", "5"},
		"expect alone":         {"nats:\n  expect: 2\n", "2"},
		"nkey user":            {"nats:\n  replicas: 1\n  credentials:\n    type: nkey\n    key: sys.nk\n", "1"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := render(t, name, c.values)
			d := one[appsv1.Deployment](t, name, objs)
			checkStandalone(t, "chart ("+name+")", d, one[corev1.Service](t, name, objs), one[corev1.ServiceAccount](t, name, objs), nil)
			args := d.Spec.Template.Spec.Containers[0].Args
			if got, _ := flagValue(args, "expect"); got != c.expect {
				t.Errorf("--expect=%q, want %s: %q", got, c.expect, args)
			}
			if name != "nkey user" {
				return
			}
			if got, _ := flagValue(args, "nkey"); got != "/etc/nats-version-auditor/creds/sys.nk" {
				t.Errorf("--nkey=%q, want the seed file of the mounted Secret", got)
			}
			if _, ok := flagValue(args, "creds"); ok {
				t.Errorf("an nkey user is also given --creds: %q", args)
			}
		})
	}
}

func TestHelmTemplateRejectsBadValues(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ values, why string }{
		// No URL, or one whose bare host resolves in the auditor's own namespace: refused.
		"no nats.url":                {"nats:\n  url: \"\"\n", "nats.url is required"},
		"bare host":                  {"nats:\n  url: nats://nats:4222\n", `the host "nats" resolves in this release's namespace (monitoring)`},
		"bare host without scheme":   {"nats:\n  url: nats:4222\n", "resolves in this release's namespace"},
		"context without a system":   {"nats:\n  url: \"\"\n  context:\n    name: sys\n    existingSecret: s\n", "nats.system is required"},
		"unknown scope":              {"audit:\n  scope: everything\n", "/audit/scope"},
		"misspelt key":               {"audit:\n  flor: 2.14.0\n", "'flor' not allowed"},
		"context without its source": {"nats:\n  context:\n    name: sys\n", "nats.context.name is set"},
		"context from two sources":   {"nats:\n  context:\n    name: sys\n    existingSecret: a\n    existingConfigMap: b\n", "not both"},
		"client cert without key":    {"nats:\n  tls:\n    existingSecret: t\n    cert: tls.crt\n", "both cert and key"},
		"not a version floor":        {"audit:\n  floor: latest\n", "/audit/floor"},
		// YAML reads 2.10 as the number 2.1: a silently lowered floor. Strings only.
		"floor as a number":  {"audit:\n  floor: 2.10\n", "/audit/floor"},
		"image tag a number": {"image:\n  tag: 1.0\n", "/image/tag"},
		"not a duration":     {"audit:\n  minInterval: often\n", "/audit/minInterval"},
		"negative replicas":  {"nats:\n  replicas: -1\n", "/nats/replicas"},
		"unknown creds type": {"nats:\n  credentials:\n    type: token\n", "/nats/credentials/type"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "template", "audit", chartDir, "--namespace", "monitoring", "-f", valuesFile(t, requiredValues), "-f", valuesFile(t, c.values))
			if err == nil || !strings.Contains(out, c.why) {
				t.Errorf("helm template with %s: want an error about %q, got %v:\n%s", name, c.why, err, out)
			}
		})
	}
}

// renderNotes renders the chart's NOTES.txt. helm template does not, and helm install
// --dry-run wants a cluster, so a copy of the chart renders it through tpl in a template of its own.
func renderNotes(t *testing.T, values string) string {
	t.Helper()
	src, dst := path(t, chartDir), filepath.Join(t.TempDir(), "chart")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(src, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "files", "notes-under-test.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := "notes: {{ tpl (.Files.Get \"files/notes-under-test.txt\") . | toJson }}\n"
	if err := os.WriteFile(filepath.Join(dst, "templates", "notes-under-test.yaml"), []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := helm(t, "template", "audit", dst, "--namespace", "monitoring", "-f", valuesFile(t, requiredValues), "-f", valuesFile(t, values),
		"--show-only", "templates/notes-under-test.yaml")
	if err != nil {
		t.Fatalf("rendering NOTES.txt: %v\n%s", err, out)
	}
	var doc struct {
		Notes string `json:"notes"`
	}
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("rendering NOTES.txt: %v\n%s", err, out)
	}
	return doc.Notes
}

func TestChartNotes(t *testing.T) {
	t.Parallel()
	for name, values := range map[string]string{"defaults": "", "monitoring": monitoringValues, "context": contextValues,
		"no credentials": "nats:\n  credentials:\n    existingSecret: \"\"\n", "nkey": "nats:\n  credentials:\n    type: nkey\n    key: sys.nk\n"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkNotes(t, name, renderNotes(t, values))
		})
	}
}

func checkNotes(t *testing.T, name, notes string) {
	t.Helper()
	if !strings.Contains(notes, "port-forward svc/audit-nats-version-auditor 7779") {
		t.Errorf("NOTES (%s) lack the port-forward line:\n%s", name, notes)
	}
	if strings.Contains(notes, "WARNING: no credentials") != (name == "no credentials") {
		t.Errorf("NOTES (%s): credentials warning wrong:\n%s", name, notes)
	}
	if name == "nkey" && !strings.Contains(notes, "the nkey seed under key \"sys.nk\"") {
		t.Errorf("NOTES (%s): the Secret is not said to hold an nkey seed:\n%s", name, notes)
	}
	if strings.Contains(notes, "No ServiceMonitor") == (name == "monitoring" || name == "context") {
		t.Errorf("NOTES (%s): ServiceMonitor line wrong:\n%s", name, notes)
	}
}

func kindsOf(objs []object) []string {
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
	}
	slices.Sort(kinds)
	return kinds
}

func chartAppVersion(t testing.TB) string {
	t.Helper()
	var chart struct {
		AppVersion string `json:"appVersion"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	return chart.AppVersion
}

// TestHelmTemplateMonitoringSwitch: one value turns on everything a default kube-prometheus-stack
// needs, labelled for its selectors, named after the release.
func TestHelmTemplateMonitoringSwitch(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		values  string
		kinds   []string
		prefix  string
		release string
	}{
		"switch on": {"monitoring:\n  enabled: true\n",
			[]string{"AlertmanagerConfig", "ConfigMap", "Deployment", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}, "audit-nats-version-auditor", "kube-prometheus-stack"},
		"fullnameOverride and own release label without dashboard and inhibition": {"fullnameOverride: nva\nmonitoring:\n  enabled: true\n  labels:\n    release: prom\ngrafanaDashboard:\n  enabled: false\nalertmanagerConfig:\n  enabled: false\n",
			[]string{"Deployment", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}, "nva", "prom"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := render(t, name, c.values)
			if !slices.Equal(kindsOf(objs), c.kinds) {
				t.Fatalf("rendered %v, want %v", kindsOf(objs), c.kinds)
			}
			for _, o := range objs {
				if !strings.HasPrefix(o.Name, c.prefix) {
					t.Errorf("%s %s is not named after the release (%s)", o.Kind, o.Name, c.prefix)
				}
				var l map[string]string
				switch v := o.Obj.(type) {
				case *serviceMonitor:
					l = v.Metadata.Labels
				case *prometheusRule:
					l = v.Metadata.Labels
				case *monitoringv1alpha1.AlertmanagerConfig:
					l = v.Labels
				case *corev1.ConfigMap:
					l = v.Labels
					if l["grafana_dashboard"] != "1" {
						t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", l)
					}
					checkDashboardConfigMap(t, v)
				default:
					continue
				}
				if l["release"] != c.release {
					t.Errorf("%s labels %v: release is not %s", o.Kind, l, c.release)
				}
			}
		})
	}
}

// checkDashboardConfigMap: the chart ships the committed dashboard, byte for byte.
func checkDashboardConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	want := strings.TrimSpace(string(readFile(t, "deploy/grafana/nats-version-auditor.json")))
	if got := strings.TrimSpace(cm.Data["nats-version-auditor.json"]); got != want {
		t.Errorf("dashboard ConfigMap %s does not hold deploy/grafana/nats-version-auditor.json (%d bytes, want %d)", cm.Name, len(got), len(want))
	}
}

// TestHelmAlertmanagerConfig: the monitoring switch ships the inhibition as an AlertmanagerConfig
// (decoded strictly into prometheus-operator's own type): exactly the rules of the example, held
// to the rules' labels as the example is, in the namespace the release's alerts carry (the
// operator adds namespace=<its namespace> to every matcher), labelled for the selectors.
func TestHelmAlertmanagerConfig(t *testing.T) {
	t.Parallel()
	objs := render(t, "inhibition", "monitoring:\n  enabled: true\nalertmanagerConfig:\n  labels:\n    alertmanagerConfig: nats\n")
	amc := one[monitoringv1alpha1.AlertmanagerConfig](t, "inhibition", objs)
	sm := one[serviceMonitor](t, "inhibition", objs)
	if amc.Namespace != "monitoring" || sm.Metadata.Namespace != amc.Namespace {
		t.Errorf("AlertmanagerConfig in namespace %q, the ServiceMonitor (whose targets give the alerts their namespace) in %q: want both the release's, monitoring",
			amc.Namespace, sm.Metadata.Namespace)
	}
	if amc.Labels["release"] != "kube-prometheus-stack" || amc.Labels["alertmanagerConfig"] != "nats" {
		t.Errorf("AlertmanagerConfig labels %v lack the monitoring labels and its own", amc.Labels)
	}
	checkAlertmanagerConfig(t, "the chart's AlertmanagerConfig", amc)
}

// checkAlertmanagerConfig: an AlertmanagerConfig deploy/ ships only inhibits, with exactly the
// rules of the example, held to the rules' labels as the example is.
func checkAlertmanagerConfig(t *testing.T, where string, amc *monitoringv1alpha1.AlertmanagerConfig) {
	t.Helper()
	if amc.Spec.Route != nil || len(amc.Spec.Receivers) > 0 {
		t.Errorf("%s routes or receives (%v, %v): it should only inhibit", where, amc.Spec.Route, amc.Spec.Receivers)
	}
	var got []inhibitRule
	matchers := func(ms []monitoringv1alpha1.Matcher) []string {
		var out []string
		for _, m := range ms {
			if err := m.Validate(); err != nil {
				t.Errorf("matcher %+v: %v", m, err)
			}
			out = append(out, m.String())
		}
		return out
	}
	for _, r := range amc.Spec.InhibitRules {
		got = append(got, inhibitRule{SourceMatchers: matchers(r.SourceMatch), TargetMatchers: matchers(r.TargetMatch), Equal: r.Equal})
	}
	checkInhibition(t, where, got)
	if want := exampleInhibitRules(t); !reflect.DeepEqual(got, want) {
		t.Errorf("%s inhibits\n%v\nthe example %s\n%v\n(run go generate ./deploy/prometheus/gen)", where, got, inhibitPath, want)
	}
}
