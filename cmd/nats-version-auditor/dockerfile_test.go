package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs where the tests run: the Dockerfile's shape is
// checked here, and its build step, `make build`, is run for real.

func TestDockerfileShape(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, found %d FROM lines", len(froms))
	}
	if final := froms[len(froms)-1][1]; !regexp.MustCompile(`^gcr\.io/distroless/static[^:]*:nonroot$`).MatchString(final) {
		t.Errorf("final stage FROM %s, want a distroless static nonroot image", final)
	}
	if !regexp.MustCompile(`(?m)^RUN make build( |$)`).MatchString(df) {
		t.Error("the build stage does not run `make build`")
	}
	if !regexp.MustCompile(`(?m)^COPY --from=build /src/bin/nats-version-auditor /nats-version-auditor$`).MatchString(df) {
		t.Error("the runtime stage does not copy bin/nats-version-auditor, the path `make build` writes")
	}
	if !regexp.MustCompile(`(?m)^ENTRYPOINT \["/nats-version-auditor"\]$`).MatchString(df) {
		t.Error(`ENTRYPOINT is not the exec form ["/nats-version-auditor"]`)
	}
	if !regexp.MustCompile(`(?m)^USER 65532(:65532)?$`).MatchString(df) {
		t.Error("the image does not run as the nonroot user 65532")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "BIN         := bin/nats-version-auditor") {
		t.Error("Makefile's BIN is not bin/nats-version-auditor, which the Dockerfile copies")
	}
}

func TestMakeBuildIsStatic(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	bin := filepath.Join(t.TempDir(), "nats-version-auditor")
	cmd := exec.Command("make", "-C", "../..", "build", "BIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("make build wrote a dynamically linked binary (%s): distroless static cannot run it", p.Type)
		}
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nats-version-auditor, version") {
		t.Fatalf("the built binary's --version: %v %s", err, out)
	}
}
