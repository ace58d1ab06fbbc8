package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No Docker engine runs where the tests run: the Dockerfile's shape is
// checked here, and its build step, `make build`, is run for real, for the
// host and cross-compiled as a multi-arch build runs it.

func TestDockerfileShape(t *testing.T) {
	stages := dockerfileStages(t)
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, found %d FROM lines", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !regexp.MustCompile(`^gcr\.io/distroless/static[^:]*:nonroot$`).MatchString(final.image) {
		t.Errorf("final stage FROM %s, want a distroless static nonroot image", final.image)
	}
	if !regexp.MustCompile(`(?m)^RUN make build( |$)|^RUN GOOS=\$\{TARGETOS\} GOARCH=\$\{TARGETARCH\} make build( |$)`).MatchString(build.body) {
		t.Error("the build stage does not run `make build` for GOOS=${TARGETOS} GOARCH=${TARGETARCH}")
	}
	if !regexp.MustCompile(`(?m)^COPY --from=build /src/bin/nats-version-auditor /nats-version-auditor$`).MatchString(final.body) {
		t.Error("the runtime stage does not copy bin/nats-version-auditor, the path `make build` writes")
	}
	if !regexp.MustCompile(`(?m)^ENTRYPOINT \["/nats-version-auditor"\]$`).MatchString(final.body) {
		t.Error(`ENTRYPOINT is not the exec form ["/nats-version-auditor"]`)
	}
	if !regexp.MustCompile(`(?m)^USER 65532(:65532)?$`).MatchString(final.body) {
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

// TestDockerfileCrossCompiles: the build stage runs on the build machine's
// platform and compiles for the target's, so that a multi-arch build runs no
// emulated compiler; the runtime stage is the target's.
func TestDockerfileCrossCompiles(t *testing.T) {
	stages := dockerfileStages(t)
	build, final := stages[0], stages[len(stages)-1]
	if build.platform != "$BUILDPLATFORM" {
		t.Errorf("build stage FROM --platform=%q, want $BUILDPLATFORM", build.platform)
	}
	if final.platform != "" {
		t.Errorf("runtime stage FROM --platform=%s: it must be the target platform's image", final.platform)
	}
	if !declaresArgs(build.body, "TARGETOS", "TARGETARCH") {
		t.Error("the build stage does not declare ARG TARGETOS TARGETARCH")
	}
	if !regexp.MustCompile(`(?m)^RUN GOOS=\$\{TARGETOS\} GOARCH=\$\{TARGETARCH\} make build( |$)`).MatchString(build.body) {
		t.Error("the build stage does not pass GOOS=${TARGETOS} GOARCH=${TARGETARCH} to make build")
	}
}

// TestDockerfileLabels: the OCI annotations registries and scanners read,
// with version and revision from the build arguments make build also gets.
func TestDockerfileLabels(t *testing.T) {
	stages := dockerfileStages(t)
	build, final := stages[0], stages[len(stages)-1]
	labels := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^LABEL\s+(.+)$`).FindAllStringSubmatch(final.body, -1) {
		for _, kv := range regexp.MustCompile(`(\S+?)="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
			labels[kv[1]] = kv[2]
		}
	}
	want := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/natsaudit/nats-version-auditor",
		"org.opencontainers.image.version":  "${VERSION}",
		"org.opencontainers.image.revision": "${REVISION}",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("runtime stage LABEL %s=%q, want %q", k, labels[k], v)
		}
	}
	if !declaresArgs(final.body, "VERSION", "REVISION") {
		t.Error("the runtime stage does not declare ARG VERSION and REVISION its labels use")
	}
	if !regexp.MustCompile(`(?m)^COPY LICENSE /licenses/nats-version-auditor/LICENSE$`).MatchString(final.body) {
		t.Error("the runtime stage does not carry the LICENSE file the licences label names")
	}
	if !declaresArgs(build.body, "VERSION", "REVISION") || !regexp.MustCompile(`make build.* VERSION=\$\{VERSION\} REVISION=\$\{REVISION\}`).MatchString(build.body) {
		t.Error("the build stage does not pass VERSION and REVISION to make build: the labels and --version would disagree")
	}
	if !strings.Contains(build.body, `RUN test "${VERSION}" = "$(cat VERSION)" || `) {
		t.Error("the build stage does not refuse a --build-arg VERSION other than the VERSION file's")
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(mod), "module github.com/natsaudit/nats-version-auditor\n") {
		t.Error("go.mod's module path is not the repository the source label names")
	}
}

// TestLicense: the LICENSE file is the Apache License 2.0, the licence the
// image's label names, whole: its terms and the appendix that says how to
// apply it.
func TestLicense(t *testing.T) {
	b, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{
		"Apache License\n                           Version 2.0, January 2004\n",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
		"9. Accepting Warranty or Additional Liability.",
		"END OF TERMS AND CONDITIONS",
		"APPENDIX: How to apply the Apache License to your work.",
		"limitations under the License.\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("LICENSE lacks %q: not the whole Apache License 2.0", want)
		}
	}
	if n := strings.Count(text, "\n"); n != 201 {
		t.Errorf("LICENSE has %d lines, the Apache License 2.0 has 201", n)
	}
}

// TestMakeBuildIsStatic: make build writes a static binary whose --version
// says the VERSION file's release and the commit checked out.
func TestMakeBuildIsStatic(t *testing.T) {
	head, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	bin := makeBuild(t, nil)
	openStatic(t, bin)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	want := "nats-version-auditor " + release(t) + " (commit " + strings.TrimSpace(string(head))
	if err != nil || !strings.HasPrefix(string(out), want) || strings.Count(string(out), "\n") != 1 {
		t.Errorf("the built binary's --version: %v %q, want one line starting %q", err, out, want)
	}
}

// TestMakeBuildCrossCompiles runs the Dockerfile's build step as buildx runs
// it for linux/arm64 on any other machine.
func TestMakeBuildCrossCompiles(t *testing.T) {
	bin := makeBuild(t, []string{"GOOS=linux", "GOARCH=arm64"}, "VERSION=9.9.9-cross", "REVISION=c0ffee0123456789")
	f := openStatic(t, bin)
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 || f.OSABI != elf.ELFOSABI_NONE {
		t.Fatalf("GOOS=linux GOARCH=arm64 make build wrote %s %s %s, want a 64-bit linux arm64 ELF", f.Class, f.Machine, f.OSABI)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != "linux" || settings["GOARCH"] != "arm64" || settings["CGO_ENABLED"] != "0" {
		t.Errorf("build settings GOOS=%s GOARCH=%s CGO_ENABLED=%s, want linux arm64 0", settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"])
	}
	// -trimpath keeps -ldflags out of the build info, and an arm64 binary
	// cannot be asked for --version here: look for the -X strings themselves.
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"9.9.9-cross", "c0ffee0123456789"} {
		if !bytes.Contains(b, []byte(v)) {
			t.Errorf("the binary does not carry %q, given to make build as VERSION or REVISION", v)
		}
	}
}

// TestDockerfileDownloadLayer: the files the build stage copies before
// `go mod download` are all that command needs, so the downloads stay a
// layer of their own. The root module replaces the Go client with its
// directory, whose go.mod must be among them. The copies are made into an
// empty directory and the download run there, from the module cache.
func TestDockerfileDownloadLayer(t *testing.T) {
	build := dockerfileStages(t)[0]
	before, _, ok := strings.Cut(build.body, "RUN go mod download")
	if !ok {
		t.Fatal("the build stage has no `RUN go mod download`")
	}
	dir := t.TempDir()
	copies := regexp.MustCompile(`(?m)^COPY ([^\n]+)$`).FindAllStringSubmatch(before, -1)
	if len(copies) == 0 {
		t.Fatal("nothing is copied before `go mod download`")
	}
	for _, c := range copies {
		args := strings.Fields(c[1])
		dst := args[len(args)-1]
		for _, src := range args[:len(args)-1] {
			b, err := os.ReadFile(filepath.Join("../..", src))
			if err != nil {
				t.Fatal(err)
			}
			to := filepath.Join(dir, dst)
			if strings.HasSuffix(dst, "/") {
				to = filepath.Join(dir, dst, filepath.Base(src))
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command("go", "mod", "download")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod download with only the files copied before it: %v\n%s", err, out)
	}
}
