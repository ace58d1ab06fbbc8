package deploy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/statefulset"
)

const (
	rolloutDocPath = "docs/rollout.md"
	// rolloutSection heads docs/rollout.md's section on the official chart's StatefulSet.
	rolloutSection = "## Following the plan with the official Helm chart"
)

// docSection returns the text of the section of doc headed heading, up to the next heading of
// its level or above outside a fenced block.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no section headed %q", heading)
	}
	level := strings.Index(heading, " ")
	lines := strings.Split(after, "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if !fenced && hashes > 0 && hashes <= level && strings.HasPrefix(line[hashes:], " ") {
			return strings.Join(lines[:i], "\n")
		}
	}
	return after
}

// fencedBlocks returns the contents of the fenced code blocks of text whose info string is lang.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	var cur []string
	in, info := false, ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, info, cur = true, strings.TrimPrefix(line, "```"), nil
		case in && line == "```":
			in = false
			if info == lang {
				blocks = append(blocks, strings.Join(cur, "\n")+"\n")
			}
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// chartCitations are the lines of the official chart docs/rollout.md cites, each with what it
// says they hold: the chart read at another version must still say it there.
var chartCitations = map[string][]string{
	"files/config/config.yaml:3":                   {"server_name: << $SERVER_NAME >>"},
	"files/stateful-set/nats-container.yaml:18-23": {"- name: POD_NAME", "fieldPath: metadata.name", "- name: SERVER_NAME", `printf "%s$(POD_NAME)" .Values.config.serverNamePrefix`},
	"files/stateful-set/nats-container.yaml:50-61": {"readinessProbe:", "path: /healthz?js-server-only=true"},
	"files/stateful-set/nats-container.yaml:28-34": {"preStop:", "- nats-server", "- -sl=ldm=/var/run/nats/nats.pid"},
	"files/stateful-set/pod-template.yaml:75":      {"terminationGracePeriodSeconds: 60"},
	"templates/stateful-set.yaml:2-3":              {"with .Values.statefulSet", `include "nats.loadMergePatch"`},
	"templates/_helpers.tpl:242-246":               {`define "nats.loadMergePatch"`, "mergeOverwrite $doc (deepCopy (.merge"},
}

var citation = regexp.MustCompile(`^(.+):(\d+)(?:-(\d+))?$`)

// TestRolloutDocCitesTheChart: every line of the official chart that docs/rollout.md's section
// cites holds what the section says it does, and the StatefulSet's own file sets no
// updateStrategy, as the section says.
func TestRolloutDocCitesTheChart(t *testing.T) {
	t.Parallel()
	section := docSection(t, string(readFile(t, rolloutDocPath)), rolloutSection)
	chart := natsChart(t)
	for cite, wants := range chartCitations {
		if !strings.Contains(section, "`"+cite+"`") {
			t.Errorf("%s no longer cites %s: drop it from chartCitations", rolloutDocPath, cite)
		}
		m := citation.FindStringSubmatch(cite)
		first, _ := strconv.Atoi(m[2])
		last := first
		if m[3] != "" {
			last, _ = strconv.Atoi(m[3])
		}
		b, err := os.ReadFile(filepath.Join(chart, filepath.FromSlash(m[1])))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if last > len(lines) {
			t.Errorf("%s: the file has %d lines", cite, len(lines))
			continue
		}
		cited := strings.Join(lines[first-1:last], "\n")
		for _, want := range wants {
			if !strings.Contains(cited, want) {
				t.Errorf("%s does not hold %q:\n%s", cite, want, cited)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(chart, "files/stateful-set/stateful-set.yaml")); err != nil || strings.Contains(string(b), "updateStrategy") {
		t.Errorf("the chart's StatefulSet sets an updateStrategy (%v): the section says it does not", err)
	}
}

// TestRolloutDocValuesRenderTheStrategy renders the official chart with the example NATS values
// (three servers) and each values block of docs/rollout.md's section, and decodes the
// StatefulSet strictly: the OnDelete block gives OnDelete, the partition block a RollingUpdate
// that updates nothing until the partition is lowered; without them the chart sets no strategy.
// Pod names and the server names plan prints are the same: SERVER_NAME is the pod's name.
func TestRolloutDocValuesRenderTheStrategy(t *testing.T) {
	t.Parallel()
	section := docSection(t, string(readFile(t, rolloutDocPath)), rolloutSection)
	blocks := fencedBlocks(section, "yaml")
	if len(blocks) != 2 {
		t.Fatalf("%s: %d yaml blocks in %q, want the OnDelete and the partition values", rolloutDocPath, len(blocks), rolloutSection)
	}

	objs, out, err := renderNatsChart(t, "example values", exampleValuesPath)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ss := one[appsv1.StatefulSet](t, "example values", objs)
	if ss.Spec.UpdateStrategy.Type != "" {
		t.Errorf("the official chart sets updateStrategy %+v by itself", ss.Spec.UpdateStrategy)
	}
	replicas := *ss.Spec.Replicas
	checkServerNameIsPodName(t, ss, out)

	seen := map[appsv1.StatefulSetUpdateStrategyType]bool{}
	for i, block := range blocks {
		where := rolloutDocPath + " yaml block " + strconv.Itoa(i+1)
		f := filepath.Join(t.TempDir(), "rollout.yaml")
		if err := os.WriteFile(f, []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
		objs, out, err := renderNatsChart(t, where, exampleValuesPath, f)
		if err != nil {
			t.Fatalf("%s: %v\n%s", where, err, out)
		}
		got := one[appsv1.StatefulSet](t, where, objs)
		us := got.Spec.UpdateStrategy
		seen[us.Type] = true
		switch us.Type {
		case appsv1.OnDeleteStatefulSetStrategyType:
			if us.RollingUpdate != nil {
				t.Errorf("%s: OnDelete with rollingUpdate %+v", where, us.RollingUpdate)
			}
		case appsv1.RollingUpdateStatefulSetStrategyType:
			if us.RollingUpdate == nil || us.RollingUpdate.Partition == nil || *us.RollingUpdate.Partition != replicas {
				t.Errorf("%s: rollingUpdate %+v, want partition %d (the servers the example runs): the upgrade must restart nothing", where, us.RollingUpdate, replicas)
			}
			if !strings.Contains(section, `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":`+strconv.Itoa(int(replicas)-1)+`}}}}`) {
				t.Errorf("%s: no kubectl patch lowers the partition to %d, the highest ordinal", rolloutDocPath, replicas-1)
			}
		default:
			t.Errorf("%s: updateStrategy %+v", where, us)
		}
		// Nothing else of the StatefulSet changes.
		got.Spec.UpdateStrategy = ss.Spec.UpdateStrategy
		if !reflect.DeepEqual(got, ss) {
			t.Errorf("%s changes more of the StatefulSet than its updateStrategy", where)
		}
	}
	if !seen[appsv1.OnDeleteStatefulSetStrategyType] || !seen[appsv1.RollingUpdateStatefulSetStrategyType] {
		t.Errorf("%s: strategies %v, want OnDelete and RollingUpdate", rolloutDocPath, seen)
	}

	// The commands name the release's StatefulSet and its pods.
	for _, m := range regexp.MustCompile(`(?:pod/|pod |statefulset )(nats(?:-\d+)?)\b`).FindAllStringSubmatch(section, -1) {
		name := m[1]
		if name == ss.Name {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(name, ss.Name+"-"))
		if err != nil || n < 0 || int32(n) >= replicas {
			t.Errorf("%s names %s, not a pod of StatefulSet %s (%d replicas)", rolloutDocPath, name, ss.Name, replicas)
		}
	}
}

// checkServerNameIsPodName: the rendered config names each server $SERVER_NAME, and the NATS
// container sets it to the pod's name (no serverNamePrefix by default).
func checkServerNameIsPodName(t *testing.T, ss *appsv1.StatefulSet, out string) {
	t.Helper()
	if !strings.Contains(out, `"server_name": $SERVER_NAME,`) {
		t.Error("the rendered nats.conf does not take server_name from $SERVER_NAME")
	}
	var nats *corev1.Container
	for i, c := range ss.Spec.Template.Spec.Containers {
		if c.Name == "nats" {
			nats = &ss.Spec.Template.Spec.Containers[i]
		}
	}
	if nats == nil {
		t.Fatal("no nats container in the StatefulSet")
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range nats.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the pod's name: %+v", e)
	}
	if e := env["SERVER_NAME"]; e.Value != "$(POD_NAME)" {
		t.Errorf("SERVER_NAME is %q, want $(POD_NAME)", e.Value)
	}
}

// TestRolloutDocNamesThePlansFields: the JSON fields and strategies of plan's pods that
// docs/rollout.md's section names are the ones plan writes.
func TestRolloutDocNamesThePlansFields(t *testing.T) {
	t.Parallel()
	section := docSection(t, string(readFile(t, rolloutDocPath)), rolloutSection)
	tags := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			out = append(out, name)
		}
		return out
	}
	var fields []string
	if f, ok := reflect.TypeOf(auditor.PlanStep{}).FieldByName("Pod"); ok {
		fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
	}
	if f, ok := reflect.TypeOf(auditor.Plan{}).FieldByName("StatefulSets"); ok {
		fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
	}
	fields = append(fields, tags(statefulset.Pod{})...)
	fields = append(fields, "strategy", "why", string(statefulset.Partition), string(statefulset.OnDelete))
	if r := tags(statefulset.Rollout{}); !slices.Contains(r, "strategy") || !slices.Contains(r, "why") {
		t.Errorf("plan's StatefulSet rollout has fields %v, the section names strategy and why", r)
	}
	if len(fields) < 7 {
		t.Fatalf("plan's JSON has fields %v: no pod or statefulsets", fields)
	}
	for _, f := range fields {
		if !strings.Contains(section, "`"+f+"`") {
			t.Errorf("%s does not name plan's `%s`", rolloutDocPath, f)
		}
	}
}
