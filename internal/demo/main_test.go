package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

// demoVersions is the nats-server versions the demo's cluster runs, each
// once, sorted.
func demoVersions() []string {
	var vs []string
	for _, n := range nodes {
		vs = append(vs, n.Version)
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// TestMakeDemoBuildsOnlyWhatItRuns: what `make demo` runs (make -n, its
// prerequisites resolved) builds the nats-server versions the demo starts,
// and no other: the servers builder is called once, with exactly those.
func TestMakeDemoBuildsOnlyWhatItRuns(t *testing.T) {
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "demo")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n demo: %v", err)
	}
	var builds [][]string
	for line := range strings.SplitSeq(string(out), "\n") {
		if _, args, ok := strings.Cut(line, " run ./internal/natstest/servers"); ok {
			builds = append(builds, strings.Fields(args))
		}
	}
	if len(builds) != 1 {
		t.Fatalf("make demo calls the servers builder %d times, want once:\n%s", len(builds), out)
	}
	got := slices.Sorted(slices.Values(builds[0]))
	if want := demoVersions(); !slices.Equal(got, want) {
		t.Errorf("make demo builds nats-server %q (an empty list: every version the tests use), the demo runs %q", builds[0], want)
	}
}

var release = regexp.MustCompile(`\b\d+\.\d+\.\d+\b`)

// TestReadmeSaysWhatTheDemoBuilds: the README's `make demo` line names the
// versions the demo runs, and no other.
func TestReadmeSaysWhatTheDemoBuilds(t *testing.T) {
	root, err := modroot.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The line and the comment lines under it that continue it.
	var said []string
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "make demo ") {
			continue
		}
		said = append(said, line)
		for _, next := range lines[i+1:] {
			if !strings.HasPrefix(strings.TrimSpace(next), "#") || !strings.HasPrefix(next, " ") {
				break
			}
			said = append(said, next)
		}
		break
	}
	if said == nil {
		t.Fatal("README.md shows no `make demo` line")
	}
	var named []string
	for _, v := range release.FindAllString(strings.Join(said, "\n"), -1) {
		named = append(named, "v"+v)
	}
	slices.Sort(named)
	named = slices.Compact(named)
	if want := demoVersions(); !slices.Equal(named, want) {
		t.Errorf("README.md's make demo line names nats-server %v, the demo runs %v:\n%s", named, want, strings.Join(said, "\n"))
	}
}
