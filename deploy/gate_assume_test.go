package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatePlannedChangeSnippet runs the planned-change job's script with a fake docker: the
// assume input becomes one --assume per pair, and the would-be status is the job's exit code.
func TestGatePlannedChangeSnippet(t *testing.T) {
	t.Parallel()
	const file = gateDir + "/ci/github-actions-planned-change.yml"
	wf := readWorkflow(t, file)
	job, ok := wf.Jobs["planned-nats-change-gate"]
	if !ok || len(job.Steps) != 1 || !strings.Contains(strings.Join(job.RunsOn, ","), "self-hosted") {
		t.Fatalf("%s: job %+v", file, job)
	}
	step := job.Steps[0]
	if strings.Contains(step.Run, "${{") || step.Env["ASSUME"] != "${{ inputs.assume }}" {
		t.Fatalf("%s: the assume input must reach the script through env, not be expanded into it", file)
	}

	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	fake := "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > \"" + argsFile + "\"\nexit $FAKE_RC\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(assume string, rc string) (int, []string) {
		t.Helper()
		_ = os.Remove(argsFile)
		cmd := exec.Command("bash", "-e", "-c", step.Run)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "RUNNER_TEMP="+dir, "FAKE_RC="+rc,
			"ASSUME="+assume, "NATS_URL=nats://nats:4222", "NATS_SYS_CREDS=creds", "AUDITOR_IMAGE=img", "NATS_VERSION_FLOOR=2.14.0")
		out, err := cmd.CombinedOutput()
		b, _ := os.ReadFile(argsFile)
		t.Logf("%s", out)
		return exitCode(err), strings.Fields(string(b))
	}
	for _, rc := range []string{"0", "1", "2", "3"} {
		code, args := run("nats-2=2.12.15 cluster/east=2.12.15", rc)
		if itoa(int32(code)) != rc {
			t.Errorf("check exits %s: job exits %d", rc, code)
		}
		joined := strings.Join(args, " ")
		if !strings.Contains(joined, "check --server nats://nats:4222 --creds /creds/sys.creds --floor 2.14.0 --assume nats-2=2.12.15 --assume cluster/east=2.12.15") {
			t.Errorf("docker ran %q", joined)
		}
	}
	// A file the pair would match as a glob.
	if err := os.WriteFile(filepath.Join(dir, "x=2.15.3"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, args := run("*=2.15.3", "0"); !strings.Contains(strings.Join(args, " "), "--assume *=2.15.3 ") {
		t.Errorf("* is globbed: docker ran %q", args)
	}
	if code, args := run("  ", "0"); code != 3 || len(args) != 0 {
		t.Errorf("an empty assume input: exit %d, docker ran %q; want 3 without running", code, args)
	}
	if _, err := os.Stat(filepath.Join(dir, "sys.creds")); err == nil {
		t.Error("the creds file is left behind")
	}
}
