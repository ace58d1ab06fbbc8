// Package deploy_test checks what deploy/ ships: every Kubernetes manifest and every template the
// Helm chart renders decodes strictly into the k8s.io/api types (an unknown or misspelt field
// fails), every pod runs under the Pod Security Standard "restricted", the probes point where the
// daemon's contract says, the chart passes helm lint, the alert rules pass promtool, and every
// flag the manifests pass exists in the binary.
//
// helm, promtool and prometheus come from $TOOLS_BIN, else <module root>/.cache/tools/bin (make tools).
package deploy_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/natsaudit/nats-version-auditor/deploy/prometheus/rulefile"
	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

const (
	image         = "ghcr.io/natsaudit/nats-version-auditor"
	nonRootID     = int64(65532)
	healthzPath   = "/healthz"
	readyzPath    = "/readyz"
	completezPath = "/completez"
	monitoringAPI = "monitoring.coreos.com/v1"
)

// path joins a slash-separated path relative to the module root.
func path(t testing.TB, rel string) string {
	return filepath.Join(moduleRoot(t), filepath.FromSlash(rel))
}

func readFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tool returns the path of helm, promtool or prometheus. A missing tool fails the test: CI must run them.
func tool(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("TOOLS_BIN")
	if dir == "" {
		dir = path(t, ".cache/tools/bin")
	}
	p := filepath.Join(dir, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s not found at %s: run make tools (or set TOOLS_BIN)", name, p)
	}
	return p
}

// run runs a command from the module root and returns its combined output.
func run(t testing.TB, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// splitDocs splits a YAML stream into its documents, dropping those with nothing but comments.
func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		content := false
		for _, l := range strings.Split(cur.String(), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				content = true
				break
			}
		}
		if content {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if strings.TrimRight(l, " \r\n") == "---" {
			flush()
			continue
		}
		cur.WriteString(l)
	}
	flush()
	return docs
}

// strict decodes YAML into v, failing on unknown and duplicate fields.
func strict(doc []byte, v any) error {
	return yaml.UnmarshalStrict(doc, v)
}

// Small strict types for the custom resources this repository ships. They name the fields the
// manifests use (and a few neighbours), as spelt by Prometheus Operator and Argo Rollouts.

type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *namespaceSelector   `json:"namespaceSelector,omitempty"`
		Endpoints         []scrapeEndpoint     `json:"endpoints"`
	} `json:"spec"`
}

type podMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		JobLabel            string               `json:"jobLabel,omitempty"`
		Selector            metav1.LabelSelector `json:"selector"`
		NamespaceSelector   *namespaceSelector   `json:"namespaceSelector,omitempty"`
		PodMetricsEndpoints []scrapeEndpoint     `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

type namespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

type scrapeEndpoint struct {
	Port              string           `json:"port,omitempty"`
	Path              string           `json:"path,omitempty"`
	Scheme            string           `json:"scheme,omitempty"`
	Interval          string           `json:"interval,omitempty"`
	ScrapeTimeout     string           `json:"scrapeTimeout,omitempty"`
	HonorLabels       bool             `json:"honorLabels,omitempty"`
	TLSConfig         map[string]any   `json:"tlsConfig,omitempty"`
	Relabelings       []map[string]any `json:"relabelings,omitempty"`
	MetricRelabelings []map[string]any `json:"metricRelabelings,omitempty"`
}

type prometheusRule struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            rulefile.File     `json:"spec"`
}

type analysisTemplate struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Args []struct {
			Name      string         `json:"name"`
			Value     *string        `json:"value,omitempty"`
			ValueFrom map[string]any `json:"valueFrom,omitempty"`
		} `json:"args,omitempty"`
		Metrics []struct {
			Name                  string              `json:"name"`
			Interval              string              `json:"interval,omitempty"`
			InitialDelay          string              `json:"initialDelay,omitempty"`
			Count                 *intstr.IntOrString `json:"count,omitempty"`
			SuccessCondition      string              `json:"successCondition,omitempty"`
			FailureCondition      string              `json:"failureCondition,omitempty"`
			FailureLimit          *intstr.IntOrString `json:"failureLimit,omitempty"`
			InconclusiveLimit     *intstr.IntOrString `json:"inconclusiveLimit,omitempty"`
			ConsecutiveErrorLimit *intstr.IntOrString `json:"consecutiveErrorLimit,omitempty"`
			Provider              struct {
				Job *struct {
					Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
					Spec     batchv1.JobSpec   `json:"spec"`
				} `json:"job,omitempty"`
			} `json:"provider"`
		} `json:"metrics"`
	} `json:"spec"`
}

// object is one decoded Kubernetes object.
type object struct {
	Source     string // file, or chart template, it came from
	APIVersion string
	Kind       string
	Name       string
	Obj        any // *appsv1.Deployment, *serviceMonitor, ...
}

func (o object) String() string {
	return fmt.Sprintf("%s %s/%s %s", o.Source, o.APIVersion, o.Kind, o.Name)
}

// newObject returns the strict Go type of a kind, or nil for kinds deploy/ must not ship.
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	case monitoringAPI + " ServiceMonitor":
		return &serviceMonitor{}
	case monitoringAPI + " PodMonitor":
		return &podMonitor{}
	case monitoringAPI + " PrometheusRule":
		return &prometheusRule{}
	case "monitoring.coreos.com/v1alpha1 AlertmanagerConfig":
		// prometheus-operator's own type: its CRD schema is generated from it.
		return &monitoringv1alpha1.AlertmanagerConfig{}
	case "argoproj.io/v1alpha1 AnalysisTemplate":
		return &analysisTemplate{}
	}
	// Secrets included: deploy/ references existing Secrets and never ships secret material.
	return nil
}

// decodeObjects decodes every document of a YAML stream strictly into its Go type.
func decodeObjects(t testing.TB, source string, data []byte) []object {
	t.Helper()
	var objs []object
	for i, doc := range splitDocs(data) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name         string `json:"name"`
				GenerateName string `json:"generateName"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Errorf("%s, document %d: %v", source, i, err)
			continue
		}
		obj := newObject(meta.APIVersion, meta.Kind)
		if obj == nil {
			t.Errorf("%s, document %d: unexpected kind %s %s", source, i, meta.APIVersion, meta.Kind)
			continue
		}
		if err := strict(doc, obj); err != nil {
			t.Errorf("%s: %s %s: %v", source, meta.Kind, meta.Metadata.Name, err)
			continue
		}
		name := cmp.Or(meta.Metadata.Name, meta.Metadata.GenerateName)
		if name == "" {
			t.Errorf("%s: %s without a name", source, meta.Kind)
		}
		objs = append(objs, object{Source: source, APIVersion: meta.APIVersion, Kind: meta.Kind, Name: name, Obj: obj})
	}
	return objs
}

func byKind[T any](objs []object) []*T {
	var out []*T
	for _, o := range objs {
		if v, ok := o.Obj.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// one returns the only object of type T, failing unless there is exactly one.
func one[T any](t testing.TB, where string, objs []object) *T {
	t.Helper()
	all := byKind[T](objs)
	if len(all) != 1 {
		t.Fatalf("%s: %d objects of type %T, want 1", where, len(all), new(T))
	}
	return all[0]
}

// podSecurity asserts the Pod Security Standard "restricted" on a pod the repository owns, and
// on each of its containers.
func podSecurity(t testing.TB, where string, spec *corev1.PodSpec) {
	t.Helper()
	sc := spec.SecurityContext
	switch {
	case sc == nil:
		t.Errorf("%s: no pod securityContext", where)
	default:
		if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: pod runAsNonRoot is not true", where)
		}
		if sc.RunAsUser == nil || *sc.RunAsUser != nonRootID {
			t.Errorf("%s: pod runAsUser is not %d", where, nonRootID)
		}
		if sc.RunAsGroup == nil || *sc.RunAsGroup != nonRootID {
			t.Errorf("%s: pod runAsGroup is not %d", where, nonRootID)
		}
		if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod seccompProfile is not RuntimeDefault", where)
		}
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", where)
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("%s: uses a host namespace", where)
	}
	for _, v := range spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.EmptyDir == nil && v.Projected == nil && v.DownwardAPI == nil {
			t.Errorf("%s: volume %s is of a type the restricted profile does not allow, or unexpected", where, v.Name)
		}
	}
	if len(spec.Containers)+len(spec.InitContainers) == 0 {
		t.Errorf("%s: no containers", where)
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		containerSecurity(t, where, &c, spec)
	}
}

// containerSecurity asserts the restricted settings on one auditor container, which must not rely
// on the pod's: the sidecar runs in a pod whose securityContext belongs to the NATS chart.
func containerSecurity(t testing.TB, where string, c *corev1.Container, spec *corev1.PodSpec) {
	t.Helper()
	where = where + ", container " + c.Name
	if !strings.HasPrefix(c.Image, image+":") && !strings.HasPrefix(c.Image, image+"@") {
		t.Errorf("%s: image %q is not a tagged %s", where, c.Image, image)
	}
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: no securityContext", where)
		return
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", where)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", where)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: runAsNonRoot is not true", where)
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != nonRootID {
		t.Errorf("%s: runAsUser is not %d", where, nonRootID)
	}
	if sc.RunAsGroup == nil || *sc.RunAsGroup != nonRootID {
		t.Errorf("%s: runAsGroup is not %d", where, nonRootID)
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s: capabilities do not drop ALL (and add none)", where)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: seccompProfile is not RuntimeDefault", where)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("%s: no %s request", where, r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("%s: no %s limit", where, r)
		}
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			t.Errorf("%s: hostPort %d", where, p.HostPort)
		}
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("%s: volume %s is mounted read-write", where, m.Name)
		}
		if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			t.Errorf("%s: mounts volume %s, which the pod does not have", where, m.Name)
		}
	}
	if len(c.Command) > 0 {
		t.Errorf("%s: overrides the image's entrypoint (command %q)", where, c.Command)
	}
}

// probeKind says which probes an auditor container must have.
type probeKind int

const (
	standaloneProbes probeKind = iota // liveness /healthz, readiness /readyz (an audit finished)
	sidecarProbes                     // liveness /healthz, readiness never on the auditor's state
	jobProbes                         // none: a run-to-completion check
)

func httpPath(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return ""
	}
	return p.HTTPGet.Path
}

// probes asserts a container's probes, and that they target one of its named ports.
func probes(t testing.TB, where string, c *corev1.Container, kind probeKind) {
	t.Helper()
	where = where + ", container " + c.Name
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.HTTPGet == nil {
			t.Errorf("%s: %s probe is not an HTTP GET", where, name)
			continue
		}
		port := p.HTTPGet.Port
		if port.Type != intstr.String || !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == port.StrVal }) {
			t.Errorf("%s: %s probe targets %q, not a named port of the container", where, name, port.String())
		}
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		if httpPath(p) == completezPath {
			t.Errorf("%s: %s probe on %s (last audit complete): every NATS rolling upgrade would take the pod out", where, name, completezPath)
		}
	}
	switch kind {
	case standaloneProbes:
		if httpPath(c.LivenessProbe) != healthzPath {
			t.Errorf("%s: liveness probe is not GET %s", where, healthzPath)
		}
		if httpPath(c.ReadinessProbe) != readyzPath {
			t.Errorf("%s: readiness probe is not GET %s", where, readyzPath)
		}
	case sidecarProbes:
		if httpPath(c.LivenessProbe) != healthzPath {
			t.Errorf("%s: liveness probe is not GET %s", where, healthzPath)
		}
		if c.ReadinessProbe != nil && httpPath(c.ReadinessProbe) != healthzPath {
			t.Errorf("%s: a sidecar's readiness probe may only be GET %s (it gates the NATS pod)", where, healthzPath)
		}
		if httpPath(c.StartupProbe) == readyzPath {
			t.Errorf("%s: startup probe on %s would hold the NATS pod until every server answers", where, readyzPath)
		}
	case jobProbes:
		if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
			t.Errorf("%s: a check Job has probes", where)
		}
	}
}

// flagValue returns the value of --name in args (--name=value or --name value).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// credsMounted asserts that --creds or --nkey names a file the container mounts from a Secret
// volume.
func credsMounted(t testing.TB, where string, c *corev1.Container, spec *corev1.PodSpec) {
	t.Helper()
	for _, flag := range []string{"creds", "nkey"} {
		if file, ok := flagValue(c.Args, flag); ok {
			secretFileMounted(t, where, c, spec, flag, file)
		}
	}
}

// secretFileMounted asserts that the file --flag names is one the container mounts from a Secret
// volume, readable by the auditor's uid.
func secretFileMounted(t testing.TB, where string, c *corev1.Container, spec *corev1.PodSpec, flag, creds string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(creds, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			i := slices.IndexFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == rel })
			if len(v.Secret.Items) > 0 && i < 0 {
				continue
			}
			// The file must be readable by uid/gid 65532: as its group when the pod's fsGroup is
			// 65532, else as "other".
			mode := int32(corev1.SecretVolumeSourceDefaultMode)
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			if i >= 0 && v.Secret.Items[i].Mode != nil {
				mode = *v.Secret.Items[i].Mode
			}
			readBit := int32(0o004)
			if sc := spec.SecurityContext; sc != nil && sc.FSGroup != nil && *sc.FSGroup == nonRootID {
				readBit = 0o040
			}
			if mode&readBit == 0 || mode > 0o777 {
				t.Errorf("%s, container %s: --%s=%s has mode %#o, which uid %d cannot read", where, c.Name, flag, creds, mode, nonRootID)
			}
			return
		}
	}
	t.Errorf("%s, container %s: --%s=%s is not a file of a mounted Secret volume", where, c.Name, flag, creds)
}

func labelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// exitCode is the exit status of a command that ran, 0 without error, -1 if it did not run.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestSplitDocs(t *testing.T) {
	docs := splitDocs([]byte("# only a comment\n---\na: 1\n---\n\n---\n# c\nb: 2\n---   \n"))
	if len(docs) != 2 || !strings.Contains(string(docs[0]), "a: 1") || !strings.Contains(string(docs[1]), "b: 2") {
		t.Fatalf("splitDocs: %q", docs)
	}
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 1\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          securityContext: {readOnlyRootFilesytem: true}\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec:\n  endpoints: [{port: metrics, intervall: 30s}]\n",
		"apiVersion: v1\nkind: Service\nmetadata: {name: x, name: y}\n",
		"apiVersion: monitoring.coreos.com/v1alpha1\nkind: AlertmanagerConfig\nmetadata: {name: x}\nspec:\n  inhibitRules: [{sourceMatchers: [{name: alertname, value: A}]}]\n",
	} {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		_ = yaml.Unmarshal([]byte(doc), &meta)
		if err := strict([]byte(doc), newObject(meta.APIVersion, meta.Kind)); err == nil {
			t.Errorf("accepted:\n%s", doc)
		}
	}
	if newObject("v1", "Secret") != nil {
		t.Error("deploy/ must not ship Secrets")
	}
}

// moduleRoot is the directory holding go.mod, above the test's working directory (deploy/).
func moduleRoot(t testing.TB) string {
	t.Helper()
	dir, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
