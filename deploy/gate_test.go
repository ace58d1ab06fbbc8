package deploy_test

import (
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const gateDir = "deploy/gate"

var argoArg = regexp.MustCompile(`\{\{\s*args\.([A-Za-z0-9_-]+)\s*\}\}`)

// gateObjects decodes every manifest in deploy/gate (the CI snippets live in deploy/gate/ci).
func gateObjects(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob(path(t, gateDir+"/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests in deploy/gate")
	}
	var objs []object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeObjects(t, gateDir+"/"+filepath.Base(f), b)...)
	}
	return objs
}

// checkGatePod asserts what a gate's pod must be: restricted, one check container, no probes, no
// retries hiding a failure.
func checkGatePod(t *testing.T, where string, job *batchv1.JobSpec) {
	t.Helper()
	if job.BackoffLimit == nil || *job.BackoffLimit != 0 {
		t.Errorf("%s: backoffLimit is not 0: a failed check must fail the Job at once", where)
	}
	if job.ActiveDeadlineSeconds == nil {
		t.Errorf("%s: no activeDeadlineSeconds", where)
	}
	spec := &job.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q, want Never", where, spec.RestartPolicy)
	}
	podSecurity(t, where, spec)
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", where, len(spec.Containers))
	}
	c := &spec.Containers[0]
	probes(t, where, c, jobProbes)
	credsMounted(t, where, c, spec)
	if len(c.Args) == 0 || c.Args[0] != "check" {
		t.Errorf("%s: args %q do not run check", where, c.Args)
	}
	for _, f := range []string{"server", "creds", "floor"} {
		if _, ok := flagValue(c.Args, f); !ok {
			t.Errorf("%s: check without --%s", where, f)
		}
	}
}

func TestGateManifests(t *testing.T) {
	objs := gateObjects(t)
	if want := []string{"AnalysisTemplate", "Deployment", "Job", "Job"}; !slices.Equal(kindsOf(objs), want) {
		t.Fatalf("deploy/gate holds %v, want %v", kindsOf(objs), want)
	}

	var job, presync *batchv1.Job
	for _, j := range byKind[batchv1.Job](objs) {
		switch {
		case j.Annotations["helm.sh/hook"] != "":
			job = j
		case j.Annotations["argocd.argoproj.io/hook"] != "":
			presync = j
		}
	}
	if job == nil || presync == nil {
		t.Fatal("deploy/gate lacks the Helm hook Job or the Argo CD PreSync Job")
	}
	a := job.Annotations
	// pre-install too: helm install and helm upgrade --install of a new release run no
	// pre-upgrade hook, and would deploy ungated.
	if hooks := strings.Split(a["helm.sh/hook"], ","); !slices.Contains(hooks, "pre-upgrade") || !slices.Contains(hooks, "pre-install") {
		t.Errorf("Job hook %q does not run on both pre-install and pre-upgrade", a["helm.sh/hook"])
	}
	if !strings.Contains(job.Name, "{{ .Release.Name }}") {
		t.Errorf("Helm hook Job name %q is not release-scoped: two releases in one namespace would collide", job.Name)
	}
	if a["helm.sh/hook-delete-policy"] == "" {
		t.Error("Job has no helm.sh/hook-delete-policy: a second upgrade would find the old Job")
	}
	if !strings.Contains(a["helm.sh/hook-delete-policy"], "before-hook-creation") {
		t.Error("hook-delete-policy lacks before-hook-creation: a failed Job blocks the next attempt")
	}
	checkGatePod(t, "Helm hook Job", &job.Spec)

	// Argo CD: a PreSync hook runs before every sync, the first included; a generated name per
	// sync, and a failed Job kept for its logs.
	if presync.Annotations["argocd.argoproj.io/hook"] != "PreSync" {
		t.Errorf("Argo CD Job hook %q, want PreSync", presync.Annotations["argocd.argoproj.io/hook"])
	}
	if p := presync.Annotations["argocd.argoproj.io/hook-delete-policy"]; p != "HookSucceeded" {
		t.Errorf("Argo CD hook-delete-policy %q, want HookSucceeded (a failed gate keeps its logs)", p)
	}
	if presync.GenerateName == "" || presync.Name != "" {
		t.Errorf("Argo CD PreSync Job: want generateName only, have name %q generateName %q", presync.Name, presync.GenerateName)
	}
	checkGatePod(t, "Argo CD PreSync Job", &presync.Spec)

	// The application's own pods: an init container (not a native sidecar) runs check to
	// completion before the application's containers start, on every pod creation.
	app := one[appsv1.Deployment](t, gateDir, objs)
	spec := &app.Spec.Template.Spec
	if len(spec.InitContainers) != 1 {
		t.Fatalf("app-init-container.yaml: %d init containers, want 1", len(spec.InitContainers))
	}
	ic := &spec.InitContainers[0]
	// The pod and the application belong to the user: only the gate is held to "restricted".
	containerSecurity(t, "app-init-container.yaml", ic, spec)
	if ic.RestartPolicy != nil {
		t.Error("app-init-container.yaml: the gate is a native sidecar: the application would start beside it instead of after it")
	}
	probes(t, "app-init-container.yaml", ic, jobProbes)
	if len(ic.Args) == 0 || ic.Args[0] != "check" {
		t.Errorf("app-init-container.yaml: init container args %q do not run check", ic.Args)
	}
	checkExporterGate(t, "app-init-container.yaml", ic, spec)

	at := one[analysisTemplate](t, gateDir, objs)
	if len(at.Spec.Metrics) != 1 || at.Spec.Metrics[0].Provider.Job == nil {
		t.Fatalf("AnalysisTemplate: want one metric with the job provider, have %+v", at.Spec.Metrics)
	}
	m := at.Spec.Metrics[0]
	if m.FailureLimit != nil && m.FailureLimit.IntValue() != 0 {
		t.Errorf("AnalysisTemplate: failureLimit %s lets a failed check pass", m.FailureLimit.String())
	}
	if m.Count != nil && m.Count.IntValue() > 1 || m.Interval != "" {
		t.Error("AnalysisTemplate: the check should run once per analysis")
	}
	checkGatePod(t, "AnalysisTemplate job", &m.Provider.Job.Spec)
	// Every {{args.x}} the Job uses is declared.
	declared := map[string]bool{}
	for _, arg := range at.Spec.Args {
		declared[arg.Name] = true
	}
	raw := string(readFile(t, gateDir+"/argo-rollouts-analysistemplate.yaml"))
	for _, used := range argoArg.FindAllStringSubmatch(raw, -1) {
		if !declared[used[1]] {
			t.Errorf("AnalysisTemplate uses {{args.%s}}, which it does not declare", used[1])
		}
	}
}

// TestGateAcceptAndExpect: the gates that run on every pod creation or sync let WARNING through
// (a NATS upgrade between releases at the floor), the ones that run once per release of the
// application pass on OK alone, as deploy/README.md says; and the gates that ask NATS expect as
// many servers as the example NATS values run.
func TestGateAcceptAndExpect(t *testing.T) {
	objs := gateObjects(t)
	args := map[string][]string{}
	for _, j := range byKind[batchv1.Job](objs) {
		switch {
		case j.Annotations["helm.sh/hook"] != "":
			args["helm-hook-job.yaml"] = j.Spec.Template.Spec.Containers[0].Args
		case j.Annotations["argocd.argoproj.io/hook"] != "":
			args["argocd-presync-job.yaml"] = j.Spec.Template.Spec.Containers[0].Args
		}
	}
	args["app-init-container.yaml"] = one[appsv1.Deployment](t, gateDir, objs).Spec.Template.Spec.InitContainers[0].Args
	at := one[analysisTemplate](t, gateDir, objs)
	args["argo-rollouts-analysistemplate.yaml"] = substituteArgs(at, at.Spec.Metrics[0].Provider.Job.Spec.Template.Spec.Containers[0].Args)

	var example struct {
		Config struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(readFile(t, exampleValuesPath), &example); err != nil {
		t.Fatal(err)
	}
	if !example.Config.Cluster.Enabled || example.Config.Cluster.Replicas < 2 {
		t.Fatalf("%s: config.cluster %+v, want a cluster", exampleValuesPath, example.Config.Cluster)
	}
	servers := strconv.Itoa(example.Config.Cluster.Replicas)

	acceptsWarning := map[string]bool{"app-init-container.yaml": true, "argocd-presync-job.yaml": true,
		"helm-hook-job.yaml": false, "argo-rollouts-analysistemplate.yaml": false}
	for file, a := range args {
		accept, ok := flagValue(a, "accept")
		if acceptsWarning[file] != (ok && accept == "warning") || ok && accept != "warning" {
			t.Errorf("%s: --accept=%q (set: %v), want warning accepted: %v", file, accept, ok, acceptsWarning[file])
		}
		if _, ok := flagValue(a, "exporter"); ok {
			continue
		}
		if expect, _ := flagValue(a, "expect"); expect != servers {
			t.Errorf("%s: --expect=%q, the example NATS values run %s servers", file, expect, servers)
		}
	}
	if len(args) != len(acceptsWarning) {
		t.Errorf("gates %v, want %v", slices.Sorted(maps.Keys(args)), slices.Sorted(maps.Keys(acceptsWarning)))
	}
	readme := string(readFile(t, readmePath))
	for file, accepts := range acceptsWarning {
		if accepts && !strings.Contains(readme, "`gate/"+file+"`") {
			t.Errorf("%s does not name gate/%s", readmePath, file)
		}
	}
}

// checkExporterGate asserts what a gate that asks the standalone auditor instead of NATS must
// be: check --exporter at the Service the chart renders for release nats-version-auditor in
// namespace monitoring (and the kustomize base's), a fresh report (--max-age above the
// auditor's --audit.min-interval), the auditor's floor named, and no system-account
// credentials anywhere in its pod.
func checkExporterGate(t *testing.T, where string, c *corev1.Container, spec *corev1.PodSpec) {
	t.Helper()
	exporter, ok := flagValue(c.Args, "exporter")
	if !ok {
		t.Fatalf("%s: check without --exporter: %q", where, c.Args)
	}
	for _, f := range []string{"server", "creds", "nkey", "context", "user", "password", "token"} {
		if _, ok := flagValue(c.Args, f); ok {
			t.Errorf("%s: check --exporter with --%s: the application's namespace holds no NATS credentials", where, f)
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil || v.Projected != nil {
			t.Errorf("%s: volume %s mounts a Secret into the application's pod", where, v.Name)
		}
	}
	u, err := url.Parse(exporter)
	if err != nil || u.Scheme != "http" {
		t.Fatalf("%s: --exporter=%s is not an http URL: %v", where, exporter, err)
	}
	out, err := helm(t, "template", "nats-version-auditor", chartDir, "--namespace", "monitoring",
		"-f", valuesFile(t, requiredValues), "--show-only", "templates/service.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	svc := one[corev1.Service](t, "chart Service", decodeObjects(t, "chart Service", []byte(out)))
	_, base := kustomizeBase(t)
	baseSvc := one[corev1.Service](t, "kustomize base", base)
	if want := svc.Name + ".monitoring.svc"; u.Hostname() != want || baseSvc.Name != svc.Name {
		t.Errorf("%s: --exporter host %s, want %s (the chart's Service for release nats-version-auditor; the kustomize base's is %s)", where, u.Hostname(), want, baseSvc.Name)
	}
	if u.Port() != itoa(svc.Spec.Ports[0].Port) {
		t.Errorf("%s: --exporter port %s, the Service's is %d", where, u.Port(), svc.Spec.Ports[0].Port)
	}
	var values struct {
		Audit struct {
			Floor       string `json:"floor"`
			MinInterval string `json:"minInterval"`
		} `json:"audit"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	// The floor the application needs, which the auditor must hold the system to: check refuses
	// a report held to another, rather than pass on a floor staged lower.
	if floor, _ := flagValue(c.Args, "floor"); floor != values.Audit.Floor {
		t.Errorf("%s: --floor=%q, want the chart's audit.floor %s", where, floor, values.Audit.Floor)
	}
	minInterval, err := time.ParseDuration(values.Audit.MinInterval)
	if err != nil {
		t.Fatalf("the chart's audit.minInterval: %v", err)
	}
	maxAge, _ := flagValue(c.Args, "max-age")
	age, err := time.ParseDuration(maxAge)
	if err != nil || age <= minInterval {
		t.Errorf("%s: --max-age=%q, want a duration above the auditor's --audit.min-interval %s", where, maxAge, minInterval)
	}
}

// workflow is the part of a GitHub Actions workflow the gate tests read.
type workflow struct {
	Jobs map[string]struct {
		RunsOn         []string          `json:"runs-on"`
		TimeoutMinutes int               `json:"timeout-minutes"`
		Env            map[string]string `json:"env"`
		Steps          []struct {
			Name string            `json:"name"`
			Env  map[string]string `json:"env"`
			Run  string            `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// readWorkflow decodes a workflow file: YAML 1.1 reads the key "on" as true, so the top level is
// read loosely, and the jobs strictly.
func readWorkflow(t *testing.T, file string) workflow {
	t.Helper()
	var top map[string]json.RawMessage
	if err := yaml.Unmarshal(readFile(t, file), &top); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, k := range []string{"name", "jobs"} {
		if _, ok := top[k]; !ok {
			t.Errorf("%s has no %s", file, k)
		}
	}
	var wf workflow
	if err := strict([]byte(`{"jobs":`+string(top["jobs"])+`}`), &wf); err != nil {
		t.Fatalf("%s jobs: %v", file, err)
	}
	return wf
}

func TestGateCISnippets(t *testing.T) {
	t.Parallel()
	// The GitHub Actions job parses, and gates on check --format nagios.
	wf := readWorkflow(t, gateDir+"/ci/github-actions.yml")
	var runs string
	for name, j := range wf.Jobs {
		for _, s := range j.Steps {
			runs += s.Run
		}
		// A GitHub-hosted runner cannot reach a NATS inside a private cluster network: the job
		// runs on a self-hosted runner, or port-forwards.
		hosted := slices.ContainsFunc(j.RunsOn, func(l string) bool {
			return strings.HasPrefix(l, "ubuntu-") || strings.HasPrefix(l, "windows-") || strings.HasPrefix(l, "macos-")
		})
		if (hosted || !slices.Contains(j.RunsOn, "self-hosted")) && !strings.Contains(runs, "port-forward") {
			t.Errorf("ci/github-actions.yml job %s runs on %v, which cannot reach NATS in a cluster network", name, j.RunsOn)
		}
	}
	if !strings.Contains(runs, "check") || !strings.Contains(runs, "--format nagios") || !strings.Contains(runs, "exit $rc") {
		t.Error("ci/github-actions.yml does not gate on the exit code of check --format nagios")
	}
	if strings.Contains(runs, "${{") {
		t.Error("ci/github-actions.yml expands expressions inside run: (script injection); pass them through env:")
	}
	if sh, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command(sh, "-n", "-c", runs).CombinedOutput(); err != nil {
			t.Errorf("ci/github-actions.yml run script: %v\n%s", err, out)
		}
	}
}

// TestGateScript runs ci/nats-version-gate.sh against a fake auditor for every exit status.
func TestGateScript(t *testing.T) {
	t.Parallel()
	script := path(t, gateDir+"/ci/nats-version-gate.sh")
	if fi, err := os.Stat(script); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s is missing or not executable", script)
	}
	if out, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s", err, out)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "auditor")
	argsFile := filepath.Join(dir, "args")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > \""+argsFile+"\"\necho \"NATS VERSIONS STATUS - fake | servers=3;;;0\"\nexit $FAKE_RC\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rc, allowWarning, want int
	}{
		{0, 0, 0}, {1, 0, 1}, {1, 1, 0}, {2, 0, 2}, {2, 1, 2}, {3, 0, 3}, {3, 1, 3}, {127, 0, 3},
	} {
		cmd := exec.Command("sh", script, "--account", "APP")
		cmd.Env = append(os.Environ(), "NATS_VERSION_AUDITOR="+fake, "FAKE_RC="+itoa(int32(c.rc)), "ALLOW_WARNING="+itoa(int32(c.allowWarning)))
		out, err := cmd.CombinedOutput()
		if got := exitCode(err); got != c.want {
			t.Errorf("check exits %d (ALLOW_WARNING=%d): gate exits %d, want %d\n%s", c.rc, c.allowWarning, got, c.want, out)
		}
		if !strings.Contains(string(out), "NATS VERSIONS") {
			t.Errorf("the gate does not pass the nagios line through:\n%s", out)
		}
	}
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(args)); got != "check --floor 2.14.0 --format nagios --account APP" {
		t.Errorf("the gate runs: auditor %s", got)
	}
}

// TestGateJobCopiesIntoAChart renders the hook Job as part of a throwaway chart, the way the
// header tells users to use it, for two releases and for an install and an upgrade.
func TestGateJobCopiesIntoAChart(t *testing.T) {
	t.Parallel()
	chart := t.TempDir()
	if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"Chart.yaml":                       []byte("apiVersion: v2\nname: app\nversion: 0.1.0\n"),
		"templates/nats-version-gate.yaml": readFile(t, gateDir+"/helm-hook-job.yaml"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(chart, filepath.FromSlash(name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := map[string]bool{}
	for _, c := range []struct{ release, flag string }{{"app", "--is-upgrade=false"}, {"app", "--is-upgrade"}, {"other", "--is-upgrade=false"}} {
		out, err := helm(t, "template", c.release, chart, c.flag)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, out)
		}
		objs := decodeObjects(t, "gate Job in a chart", []byte(out))
		job := one[batchv1.Job](t, "gate Job in a chart", objs)
		hooks := strings.Split(job.Annotations["helm.sh/hook"], ",")
		if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
			t.Errorf("rendered Job lost its hook annotation: %v", job.Annotations)
		}
		if job.Name != c.release+"-nats-version-gate" {
			t.Errorf("release %s: Job %q, want %s-nats-version-gate", c.release, job.Name, c.release)
		}
		names[job.Name] = true
	}
	if len(names) != 2 {
		t.Errorf("two releases render Jobs %v: they would collide", names)
	}
}
