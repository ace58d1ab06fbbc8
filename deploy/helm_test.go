package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// render runs helm template with values and decodes every rendered document strictly.
func render(t *testing.T, name, values string) []object {
	t.Helper()
	out, err := helm(t, "template", "audit", chartDir, "--namespace", "monitoring", "-f", valuesFile(t, values))
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
	for name, values := range map[string]string{"defaults": "", "monitoring": monitoringValues, "context": contextValues} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "lint", "--strict", chartDir, "-f", valuesFile(t, values))
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
		"server": "nats://nats:4222", "creds": "/etc/nats-version-auditor/creds/sys.creds", "floor": "2.14.0",
		"scope": "cluster", "audit.min-interval": "15s", "metrics.max-asset-series": "500", "timeout": "5s",
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
		"context": "sys", "floor": "2.15", "audit.min-interval": "30s", "log.format": "json",
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

func TestHelmTemplateRejectsBadValues(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ values, why string }{
		"unknown scope":              {"audit:\n  scope: everything\n", "/audit/scope"},
		"misspelt key":               {"audit:\n  flor: 2.14.0\n", "'flor' not allowed"},
		"context without its source": {"nats:\n  context:\n    name: sys\n", "nats.context.name is set"},
		"context from two sources":   {"nats:\n  context:\n    name: sys\n    existingSecret: a\n    existingConfigMap: b\n", "not both"},
		"client cert without key":    {"nats:\n  tls:\n    existingSecret: t\n    cert: tls.crt\n", "both cert and key"},
		"not a version floor":        {"audit:\n  floor: latest\n", "/audit/floor"},
		"not a duration":             {"audit:\n  minInterval: often\n", "/audit/minInterval"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := helm(t, "template", "audit", chartDir, "-f", valuesFile(t, c.values))
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
	out, err := helm(t, "template", "audit", dst, "--namespace", "monitoring", "-f", valuesFile(t, values),
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
		"no credentials": "nats:\n  credentials:\n    existingSecret: \"\"\n"} {
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

// The sidecar for the official NATS chart (deploy/helm/nats-sidecar-values.yaml).

// sidecarValues is the part of the official chart's values the file sets. Decoding is strict:
// a key the chart does not have would be silently ignored by Helm.
type sidecarValues struct {
	PodTemplate struct {
		Patch []jsonPatchOp `json:"patch"`
	} `json:"podTemplate"`
	ExtraResources []json.RawMessage `json:"extraResources"`
}

type jsonPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

// natsChartPodTemplate mirrors the pod template the official chart (nats 1.x) renders by
// default, with the optional Prometheus exporter on: the document podTemplate.patch applies to.
const natsChartPodTemplate = `
metadata:
  labels:
    app.kubernetes.io/component: nats
    app.kubernetes.io/instance: nats
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/name: nats
    app.kubernetes.io/version: 2.14.0
    helm.sh/chart: nats-1.3.0
spec:
  shareProcessNamespace: true
  enableServiceLinks: false
  containers:
    - name: nats
      image: nats:2.14.0-alpine
      args: [--config, /etc/nats-config/nats.conf]
      ports:
        - {name: nats, containerPort: 4222}
        - {name: monitor, containerPort: 8222}
      volumeMounts:
        - {name: config, mountPath: /etc/nats-config}
        - {name: pid, mountPath: /var/run/nats}
    - name: reloader
      image: natsio/nats-server-config-reloader:0.23.0
      args: [-pid, /var/run/nats/nats.pid, -config, /etc/nats-config/nats.conf]
      volumeMounts:
        - {name: pid, mountPath: /var/run/nats}
        - {name: config, mountPath: /etc/nats-config}
    - name: prom-exporter
      image: natsio/prometheus-nats-exporter:0.17.3
      args: [-port=7777, -connz, -routez, -subz, -varz, -prefix=nats, -use_internal_server_id, "http://localhost:8222/"]
      ports:
        - {name: prom-metrics, containerPort: 7777}
  volumes:
    - name: config
      configMap: {name: nats-config}
    - name: pid
      emptyDir: {}
`

// applyPatch applies JSON patch "add" operations the way the official chart's jsonpatch
// template does: every parent must exist, a map key is set, "-" appends to a list.
func applyPatch(doc any, ops []jsonPatchOp) (any, error) {
	for _, op := range ops {
		if op.Op != "add" {
			return nil, fmt.Errorf("op %s: only add is used here", op.Op)
		}
		var value any
		if err := json.Unmarshal(op.Value, &value); err != nil {
			return nil, fmt.Errorf("%s: %v", op.Path, err)
		}
		segs := strings.Split(op.Path, "/")
		if segs[0] != "" || len(segs) < 2 {
			return nil, fmt.Errorf("path %q must start with /", op.Path)
		}
		segs = segs[1:]
		var err error
		doc, err = addAt(doc, segs, value)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", op.Path, err)
		}
	}
	return doc, nil
}

func addAt(node any, segs []string, value any) (any, error) {
	key := strings.ReplaceAll(strings.ReplaceAll(segs[0], "~1", "/"), "~0", "~")
	switch n := node.(type) {
	case map[string]any:
		if len(segs) == 1 {
			n[key] = value
			return n, nil
		}
		child, ok := n[key]
		if !ok {
			return nil, fmt.Errorf("key %s does not exist", key)
		}
		v, err := addAt(child, segs[1:], value)
		n[key] = v
		return n, err
	case []any:
		i := len(n)
		if key != "-" {
			var err error
			if i, err = strconv.Atoi(key); err != nil || i < 0 || i > len(n) {
				return nil, fmt.Errorf("bad index %s", key)
			}
		}
		if len(segs) == 1 {
			return slices.Insert(n, i, value), nil
		}
		if i == len(n) {
			return nil, fmt.Errorf("index %s out of range", key)
		}
		v, err := addAt(n[i], segs[1:], value)
		n[i] = v
		return n, err
	}
	return nil, fmt.Errorf("cannot descend into %T at %s", node, key)
}

func TestNatsSidecarValues(t *testing.T) {
	const where = "deploy/helm/nats-sidecar-values.yaml"
	var vals sidecarValues
	if err := strict(readFile(t, where), &vals); err != nil {
		t.Fatalf("%s: %v", where, err)
	}

	var base any
	if err := yaml.Unmarshal([]byte(natsChartPodTemplate), &base); err != nil {
		t.Fatal(err)
	}
	patched, err := applyPatch(base, vals.PodTemplate.Patch)
	if err != nil {
		t.Fatalf("%s: podTemplate.patch does not apply to the chart's pod template: %v", where, err)
	}
	js, err := json.Marshal(patched)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.PodTemplateSpec
	if err := strict(js, &pod); err != nil {
		t.Fatalf("%s: the patched pod template does not decode: %v", where, err)
	}
	spec := &pod.Spec

	i := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return strings.HasPrefix(c.Image, image) })
	if i < 0 {
		t.Fatalf("%s: no auditor init container", where)
	}
	c := &spec.InitContainers[i]
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("%s: the auditor is not a native sidecar (initContainers entry with restartPolicy: Always)", where)
	}
	// The NATS pod's securityContext belongs to the NATS chart: the container carries its own.
	containerSecurity(t, where, c, spec)
	probes(t, where, c, sidecarProbes)
	credsMounted(t, where, c, spec)
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("%s: args %q do not start with serve", where, c.Args)
	}
	if scope, _ := flagValue(c.Args, "scope"); scope != "server" {
		t.Errorf("%s: --scope is %q, want server", where, scope)
	}
	server, _ := flagValue(c.Args, "server")
	if server != "nats://localhost:4222" && server != "nats://127.0.0.1:4222" {
		t.Errorf("%s: --server=%q is not the pod's own NATS server on the chart's client port 4222", where, server)
	}
	if _, ok := flagValue(c.Args, "creds"); !ok {
		t.Errorf("%s: no --creds", where)
	}

	// Containers share the pod's network: no two may listen on the same port or name.
	ports, names := map[int32]string{}, map[string]string{}
	for _, ct := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, p := range ct.Ports {
			if other, dup := ports[p.ContainerPort]; dup {
				t.Errorf("%s: port %d of %s is also %s's", where, p.ContainerPort, ct.Name, other)
			}
			if other, dup := names[p.Name]; dup {
				t.Errorf("%s: port name %s of %s is also %s's", where, p.Name, ct.Name, other)
			}
			ports[p.ContainerPort], names[p.Name] = ct.Name, ct.Name
		}
	}
	if listen, _ := flagValue(c.Args, "web.listen-address"); len(c.Ports) != 1 || !strings.HasSuffix(listen, ":"+itoa(c.Ports[0].ContainerPort)) {
		t.Errorf("%s: --web.listen-address=%s does not match the sidecar's one port %+v", where, listen, c.Ports)
	}

	// The PodMonitor scrapes the sidecar's port on the chart's NATS pods.
	var pms []object
	for j, raw := range vals.ExtraResources {
		pms = append(pms, decodeObjects(t, fmt.Sprintf("%s extraResources[%d]", where, j), raw)...)
	}
	pm := one[podMonitor](t, where+" extraResources", pms)
	sel, err := labelSelector(&pm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("%s: the PodMonitor's selector does not match the chart's NATS pods (%v)", where, err)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || len(c.Ports) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != c.Ports[0].Name {
		t.Errorf("%s: the PodMonitor does not scrape the sidecar's port: %+v", where, pm.Spec.PodMetricsEndpoints)
	}

	// Same image as the rest of deploy/.
	if tag := strings.TrimPrefix(c.Image, image+":"); tag != chartAppVersion(t) {
		t.Errorf("%s: image tag %s, the chart's appVersion is %s", where, tag, chartAppVersion(t))
	}
}

// TestApplyPatchLikeTheChart pins the patch semantics TestNatsSidecarValues relies on.
func TestApplyPatchLikeTheChart(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"volumes": []any{"a"}}}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/spec/initContainers", true},
		{"/spec/volumes/-", true},
		{"/spec/volumes/0", true},
		{"/spec/missing/-", false},
		{"/spec/volumes/9", false},
		{"spec", false},
	} {
		_, err := applyPatch(doc, []jsonPatchOp{{Op: "add", Path: c.path, Value: json.RawMessage(`"x"`)}})
		if (err == nil) != c.ok {
			t.Errorf("add %s: err %v", c.path, err)
		}
	}
	if _, err := applyPatch(doc, []jsonPatchOp{{Op: "replace", Path: "/spec", Value: json.RawMessage(`{}`)}}); err == nil {
		t.Error("replace accepted")
	}
}
