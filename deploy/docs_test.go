package deploy_test

import (
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

const readmePath = "deploy/README.md"

// alertTableHeader heads deploy/README.md's table of the alert rules.
const alertTableHeader = "| alert | severity | for | fires when |"

// TestReadmeAlertTableIsTheRules holds deploy/README.md's alert table to
// deploy/prometheus/rules.yml: one row per alert, in the rules' order, with
// its severity and its for.
func TestReadmeAlertTableIsTheRules(t *testing.T) {
	rows := markdownTable(t, string(readFile(t, readmePath)), alertTableHeader)
	var table []string
	for _, r := range rows {
		if len(r) != 4 {
			t.Errorf("%s: row %q has %d cells, want 4", readmePath, r, len(r))
			continue
		}
		table = append(table, r[0]+" | "+r[1]+" | "+r[2])
	}
	var rules []string
	for _, a := range alerts(sourceRules(t)) {
		rules = append(rules, a.Alert+" | "+a.Labels["severity"]+" | "+a.For)
	}
	if strings.Join(table, "\n") != strings.Join(rules, "\n") {
		t.Errorf("%s's alert table (alert | severity | for):\n%s\nwant, as %s has them:\n%s",
			readmePath, strings.Join(table, "\n"), rulesPath, strings.Join(rules, "\n"))
	}
}

// markdownTable returns the cells of each row of the table headed by
// header in doc, the header and its separator row left out.
func markdownTable(t *testing.T, doc, header string) [][]string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+header+"\n")
	if !ok {
		t.Fatalf("no table headed %q", header)
	}
	var rows [][]string
	for i, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 { // |---|---|
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("the table headed %q has no rows", header)
	}
	return rows
}

var entrypoint = regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]`)

// TestRunbookExecRunsTheImagesBinary: the runbook's `kubectl exec` runs
// check with the binary the image's ENTRYPOINT names (the image has no
// shell, so nothing else can run there), in the Deployment of
// deploy/kubernetes/, with the server, creds file and floor that
// Deployment's auditor uses.
func TestRunbookExecRunsTheImagesBinary(t *testing.T) {
	m := entrypoint.FindSubmatch(readFile(t, "Dockerfile"))
	if m == nil {
		t.Fatal("the Dockerfile has no exec-form ENTRYPOINT")
	}
	bin := string(m[1])

	runbook := strings.ReplaceAll(string(readFile(t, runbookPath)), "\\\n", " ")
	var line string
	for l := range strings.SplitSeq(runbook, "\n") {
		if strings.HasPrefix(l, "kubectl ") && strings.Contains(l, " exec ") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatalf("%s shows no kubectl exec line", runbookPath)
	}
	target, command, ok := strings.Cut(line, " -- ")
	if !ok {
		t.Fatalf("%s: %q runs nothing after --", runbookPath, line)
	}
	args := strings.Fields(command)
	if len(args) < 2 || args[0] != bin || args[1] != "check" {
		t.Fatalf("%s: kubectl exec runs %q, want %s check (the image's ENTRYPOINT)", runbookPath, command, bin)
	}

	_, objs := kustomizeBase(t)
	d := one[appsv1.Deployment](t, "kustomize base", objs)
	if want := "deploy/" + d.Name; !strings.Contains(target+" ", " "+want+" ") {
		t.Errorf("%s: %q does not exec into the Deployment %s", runbookPath, target, want)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, flag := range []string{"server", "creds", "floor"} {
		want, ok := flagValue(c.Args, flag)
		if !ok {
			t.Fatalf("the Deployment's auditor has no --%s", flag)
		}
		if got, _ := flagValue(args, flag); got != want {
			t.Errorf("%s: kubectl exec gives check --%s %q, the Deployment's auditor %q", runbookPath, flag, got, want)
		}
	}
	if strings.Contains(runbook, "not through `kubectl exec`") {
		t.Errorf("%s still says check cannot run through kubectl exec", runbookPath)
	}
}
