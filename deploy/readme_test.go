package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	topReadmePath = "README.md"
	// quickStart heads the README's Kubernetes quick start.
	quickStart = "## Quick start: Kubernetes, beside the official NATS chart"
	// topAlertTableHeader heads the quick start's table of the alerts.
	topAlertTableHeader = "| alert | severity | fires when |"
)

// existingNats is the NATS release the quick start starts from: the official chart with a
// cluster of three and JetStream, as it says.
const existingNats = `
config:
  cluster:
    enabled: true
    replicas: 3
  jetstream:
    enabled: true
`

// commands returns the shell lines of text's fenced blocks without an info string, each with
// its continuation lines joined and its comment dropped.
func commands(text string) []string {
	var out []string
	for _, block := range fencedBlocks(text, "") {
		joined := strings.ReplaceAll(block, "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// commandWith returns the one command of cmds that starts with prefix, as fields.
func commandWith(t *testing.T, cmds []string, prefix string) []string {
	t.Helper()
	var found []string
	for _, c := range cmds {
		if strings.HasPrefix(c, prefix) {
			if found != nil {
				t.Fatalf("%s: two commands start with %q", topReadmePath, prefix)
			}
			found = strings.Fields(c)
		}
	}
	if found == nil {
		t.Fatalf("%s's quick start has no command starting with %q", topReadmePath, prefix)
	}
	return found
}

// argValue returns the value of flag (-n, --set, --from-file, ...) in fields, each time it is
// given, as flag value or flag=value.
func argValues(fields []string, flag string) []string {
	var out []string
	for i, f := range fields {
		if v, ok := strings.CutPrefix(f, flag+"="); ok {
			out = append(out, v)
		} else if f == flag && i+1 < len(fields) {
			out = append(out, fields[i+1])
		}
	}
	return out
}

// TestReadmeQuickStart walks the README's Kubernetes quick start against the charts it uses:
// the system user's values render in the official chart into a system account with exactly the
// auditor's permissions, the restart names the release's StatefulSet, the README's own helm
// install line renders our chart into an auditor that connects as that user from the Secret the
// README creates and expects as many servers as the NATS release runs, and the port-forward and
// curl reach the Service the chart renders.
func TestReadmeQuickStart(t *testing.T) {
	t.Parallel()
	section := docSection(t, string(readFile(t, topReadmePath)), quickStart)
	cmds := commands(section)

	// 1. The system user, in the official chart's values.
	blocks := fencedBlocks(section, "yaml")
	if len(blocks) != 1 {
		t.Fatalf("%s's quick start: %d yaml blocks, want the system user's values", topReadmePath, len(blocks))
	}
	dir := t.TempDir()
	base, sysUser := filepath.Join(dir, "my-nats-values.yaml"), filepath.Join(dir, "sys-user.yaml")
	for f, b := range map[string]string{base: existingNats, sysUser: blocks[0]} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	upgrade := commandWith(t, cmds, "helm upgrade nats ")
	if !slices.Contains(upgrade, "sys-user.yaml") || !slices.Equal(argValues(upgrade, "-n"), []string{"nats"}) {
		t.Errorf("the quick start's helm upgrade %q does not give sys-user.yaml to release nats in namespace nats", upgrade)
	}
	objs, out, err := renderNatsChart(t, "quick start", base, sysUser)
	if err != nil {
		t.Fatalf("helm template of the official chart with the quick start's values: %v\n%s", err, out)
	}
	ss := one[appsv1.StatefulSet](t, "quick start", objs)
	if restart := commandWith(t, cmds, "kubectl -n nats rollout restart "); restart[len(restart)-1] != "statefulset/"+ss.Name {
		t.Errorf("the quick start restarts %s, the release's StatefulSet is %s", restart[len(restart)-1], ss.Name)
	}
	conf := natsConf(t, objs)
	var server struct {
		SystemAccount string `json:"system_account"`
		Accounts      map[string]struct {
			Users []natsUser `json:"users"`
		} `json:"accounts"`
	}
	if err := json.Unmarshal(natsConfJSON(conf), &server); err != nil {
		t.Fatalf("nats.conf is not the JSON the chart writes: %v\n%s", err, conf)
	}
	sys := server.Accounts[server.SystemAccount]
	if server.SystemAccount == "" || len(sys.Users) != 1 || sys.Users[0].NKey == "" {
		t.Fatalf("the quick start's values give system_account %q with users %+v, want one nkey user", server.SystemAccount, sys.Users)
	}
	if got, want := sys.Users[0].Permissions, auditorPermissions(t); !samePermissions(got, want) {
		t.Errorf("the quick start's user has permissions %+v, the example values' auditor %+v", got, want)
	}
	servers := *ss.Spec.Replicas

	// 2. Its Secret.
	secret := commandWith(t, cmds, "kubectl -n monitoring create secret generic ")
	secretName := secret[6]
	fromFile := argValues(secret, "--from-file")
	if len(fromFile) != 1 {
		t.Fatalf("the quick start's Secret %q: want one --from-file", secret)
	}
	secretKey, seedFile, _ := strings.Cut(fromFile[0], "=")
	if gen := commandWith(t, cmds, "nk -gen user"); gen[len(gen)-1] != strings.TrimPrefix(seedFile, "./") {
		t.Errorf("the Secret takes %s, nk writes the seed to %s", seedFile, gen[len(gen)-1])
	}

	// 3. The auditor: the README's own helm install line, as helm template.
	install := commandWith(t, cmds, "helm install ")
	ns := argValues(install, "-n")
	if len(ns) != 1 || ns[0] != secret[2] {
		t.Fatalf("helm install into %v, the Secret is in %s", ns, secret[2])
	}
	args := []string{"template", install[2], path(t, install[3])}
	for i := 4; i < len(install); i++ {
		args = append(args, install[i])
	}
	if install[3] != chartDir {
		t.Errorf("the quick start installs %s, not the chart %s", install[3], chartDir)
	}
	rendered, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, rendered)
	}
	chartObjs := decodeObjects(t, "quick start's helm install", []byte(rendered))
	d := one[appsv1.Deployment](t, "quick start", chartObjs)
	svc := one[corev1.Service](t, "quick start", chartObjs)
	checkStandalone(t, "quick start's helm install", d, svc, one[corev1.ServiceAccount](t, "quick start", chartObjs), nil)
	spec := &d.Spec.Template.Spec
	c := spec.Containers[0]
	if got, _ := flagValue(c.Args, "expect"); got != itoa(servers) {
		t.Errorf("the quick start's auditor has --expect=%q, the NATS release runs %d servers", got, servers)
	}
	if got, want := flagValue1(c.Args, "server"), "nats://"+natsClientService(t, out)+".nats.svc:4222"; got != want {
		t.Errorf("the quick start's auditor connects to %s, the official chart's client Service is %s", got, want)
	}
	seed, ok := flagValue(c.Args, "nkey")
	if !ok {
		t.Fatalf("the quick start's auditor does not authenticate as the nkey user: %q", c.Args)
	}
	credsMounted(t, "quick start", &c, spec)
	mounted := false
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName &&
			slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Key == secretKey && strings.HasSuffix(seed, "/"+k.Path) }) {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("--nkey=%s is not key %s of the Secret %s the quick start creates: %+v", seed, secretKey, secretName, spec.Volumes)
	}

	// 4. Does it work: the port-forward reaches the Service, the curl the forwarded port.
	pf := commandWith(t, cmds, "kubectl -n monitoring port-forward ")
	if pf[4] != "svc/"+svc.Name || pf[5] != itoa(svc.Spec.Ports[0].Port) || pf[2] != ns[0] {
		t.Errorf("the quick start forwards %q, the chart's Service is %s port %d in %s", pf, svc.Name, svc.Spec.Ports[0].Port, ns[0])
	}
	curl := commandWith(t, cmds, "curl ")
	if !slices.Contains(curl, "http://127.0.0.1:"+pf[5]+"/api/v1/report") {
		t.Errorf("the quick start's curl %q does not ask the forwarded port's /api/v1/report", curl)
	}
}

// natsUser is a user of nats.conf's accounts.
type natsUser struct {
	NKey        string `json:"nkey"`
	Permissions struct {
		Publish struct {
			Allow []string `json:"allow"`
		} `json:"publish"`
		Subscribe struct {
			Allow []string `json:"allow"`
		} `json:"subscribe"`
	} `json:"permissions"`
}

func samePermissions(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// auditorPermissions is the permissions of the auditor's nkey user in the example NATS values.
func auditorPermissions(t *testing.T) any {
	t.Helper()
	var example struct {
		Config struct {
			Merge struct {
				Accounts map[string]struct {
					Users []natsUser `json:"users"`
				} `json:"accounts"`
			} `json:"merge"`
		} `json:"config"`
	}
	if err := yaml.Unmarshal(readFile(t, exampleValuesPath), &example); err != nil {
		t.Fatal(err)
	}
	for _, u := range example.Config.Merge.Accounts["SYS"].Users {
		if u.NKey != "" {
			return u.Permissions
		}
	}
	t.Fatalf("%s has no nkey user in SYS", exampleValuesPath)
	return nil
}

// natsConf is the rendered nats.conf.
func natsConf(t *testing.T, objs []object) string {
	t.Helper()
	for _, cm := range byKind[corev1.ConfigMap](objs) {
		if s, ok := cm.Data["nats.conf"]; ok {
			return s
		}
	}
	t.Fatal("no nats.conf rendered")
	return ""
}

// TestReadmeAlertTableIsTheRulesToo holds the README's alert table to
// deploy/prometheus/rules.yml: every alert, in the rules' order, with its severity, and a
// duration a row names is the alert's for.
func TestReadmeAlertTableIsTheRulesToo(t *testing.T) {
	rows := markdownTable(t, string(readFile(t, topReadmePath)), topAlertTableHeader)
	var table, rules []string
	forOf := map[string]string{}
	for _, a := range alerts(sourceRules(t)) {
		rules = append(rules, a.Alert+" | "+a.Labels["severity"])
		forOf[a.Alert] = a.For
	}
	duration := regexp.MustCompile(`\((\d+[smh])\)|(\d+) minutes`)
	for _, r := range rows {
		if len(r) != 3 {
			t.Errorf("%s: row %q has %d cells, want 3", topReadmePath, r, len(r))
			continue
		}
		table = append(table, r[0]+" | "+r[1])
		for _, m := range duration.FindAllStringSubmatch(r[2], -1) {
			said := m[1]
			if m[2] != "" {
				said = m[2] + "m"
			}
			if said != forOf[r[0]] {
				t.Errorf("%s: %s fires after %s, the rule's for is %q", topReadmePath, r[0], said, forOf[r[0]])
			}
		}
	}
	if strings.Join(table, "\n") != strings.Join(rules, "\n") {
		t.Errorf("%s's alert table (alert | severity):\n%s\nwant, as %s has them:\n%s",
			topReadmePath, strings.Join(table, "\n"), rulesPath, strings.Join(rules, "\n"))
	}
}

// TestReadmeCitesReload: the quick start says a running server takes no new system_account from
// a configuration reload, citing nats-server's reload.go; the cited lines refuse it.
func TestReadmeCitesReload(t *testing.T) {
	t.Parallel()
	section := docSection(t, string(readFile(t, topReadmePath)), quickStart)
	m := regexp.MustCompile("nats-server (\\d+\\.\\d+\\.\\d+)\\s+`server/reload\\.go:(\\d+)-(\\d+)`").FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("%s's quick start cites no reload.go lines", topReadmePath)
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/nats-io/nats-server/v2@v"+m[1])
	cmd.Dir = t.TempDir() // outside this module: its go.mod stays as it is
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download nats-server@v%s: %v\n%s", m[1], err, out)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download nats-server@v%s: %v %s", m[1], err, out)
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, "server", "reload.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	first, _ := strconv.Atoi(m[2])
	last, _ := strconv.Atoi(m[3])
	cited := strings.Join(lines[first-1:last], "\n")
	for _, want := range []string{`case "systemaccount":`, "oldValue != DEFAULT_SYSTEM_ACCOUNT", `"config reload not supported for %s`} {
		if !strings.Contains(cited, want) {
			t.Errorf("nats-server v%s server/reload.go:%s-%s does not hold %q:\n%s", m[1], m[2], m[3], want, cited)
		}
	}
}

// flagValue1 is flagValue without whether it was given.
func flagValue1(args []string, name string) string {
	v, _ := flagValue(args, name)
	return v
}

// natsClientService is the name of the official chart's Service whose port nats is 4222, in its
// rendered output.
func natsClientService(t *testing.T, out string) string {
	t.Helper()
	for _, doc := range splitDocs([]byte(out)) {
		var svc corev1.Service
		if err := yaml.Unmarshal(doc, &svc); err != nil || svc.Kind != "Service" {
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone && slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "nats" && p.Port == 4222 }) {
			return svc.Name
		}
	}
	t.Fatal("the official chart renders no client Service on port 4222")
	return ""
}
