package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// release is the VERSION file's release, the one source of truth.
func release(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	v := string(b)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\n$`).MatchString(v) {
		t.Fatalf("VERSION is %q, want one line MAJOR.MINOR.PATCH, as image tags and the chart's appVersion are spelled", v)
	}
	return strings.TrimSpace(v)
}

// TestVersionLine: --version is one line with every field filled: the
// release, the commit, the Go release and the platform (prometheus/common's
// Print left "branch:" and "build date:" empty).
func TestVersionLine(t *testing.T) {
	res := runCmd(t, "--version")
	if !regexp.MustCompile(`^nats-version-auditor \S+ \(commit \S+, go\S+ \w+/\w+\)\n$`).MatchString(res.stdout) || res.code != exitOK {
		t.Errorf("--version: exit %d, %q; want one line: nats-version-auditor RELEASE (commit REVISION, GO OS/ARCH)", res.code, res.stdout)
	}
}

// TestOneVersion: the VERSION file is the release the image is tagged with
// everywhere deploy/ and the documents name it, the chart's appVersion (the
// chart's default tag), the kustomization's tag, and the Dockerfile's ARG
// VERSION, which the image's version label and make build take.
func TestOneVersion(t *testing.T) {
	want := release(t)
	for _, st := range dockerfileStages(t) {
		m := regexp.MustCompile(`(?m)^ARG VERSION=(\S+)$`).FindStringSubmatch(st.body)
		if m == nil || m[1] != want {
			t.Errorf("Dockerfile stage FROM %s: ARG VERSION %v, want the VERSION file's %s", st.image, m, want)
		}
	}
	chart, err := os.ReadFile("../../deploy/helm/nats-version-auditor/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(chart); m == nil || string(m[1]) != want {
		t.Errorf("Chart.yaml appVersion %q, want the VERSION file's %s", m, want)
	}
	tag := regexp.MustCompile(`nats-version-auditor:(v?\d[^\s"'\x60,)]*)`)
	newTag := regexp.MustCompile(`(?m)^\s*newTag:\s*"?([^"\s]+)"?\s*$`)
	seen := 0
	for _, dir := range []string{"../../deploy", "../../docs", "../../README.md"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".md", ".json":
			default:
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, re := range []*regexp.Regexp{tag, newTag} {
				for _, m := range re.FindAllSubmatch(b, -1) {
					seen++
					if string(m[1]) != want {
						t.Errorf("%s: %q, want the VERSION file's %s", path, m[0], want)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 10 {
		t.Errorf("found the image's tag %d times in deploy/, docs/ and README.md; the manifests alone name it more often", seen)
	}
}
