package deploy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestReadinessProbeAnswersWhileTheAuditIsIncomplete runs the real binary and asks it the
// readiness probe of every standalone Deployment deploy/ renders. With NATS unreachable every
// audit is incomplete, as during each step of a rolling upgrade; the probe must still succeed
// once an audit has finished (else the Service drops the API), while /completez says the audit
// is incomplete. The real-cluster outage is cmd's TestServeStaysReadyDuringOutage.
func TestReadinessProbeAnswersWhileTheAuditIsIncomplete(t *testing.T) {
	t.Parallel()
	_, base := kustomizeBase(t)
	deployments := map[string]*appsv1.Deployment{
		"kustomize base": one[appsv1.Deployment](t, "kustomize base", base),
		"chart defaults": one[appsv1.Deployment](t, "chart defaults", render(t, "defaults", "")),
	}
	addr := natstest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, auditorBinary(t), "serve", "-s", "nats://"+natstest.FreeAddr(t),
		"--web.listen-address", addr, "--audit.min-interval", "1h", "--timeout", "1s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	get := func(path string) (int, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	for name, d := range deployments {
		p := d.Spec.Template.Spec.Containers[0].ReadinessProbe
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s: no HTTP readiness probe", name)
			continue
		}
		err := natstest.Eventually(30*time.Second, func() error {
			code, err := get(p.HTTPGet.Path)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("GET %s: %d", p.HTTPGet.Path, code)
			}
			return err
		})
		if err != nil {
			t.Errorf("%s: the readiness probe fails while the audit is incomplete: %v", name, err)
		}
	}
	if code, err := get(completezPath); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("GET %s with NATS unreachable: %d %v, want 503", completezPath, code, err)
	}
}
