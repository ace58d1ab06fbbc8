package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The sidecar for the official NATS chart (deploy/helm/nats-sidecar-values.yaml), checked by
// rendering the real chart: an unchanged copy of nats-io/k8s helm/charts/nats 2.14.2 in
// deploy/testdata/charts/nats (Apache-2.0, its LICENSE alongside), so that a clean clone tests
// without a network. NATS_CHART_DIR renders another copy (a newer chart, say) instead.

const (
	sidecarValuesPath = "deploy/helm/nats-sidecar-values.yaml"
	exampleValuesPath = "deploy/helm/nats-values-example.yaml"
	natsChartVersion  = "2.14.2"
)

// natsChart returns a copy of the official chart in a temporary directory: helm may write
// next to a chart (charts/, Chart.lock), and the source stays read-only.
func natsChart(t *testing.T) string {
	t.Helper()
	src := os.Getenv("NATS_CHART_DIR")
	if src == "" {
		src = path(t, "deploy/testdata/charts/nats")
	}
	dst := filepath.Join(t.TempDir(), "nats")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying the official NATS chart from %s: %v", src, err)
	}
	return dst
}

// renderNatsChart renders the official chart as release "nats" in namespace "nats" with the
// given values files (module-relative paths or absolute) and decodes every object strictly.
func renderNatsChart(t *testing.T, name string, files ...string) (objs []object, out string, err error) {
	t.Helper()
	args := []string{"template", "nats", natsChart(t), "--namespace", "nats"}
	for _, f := range files {
		if !filepath.IsAbs(f) {
			f = path(t, f)
		}
		args = append(args, "-f", f)
	}
	out, err = helm(t, args...)
	if err != nil {
		return nil, out, err
	}
	return decodeNatsChart(t, "official chart ("+name+")", out), out, nil
}

// decodeNatsChart decodes the official chart's output: its own kinds loosely checked, the
// StatefulSet and what deploy/ adds strictly.
func decodeNatsChart(t *testing.T, source, out string) []object {
	t.Helper()
	var keep []byte
	for _, doc := range splitDocs([]byte(out)) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		switch meta.Kind {
		case "ConfigMap", "PodMonitor", "PrometheusRule":
			keep = append(append(keep, "\n---\n"...), doc...)
		}
	}
	objs := decodeObjects(t, source, keep)
	// The StatefulSet is not a kind deploy/ ships, so decodeObjects skips it: decode it here.
	for _, doc := range splitDocs([]byte(out)) {
		var meta struct {
			Kind string `json:"kind"`
		}
		_ = yaml.Unmarshal(doc, &meta)
		if meta.Kind != "StatefulSet" {
			continue
		}
		var ss appsv1.StatefulSet
		if err := strict(doc, &ss); err != nil {
			t.Fatalf("%s: StatefulSet: %v", source, err)
		}
		objs = append(objs, object{Source: source, APIVersion: "apps/v1", Kind: "StatefulSet", Name: ss.Name, Obj: &ss})
	}
	return objs
}

// sidecar returns the auditor's container in the rendered StatefulSet.
func sidecar(t *testing.T, where string, objs []object) (*appsv1.StatefulSet, *corev1.Container) {
	t.Helper()
	ss := one[appsv1.StatefulSet](t, where, objs)
	spec := &ss.Spec.Template.Spec
	i := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return strings.HasPrefix(c.Image, image+":") })
	if i < 0 {
		t.Fatalf("%s: no auditor init container in the StatefulSet", where)
	}
	return ss, &spec.InitContainers[i]
}

func TestNatsChartIsTheOfficialOne(t *testing.T) {
	var chart struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	b, err := os.ReadFile(filepath.Join(natsChart(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	// Numbered after the server since late 2025: no more "1.x".
	if chart.Name != "nats" || chart.Version != natsChartVersion || chart.AppVersion != natsChartVersion {
		t.Errorf("the chart under test is %s %s (app %s), want nats %s", chart.Name, chart.Version, chart.AppVersion, natsChartVersion)
	}
}

func TestNatsSidecarValues(t *testing.T) {
	t.Parallel()
	for name, files := range map[string][]string{
		"sidecar values alone":        {sidecarValuesPath},
		"with the example values":     {sidecarValuesPath, exampleValuesPath},
		"overridden floor and labels": {sidecarValuesPath, "inline:natsVersionAuditor:\n  floor: \"2.15\"\n  system: payments\n  monitoring:\n    labels:\n      release: prometheus\n      team: nats\n"},
		"five servers":                {sidecarValuesPath, "inline:config:\n  cluster:\n    enabled: true\n    replicas: 5\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var fs []string
			for _, f := range files {
				if v, ok := strings.CutPrefix(f, "inline:"); ok {
					f = valuesFile(t, v)
				}
				fs = append(fs, f)
			}
			objs, out, err := renderNatsChart(t, name, fs...)
			if err != nil {
				t.Fatalf("helm template of the official chart: %v\n%s", err, out)
			}
			checkSidecar(t, name, objs)
			// Every sidecar names its system (label nats_system): <namespace>/<release full
			// name> unless given, the name the standalone chart derives from
			// nats://nats.nats.svc:4222, so that one system has one name however it is watched.
			wantSystem := "nats/nats"
			if name == "overridden floor and labels" {
				wantSystem = "payments"
			}
			_, c := sidecar(t, name, objs)
			if got, _ := flagValue(c.Args, "metrics.system"); got != wantSystem {
				t.Errorf("%s: the sidecar's --metrics.system is %q, want %s", name, got, wantSystem)
			}
			switch name {
			case "with the example values":
				checkExampleValues(t, objs)
				checkNatsBox(t, out)
			case "overridden floor and labels":
				if p := policyOf(t, objs); p != "floor: \"2.15\"\n" {
					t.Errorf("policy.yaml %q, want the overridden floor as a string", p)
				}
				for _, o := range objs {
					if o.Kind == "PodMonitor" || o.Kind == "PrometheusRule" {
						l := objectLabels(o)
						if l["release"] != "prometheus" || l["team"] != "nats" {
							t.Errorf("%s labels %v lack the configured monitoring labels", o.Kind, l)
						}
					}
				}
			default:
				if p := policyOf(t, objs); p != "floor: \"2.14.0\"\n" {
					t.Errorf("policy.yaml %q, want floor: \"2.14.0\"", p)
				}
			}
		})
	}
}

func objectLabels(o object) map[string]string {
	switch v := o.Obj.(type) {
	case *podMonitor:
		return v.Metadata.Labels
	case *prometheusRule:
		return v.Metadata.Labels
	case *corev1.ConfigMap:
		return v.Labels
	}
	return nil
}

// policyOf returns policy.yaml of the policy ConfigMap.
func policyOf(t *testing.T, objs []object) string {
	t.Helper()
	for _, cm := range byKind[corev1.ConfigMap](objs) {
		if strings.HasSuffix(cm.Name, "-version-auditor-policy") {
			return cm.Data["policy.yaml"]
		}
	}
	t.Fatal("no policy ConfigMap rendered")
	return ""
}

// checkSidecar asserts what the sidecar must be in the rendered official chart.
func checkSidecar(t *testing.T, where string, objs []object) {
	t.Helper()
	ss, c := sidecar(t, where, objs)
	spec := &ss.Spec.Template.Spec

	// A native sidecar, restricted, liveness only.
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("%s: the auditor is not a native sidecar (initContainers entry with restartPolicy: Always)", where)
	}
	containerSecurity(t, where, c, spec)
	probes(t, where, c, sidecarProbes)
	if c.ReadinessProbe != nil || c.StartupProbe != nil {
		t.Errorf("%s: the sidecar has a readiness or startup probe: it would gate the NATS pod", where)
	}

	// Args: serve, server scope, its own server, credentials, the policy file; no floor in
	// the pod template (changing it would roll every NATS pod).
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("%s: args %q do not start with serve", where, c.Args)
	}
	if scope, _ := flagValue(c.Args, "scope"); scope != "server" {
		t.Errorf("%s: --scope is %q, want server", where, scope)
	}
	if server, _ := flagValue(c.Args, "server"); server != "nats://localhost:4222" {
		t.Errorf("%s: --server=%q is not the pod's own NATS server on the chart's client port 4222", where, server)
	}
	if _, ok := flagValue(c.Args, "floor"); ok {
		t.Errorf("%s: --floor in the pod template: changing the floor would restart every NATS server", where)
	}
	// Every sidecar expects the servers its own StatefulSet runs.
	if expect, _ := flagValue(c.Args, "expect"); ss.Spec.Replicas == nil || expect != itoa(*ss.Spec.Replicas) {
		t.Errorf("%s: --expect=%q, the StatefulSet runs %v servers", where, expect, ss.Spec.Replicas)
	}
	credFile, kind := "", ""
	for _, f := range []string{"creds", "nkey"} {
		if v, ok := flagValue(c.Args, f); ok {
			credFile, kind = v, f
		}
	}
	if credFile == "" {
		t.Errorf("%s: neither --creds nor --nkey", where)
	}
	policy, _ := flagValue(c.Args, "policy.file")
	fileFrom := func(file string) *corev1.Volume {
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
			if !ok {
				continue
			}
			for i, v := range spec.Volumes {
				if v.Name != m.Name {
					continue
				}
				var items []corev1.KeyToPath
				switch {
				case v.Secret != nil:
					items = v.Secret.Items
				case v.ConfigMap != nil:
					items = v.ConfigMap.Items
				}
				if len(items) == 0 || slices.ContainsFunc(items, func(k corev1.KeyToPath) bool { return k.Path == rel }) {
					if m.SubPath != "" {
						t.Errorf("%s: %s is mounted with subPath: the kubelet never updates it", where, file)
					}
					return &spec.Volumes[i]
				}
			}
		}
		return nil
	}
	// The credentials: an optional Secret, readable by uid 65532.
	if v := fileFrom(credFile); v == nil || v.Secret == nil {
		t.Errorf("%s: --%s=%s is not a file of a mounted Secret", where, kind, credFile)
	} else {
		if v.Secret.Optional == nil || !*v.Secret.Optional {
			t.Errorf("%s: the credentials Secret %s is not optional: without it no NATS pod starts", where, v.Secret.SecretName)
		}
		if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o004 == 0 {
			t.Errorf("%s: the credentials file is not readable by uid 65532 (the NATS pod sets no fsGroup)", where)
		}
	}
	// The policy: an optional ConfigMap of this release, mounted as a directory.
	var policyCM string
	if v := fileFrom(policy); policy == "" || v == nil || v.ConfigMap == nil {
		t.Errorf("%s: --policy.file=%q is not a file of a mounted ConfigMap", where, policy)
	} else {
		policyCM = v.ConfigMap.Name
		if v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional {
			t.Errorf("%s: the policy ConfigMap volume is not optional", where)
		}
		if !strings.HasPrefix(policyCM, ss.Name) {
			t.Errorf("%s: policy ConfigMap %s is not named after the release's StatefulSet %s", where, policyCM, ss.Name)
		}
		if !slices.ContainsFunc(byKind[corev1.ConfigMap](objs), func(cm *corev1.ConfigMap) bool { return cm.Name == policyCM }) {
			t.Errorf("%s: the release does not render the policy ConfigMap %s", where, policyCM)
		}
	}
	if p := policyOf(t, objs); !strings.HasPrefix(p, "floor: \"") {
		t.Errorf("%s: policy.yaml %q does not hold the floor as a string", where, p)
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

	// The PodMonitor scrapes the sidecar's port on this release's NATS pods; it and the
	// PrometheusRule are named after the release and carry the monitoring labels.
	pm := one[podMonitor](t, where, objs)
	sel, err := labelSelector(&pm.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(ss.Spec.Template.Labels)) {
		t.Errorf("%s: the PodMonitor's selector does not match the NATS pods (%v)", where, err)
	}
	other := labels.Set{}
	for k, v := range ss.Spec.Template.Labels {
		other[k] = v
	}
	other["app.kubernetes.io/instance"] = "other"
	if sel != nil && sel.Matches(other) {
		t.Errorf("%s: the PodMonitor also selects another release's NATS pods", where)
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || len(c.Ports) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != c.Ports[0].Name {
		t.Errorf("%s: the PodMonitor does not scrape the sidecar's port: %+v", where, pm.Spec.PodMetricsEndpoints)
	}
	pr := one[prometheusRule](t, where, objs)
	sameRules(t, where+": the sidecar path's PrometheusRule", pr.Spec)
	for _, n := range []string{pm.Metadata.Name, pr.Metadata.Name} {
		if !strings.HasPrefix(n, ss.Name) {
			t.Errorf("%s: %s is not named after the release (%s)", where, n, ss.Name)
		}
	}
	for what, l := range map[string]map[string]string{"PodMonitor": pm.Metadata.Labels, "PrometheusRule": pr.Metadata.Labels} {
		if l["release"] == "" {
			t.Errorf("%s: %s has no release label: kube-prometheus-stack would not select it", where, what)
		}
	}

	// Same image as the rest of deploy/.
	if tag := strings.TrimPrefix(c.Image, image+":"); tag != chartAppVersion(t) {
		t.Errorf("%s: image tag %s, the chart's appVersion is %s", where, tag, chartAppVersion(t))
	}
}

// checkExampleValues asserts that the example values give what they say: three servers with
// JetStream, and the system account set through config.merge, the sidecar's nkey user in it.
func checkExampleValues(t *testing.T, objs []object) {
	t.Helper()
	ss, c := sidecar(t, "example values", objs)
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Errorf("example values: %v replicas, want 3", ss.Spec.Replicas)
	}
	if v, _ := flagValue(c.Args, "nkey"); v == "" {
		t.Errorf("example values: the sidecar does not authenticate as the nkey user: %q", c.Args)
	}
	if v, _ := flagValue(c.Args, "expect"); v != "3" {
		t.Errorf("example values: a 3-server NATS gives the sidecar --expect=%q, want 3", v)
	}
	var conf string
	for _, cm := range byKind[corev1.ConfigMap](objs) {
		if s, ok := cm.Data["nats.conf"]; ok {
			conf = s
		}
	}
	for _, want := range []string{`"system_account": "SYS"`, `"SYS": {`, `"nkey": "U`, `"$SYS.REQ.SERVER.PING"`, `"jetstream": {`, `"cluster": {`} {
		if !strings.Contains(conf, want) {
			t.Errorf("example values: nats.conf lacks %s:\n%s", want, conf)
		}
	}
}

// TestNatsSidecarFloorIsAString: YAML reads floor: 2.10 as the number 2.1; a floor lowered
// that way would turn CRITICALs into OK, so the templates refuse it with a clear error.
func TestNatsSidecarFloorIsAString(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ values, want string }{
		"number":               {"natsVersionAuditor:\n  floor: 2.10\n", "must be a quoted string"},
		"not a version":        {"natsVersionAuditor:\n  floor: latest\n", "is not a version"},
		"bad credentials type": {"natsVersionAuditor:\n  credentials:\n    type: token\n", "creds or nkey"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, out, err := renderNatsChart(t, name, sidecarValuesPath, valuesFile(t, c.values))
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("helm template with %q: want an error with %q, got %v:\n%s", c.values, c.want, err, out)
			}
		})
	}
	objs, out, err := renderNatsChart(t, "quoted", sidecarValuesPath, valuesFile(t, "natsVersionAuditor:\n  floor: \"2.10\"\n"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if p := policyOf(t, objs); p != "floor: \"2.10\"\n" {
		t.Errorf("quoted floor 2.10 renders policy.yaml %q", p)
	}
}

// sidecarArgs renders the official chart with the sidecar values and returns the sidecar's
// command line, for TestFlagsExist.
func sidecarArgs(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, files := range [][]string{{sidecarValuesPath}, {sidecarValuesPath, exampleValuesPath}} {
		objs, o, err := renderNatsChart(t, fmt.Sprint(files), files...)
		if err != nil {
			t.Fatalf("%v\n%s", err, o)
		}
		_, c := sidecar(t, "sidecar", objs)
		out = append(out, c.Args)
	}
	return out
}

// checkNatsBox: with the example values the official chart's nats-box and its `helm test` pod
// still connect. Once accounts have users the server refuses a connection without credentials,
// and the chart's default context has none: the example gives the default context an nkey user
// of APP from a Secret, which both the nats-box Deployment and the test pod mount where the
// context says.
func checkNatsBox(t *testing.T, out string) {
	t.Helper()
	var contexts *corev1.Secret
	var box *appsv1.Deployment
	var testPod *corev1.Pod
	var conf string
	for _, doc := range splitDocs([]byte(out)) {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		_ = yaml.Unmarshal(doc, &meta)
		var err error
		switch {
		case meta.Kind == "Secret" && meta.Metadata.Name == "nats-box-contexts":
			contexts = &corev1.Secret{}
			err = strict(doc, contexts)
		case meta.Kind == "Deployment" && meta.Metadata.Name == "nats-box":
			box = &appsv1.Deployment{}
			err = strict(doc, box)
		case meta.Kind == "Pod":
			testPod = &corev1.Pod{}
			err = strict(doc, testPod)
		case meta.Kind == "ConfigMap":
			var cm corev1.ConfigMap
			err = strict(doc, &cm)
			if c, ok := cm.Data["nats.conf"]; ok {
				conf = c
			}
		}
		if err != nil {
			t.Fatalf("example values: %s %s: %v", meta.Kind, meta.Metadata.Name, err)
		}
	}
	if contexts == nil || box == nil || testPod == nil {
		t.Fatalf("example values: nats-box contexts %v, Deployment %v, helm test pod %v: all must render", contexts != nil, box != nil, testPod != nil)
	}
	if testPod.Annotations["helm.sh/hook"] != "test" || len(testPod.Spec.Containers) != 1 ||
		!strings.Contains(strings.Join(testPod.Spec.Containers[0].Args, " "), "nats request") {
		t.Errorf("example values: the helm test pod is not the chart's request-reply test: %+v", testPod.Spec.Containers)
	}
	var ctx struct {
		URL   string `json:"url"`
		NKey  string `json:"nkey"`
		Creds string `json:"creds"`
		User  string `json:"user"`
	}
	if err := json.Unmarshal([]byte(contexts.StringData["default.json"]), &ctx); err != nil {
		t.Fatalf("example values: nats-box default context: %v", err)
	}
	var server struct {
		NoAuthUser string `json:"no_auth_user"`
		Accounts   map[string]struct {
			Users []struct {
				User string `json:"user"`
				NKey string `json:"nkey"`
			} `json:"users"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(natsConfJSON(conf), &server); err != nil {
		t.Fatalf("example values: nats.conf is not the JSON the chart writes: %v", err)
	}
	users, auditorKey := 0, ""
	var appKeys []string
	for name, acc := range server.Accounts {
		for _, u := range acc.Users {
			users++
			if u.NKey == "" {
				continue
			}
			if !nkeys.IsValidPublicUserKey(u.NKey) {
				t.Errorf("example values: account %s: nkey %s is not a public user key", name, u.NKey)
			}
			switch name {
			case "SYS":
				auditorKey = u.NKey
			case "APP":
				appKeys = append(appKeys, u.NKey)
			}
		}
	}
	if users > 0 && server.NoAuthUser == "" && ctx.NKey == "" && ctx.Creds == "" && ctx.User == "" {
		t.Fatalf("example values: accounts have users and no no_auth_user, but nats-box's default context %+v has no credentials: nats-box and helm test are refused", ctx)
	}
	if ctx.NKey == "" {
		return
	}
	if len(appKeys) == 0 || slices.Contains(appKeys, auditorKey) {
		t.Errorf("example values: the default context uses an nkey, but APP has no nkey user of its own (%v; the auditor's is %s)", appKeys, auditorKey)
	}
	for what, spec := range map[string]*corev1.PodSpec{"nats-box": &box.Spec.Template.Spec, "helm test pod": &testPod.Spec} {
		if !mountsSecretFile(spec, ctx.NKey) {
			t.Errorf("example values: %s does not mount a Secret at %s, the default context's nkey", what, ctx.NKey)
		}
		if !mountsSecretFile(spec, "/etc/nats-contexts/default.json") {
			t.Errorf("example values: %s does not mount the contexts Secret", what)
		}
	}
}

// bareValue is a value the chart's nats.conf leaves unquoted: a $VAR, a size such as 10Gi.
var bareValue = regexp.MustCompile(`(:\s*)(\$?\w*[A-Za-z]\w*)(\s*[,\n}])`)

// natsConfJSON quotes nats.conf's bare values, so that it decodes as JSON.
func natsConfJSON(conf string) []byte {
	return []byte(bareValue.ReplaceAllStringFunc(conf, func(m string) string {
		p := bareValue.FindStringSubmatch(m)
		if p[2] == "true" || p[2] == "false" || p[2] == "null" {
			return m
		}
		return p[1] + `"` + p[2] + `"` + p[3]
	}))
}

// mountsSecretFile reports whether a container of spec mounts a Secret volume at file's directory.
func mountsSecretFile(spec *corev1.PodSpec, file string) bool {
	dir := file[:strings.LastIndex(file, "/")]
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if strings.TrimSuffix(m.MountPath, "/") != dir {
				continue
			}
			if slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name && v.Secret != nil && v.Secret.SecretName != "" }) {
				return true
			}
		}
	}
	return false
}
