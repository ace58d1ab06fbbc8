package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// floorMessage is the one message of a floor that is not one (auditor.ParseFloor).
const floorMessage = "is not a floor: want MAJOR.MINOR or MAJOR.MINOR.PATCH, such as 2.14, 2.14.0 or v2.14.0"

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage:"},
		{"unknown command", []string{"chek"}, `expected command but got "chek"`},
		{"unknown flag", []string{"check", "--flor", "2.14"}, "unknown long flag '--flor'"},
		{"floor not a version", []string{"check", "--floor", "latest"}, `--floor: "latest" ` + floorMessage},
		{"floor of one number", []string{"check", "--floor", "14"}, `--floor: "14" ` + floorMessage},
		{"floor of one small number", []string{"report", "--floor", "2"}, `--floor: "2" ` + floorMessage},
		{"floor of one number with v", []string{"serve", "--floor", "v14"}, `--floor: "v14" ` + floorMessage},
		{"bad format", []string{"check", "--format", "xml"}, "enum value must be one of"},
		{"missing creds file", []string{"check", "--creds", "/nonexistent/sys.creds", "-s", "nats://127.0.0.1:1"}, "/nonexistent/sys.creds"},
		{"unknown context", []string{"check", "--context", "no-such-context"}, `load NATS context "no-such-context"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			res := runCmd(t, tt.args...)
			if res.code != exitUnknown {
				t.Errorf("exit %d, want %d", res.code, exitUnknown)
			}
			if !strings.Contains(res.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", res.stderr, tt.want)
			}
			if strings.Contains(res.stderr, "goroutine ") {
				t.Errorf("stderr has a stack trace: %s", res.stderr)
			}
		})
	}
}

func TestHelpAndVersionExitZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"check", "--help"}, {"--version"}} {
		if res := runCmd(t, args...); res.code != exitOK || res.stdout == "" {
			t.Errorf("%v: exit %d, stdout %q", args, res.code, res.stdout)
		}
	}
}

func TestUnreadableContext(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	dir := filepath.Join(cfg, "nats", "context")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"url": "nats://x:4222", `), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"check", "report", "serve"} {
		res := runCmd(t, cmd, "--context", "broken")
		if res.code != exitUnknown || !strings.Contains(res.stderr, `load NATS context "broken"`) {
			t.Errorf("%s with a broken context: exit %d, %q", cmd, res.code, res.stderr)
		}
	}
}
