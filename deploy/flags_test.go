package deploy_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// auditorBinary builds cmd/nats-version-auditor once per test run, into the git-ignored
// .cache/deploy-test/ where go build leaves an up-to-date binary alone on the next run.
func auditorBinary(t *testing.T) string {
	t.Helper()
	root := moduleRoot(t)
	binOnce.Do(func() {
		dir := filepath.Join(root, ".cache", "deploy-test")
		if binErr = os.MkdirAll(dir, 0o755); binErr != nil {
			return
		}
		binPath = filepath.Join(dir, "nats-version-auditor")
		// -trimpath as make build: CI has compiled the packages that way already.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "./cmd/nats-version-auditor")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// invocation is one command line deploy/ gives the auditor.
type invocation struct {
	where string
	args  []string
}

func invocations(t *testing.T) []invocation {
	t.Helper()
	var out []invocation
	deployments := func(where string, objs []object) {
		for _, d := range byKind[appsv1.Deployment](objs) {
			out = append(out, invocation{where, d.Spec.Template.Spec.Containers[0].Args})
		}
	}
	_, base := kustomizeBase(t)
	deployments("kustomize base", base)
	for name, values := range map[string]string{"defaults": "", "monitoring": monitoringValues, "context": contextValues, "configmap context": configMapContextValues} {
		deployments("chart ("+name+")", render(t, name, values))
	}

	for _, args := range sidecarArgs(t) {
		out = append(out, invocation{"NATS chart sidecar", args})
	}

	gate := gateObjects(t)
	for _, j := range byKind[batchv1.Job](gate) {
		out = append(out, invocation{"gate Job " + cmp.Or(j.Name, j.GenerateName), j.Spec.Template.Spec.Containers[0].Args})
	}
	for _, d := range byKind[appsv1.Deployment](gate) {
		for _, c := range d.Spec.Template.Spec.InitContainers {
			out = append(out, invocation{"gate init container", c.Args})
		}
	}
	for _, at := range byKind[analysisTemplate](gate) {
		for _, m := range at.Spec.Metrics {
			args := substituteArgs(at, m.Provider.Job.Spec.Template.Spec.Containers[0].Args)
			out = append(out, invocation{"Argo Rollouts AnalysisTemplate", args})
		}
	}
	out = append(out,
		invocation{"ci/nats-version-gate.sh", []string{"check", "--floor", "2.14.0", "--format", "nagios"}},
		invocation{"ci/github-actions.yml", []string{"check", "--server", "nats://nats:4222", "--creds", "/creds/sys.creds", "--floor", "2.14.0", "--format", "nagios"}},
		invocation{"ci/github-actions-planned-change.yml", []string{"check", "--server", "nats://nats:4222", "--creds", "/creds/sys.creds", "--floor", "2.14.0", "--assume", "nats-2=2.12.15", "--format", "text"}},
	)
	if len(out) < 11 {
		t.Fatalf("found only %d auditor command lines in deploy/", len(out))
	}
	return out
}

// TestFlagsExist runs every command line deploy/ gives the auditor through the binary's own flag
// parser: a renamed or misspelt flag fails here, not in a cluster.
func TestFlagsExist(t *testing.T) {
	t.Parallel()
	bin := auditorBinary(t)
	for _, inv := range invocations(t) {
		if len(inv.args) == 0 || (inv.args[0] != "serve" && inv.args[0] != "check") {
			t.Errorf("%s: args %q run neither serve nor check", inv.where, inv.args)
			continue
		}
		// kingpin parses every flag before it acts on --help: unknown flags fail.
		out, err := exec.Command(bin, append(inv.args, "--help")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: nats-version-auditor %s: %v\n%s", inv.where, strings.Join(inv.args, " "), err, out)
			continue
		}
		if inv.args[0] != "check" {
			continue
		}
		// check also validates the values (format, floor, durations) before it connects: point
		// it at a closed port (NATS's, or the auditor's it asks with --exporter), and it must get
		// as far as trying.
		_, viaExporter := flagValue(inv.args, "exporter")
		args := []string{"check", "--server=nats://127.0.0.1:1", "--timeout=2s"}
		if viaExporter {
			// It refuses the connection flags, --timeout among them.
			args = []string{"check", "--exporter=http://127.0.0.1:1"}
		}
		for i := 1; i < len(inv.args); i++ {
			a := inv.args[i]
			name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if name == "server" || name == "creds" || name == "timeout" || name == "s" || name == "exporter" {
				if !hasValue {
					i++
				}
				continue
			}
			args = append(args, a)
		}
		out, err = exec.Command(bin, args...).CombinedOutput()
		if code := exitCode(err); code != 3 || !strings.Contains(string(out), "127.0.0.1:1") || strings.Contains(string(out), "try --help") {
			t.Errorf("%s: nats-version-auditor %s exited %d, want 3 (UNKNOWN: cannot reach NATS):\n%s", inv.where, strings.Join(args, " "), code, out)
		}
	}
}

// substituteArgs is args as Argo runs them: each {{args.x}} replaced by
// the template's value of argument x.
func substituteArgs(at *analysisTemplate, args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, argoArg.ReplaceAllStringFunc(a, func(s string) string {
			name := argoArg.FindStringSubmatch(s)[1]
			for _, arg := range at.Spec.Args {
				if arg.Name == name && arg.Value != nil {
					return *arg.Value
				}
			}
			return s
		}))
	}
	return out
}
