package deploy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kustomization is the part of a Kustomization the base uses.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors,omitempty"`
		IncludeTemplates bool              `json:"includeTemplates,omitempty"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images,omitempty"`
}

// kustomizeBase decodes the base's kustomization and every resource it lists.
func kustomizeBase(t *testing.T) (kustomization, []object) {
	t.Helper()
	var k kustomization
	if err := strict(readFile(t, "deploy/kubernetes/kustomization.yaml"), &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	var objs []object
	for _, r := range k.Resources {
		rel := "deploy/kubernetes/" + r
		objs = append(objs, decodeObjects(t, rel, readFile(t, rel))...)
	}
	return k, objs
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k, _ := kustomizeBase(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", k.APIVersion, k.Kind)
	}
	if k.Namespace != "" {
		t.Errorf("the base sets namespace %q: leave it to overlays", k.Namespace)
	}
	for _, l := range k.Labels {
		if l.IncludeSelectors {
			t.Error("kustomization labels include selectors: a Deployment's selector is immutable, adding labels to it breaks upgrades")
		}
	}
	files, err := filepath.Glob(path(t, "deploy/kubernetes/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name != "kustomization.yaml" && !slices.Contains(k.Resources, name) {
			t.Errorf("%s is not listed in kustomization.yaml", name)
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(path(t, "deploy/kubernetes/"+r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
}

func TestKustomizeBase(t *testing.T) {
	k, objs := kustomizeBase(t)

	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
	}
	slices.Sort(kinds)
	if want := []string{"AlertmanagerConfig", "ConfigMap", "Deployment", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Fatalf("base objects %v, want %v", kinds, want)
	}

	d := one[appsv1.Deployment](t, "kustomize base", objs)
	svc := one[corev1.Service](t, "kustomize base", objs)
	sa := one[corev1.ServiceAccount](t, "kustomize base", objs)
	sm := one[serviceMonitor](t, "kustomize base", objs)
	pr := one[prometheusRule](t, "kustomize base", objs)

	checkStandalone(t, "deploy/kubernetes/deployment.yaml", d, svc, sa, sm)

	if len(pr.Spec.Groups) == 0 {
		t.Error("prometheusrule.yaml has no rule groups")
	}

	// The base's Deployment carries its tag, and the kustomization pins the same one.
	c := d.Spec.Template.Spec.Containers[0]
	tag := strings.TrimPrefix(c.Image, image+":")
	if len(k.Images) != 1 || k.Images[0].Name != image || k.Images[0].NewTag != tag {
		t.Errorf("kustomization images %+v do not pin %s to the Deployment's tag %s", k.Images, image, tag)
	}
	// Overlays patch the NATS URL and the system's name by index (see kustomization.yaml).
	if len(c.Args) < 3 || !strings.HasPrefix(c.Args[1], "--server=") || !strings.HasPrefix(c.Args[2], "--metrics.system=") {
		t.Errorf("args[1] is not --server=... or args[2] not --metrics.system=...: %q", c.Args)
	}
	// The default URL names the NATS namespace (a bare host would resolve in the auditor's), and
	// the default system is the one the chart derives from it and the sidecar values give.
	if server, _ := flagValue(c.Args, "server"); server != "nats://nats.nats.svc:4222" {
		t.Errorf("--server=%s, want nats://nats.nats.svc:4222", server)
	}
	if system, _ := flagValue(c.Args, "metrics.system"); system != "nats/nats" {
		t.Errorf("--metrics.system=%s, want nats/nats", system)
	}
	cm := one[corev1.ConfigMap](t, "kustomize base", objs)
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.Labels)
	}
	checkDashboardConfigMap(t, cm)
	// The inhibition, generated from the example; no namespace of its own, so that the overlay's
	// is both its and the ServiceMonitor's (the operator matches the alerts' namespace to it).
	amc := one[monitoringv1alpha1.AlertmanagerConfig](t, "kustomize base", objs)
	if amc.Namespace != "" || amc.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("AlertmanagerConfig namespace %q, labels %v: want no namespace and the release label", amc.Namespace, amc.Labels)
	}
	checkAlertmanagerConfig(t, "deploy/kubernetes/alertmanagerconfig.yaml", amc)
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "nats-version-auditor-creds" {
			t.Errorf("the base mounts Secret %s, want the documented nats-version-auditor-creds", v.Secret.SecretName)
		}
	}
}

// checkStandalone asserts what the standalone auditor needs from its Deployment, Service,
// ServiceAccount and ServiceMonitor (sm may be nil), wherever they come from.
func checkStandalone(t *testing.T, where string, d *appsv1.Deployment, svc *corev1.Service, sa *corev1.ServiceAccount, sm *serviceMonitor) {
	t.Helper()
	spec := &d.Spec.Template.Spec
	podSecurity(t, where, spec)

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("%s: replicas is not 1: one auditor audits the whole system", where)
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%s: %d containers and %d init containers, want one container", where, len(spec.Containers), len(spec.InitContainers))
	}
	c := &spec.Containers[0]
	probes(t, where, c, standaloneProbes)
	credsMounted(t, where, c, spec)
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("%s: args %q do not start with serve", where, c.Args)
	}
	if scope, ok := flagValue(c.Args, "scope"); ok && scope != "cluster" {
		t.Errorf("%s: --scope=%s: the standalone auditor audits the whole cluster", where, scope)
	}
	if !slices.ContainsFunc([]string{"creds", "nkey", "context"}, func(f string) bool { _, ok := flagValue(c.Args, f); return ok }) {
		t.Errorf("%s: neither --creds, --nkey nor --context", where)
	}
	metricsPort := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
	if metricsPort < 0 {
		t.Fatalf("%s: no container port named metrics", where)
	}
	if listen, _ := flagValue(c.Args, "web.listen-address"); listen != "" && !strings.HasSuffix(listen, ":"+itoa(c.Ports[metricsPort].ContainerPort)) {
		t.Errorf("%s: --web.listen-address=%s does not match container port %d", where, listen, c.Ports[metricsPort].ContainerPort)
	}

	// The selector picks the pod template, and the Service picks the pods.
	sel, err := metaSelector(d)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: the Deployment's selector does not match its pod template", where)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("%s: Service %s does not select the auditor's pods", where, svc.Name)
	}
	sp := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" })
	if sp < 0 {
		t.Fatalf("%s: Service %s has no port named metrics", where, svc.Name)
	}
	if tp := svc.Spec.Ports[sp].TargetPort; tp != intstr.FromString("metrics") {
		t.Errorf("%s: Service port metrics targets %s, want the named container port metrics", where, tp.String())
	}

	if spec.ServiceAccountName != sa.Name {
		t.Errorf("%s: pods run as %q, not the ServiceAccount %s", where, spec.ServiceAccountName, sa.Name)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("%s: ServiceAccount %s automounts its token", where, sa.Name)
	}

	if sm == nil {
		return
	}
	smSel, err := labelSelector(&sm.Spec.Selector)
	if err != nil || smSel.Empty() || !smSel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("%s: ServiceMonitor %s does not select Service %s (%v)", where, sm.Metadata.Name, svc.Name, err)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("%s: ServiceMonitor %s does not scrape the Service port metrics: %+v", where, sm.Metadata.Name, sm.Spec.Endpoints)
	} else if p := sm.Spec.Endpoints[0].Path; p != "" {
		if tp, _ := flagValue(c.Args, "web.telemetry-path"); p != tp && !(tp == "" && p == "/metrics") {
			t.Errorf("%s: ServiceMonitor scrapes %s, the auditor serves %q", where, p, tp)
		}
	}
}

func metaSelector(d *appsv1.Deployment) (labels.Selector, error) {
	if d.Spec.Selector == nil {
		return labels.Nothing(), nil
	}
	return labelSelector(d.Spec.Selector)
}

// TestKustomizeMonitoringLabels: a default kube-prometheus-stack selects monitors and rules by
// release; both objects of the base carry the documented default.
func TestKustomizeMonitoringLabels(t *testing.T) {
	_, objs := kustomizeBase(t)
	sm := one[serviceMonitor](t, "kustomize base", objs)
	pr := one[prometheusRule](t, "kustomize base", objs)
	for what, l := range map[string]map[string]string{"ServiceMonitor": sm.Metadata.Labels, "PrometheusRule": pr.Metadata.Labels} {
		if l["release"] != "kube-prometheus-stack" {
			t.Errorf("%s labels %v lack release: kube-prometheus-stack", what, l)
		}
	}
}
