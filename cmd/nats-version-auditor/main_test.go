package main

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render/rendertest"
)

// floorMessage is the one message of a floor that is not one (version.ParseFloor).
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
		{"timeout zero", []string{"check", "--timeout", "0s"}, "--timeout 0s: too short for an audit, want at least 100ms"},
		{"timeout too short", []string{"report", "--timeout", "1ms"}, "--timeout 1ms: too short for an audit, want at least 100ms"},
		{"timeout negative", []string{"serve", "--timeout=-1s"}, "--timeout -1s: too short for an audit"},
		{"plan timeout too short", []string{"plan", "--to", "2.14.0", "--timeout", "1ms"}, "--timeout 1ms: too short for an audit, want at least 100ms"},
		{"inbox prefix a wildcard", []string{"plan", "--to", "2.14.0", "--inbox-prefix", "_INBOX.>"}, `--inbox-prefix "_INBOX.>": want subject tokens`},
		{"timeout without a unit", []string{"check", "--timeout", "5"}, "missing unit in duration"},
		{"bad stream pattern", []string{"check", "--stream", "ORD[ERS"}, `--stream "ORD[ERS": not a glob pattern`},
		{"missing creds file", []string{"check", "--creds", "/nonexistent/sys.creds", "-s", "nats://127.0.0.1:1"}, "/nonexistent/sys.creds"},
		{"unknown context", []string{"check", "--context", "no-such-context"}, `load NATS context "no-such-context"`},
		{"assume without a version", []string{"check", "--assume", "n2"}, `--assume: "n2" is not SERVER=VERSION`},
		{"assume not a version", []string{"report", "--assume", "n2=latest"}, `--assume: "n2=latest": "latest" is not a version: want MAJOR.MINOR.PATCH`},
		{"assume one number", []string{"report", "--assume", "n2=14"}, `--assume: "n2=14": "14" is not a version: want MAJOR.MINOR.PATCH`},
		{"assume while waiting", []string{"check", "--assume", "n2=2.12.15", "--wait", "1m"}, "cannot be combined with --wait"},
		{"plan without --to", []string{"plan"}, "required flag(s) '--to' not provided"},
		{"plan --to not a version", []string{"plan", "--to", "latest"}, `--to: "latest" is not a version: want MAJOR.MINOR.PATCH`},
		{"plan --to one number", []string{"plan", "--to", "14"}, `--to: "14" is not a version: want MAJOR.MINOR.PATCH`},
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

// TestRefusedFlagsGiveADocument: a flag the parser refuses, or a floor that
// is not one, still gives the one document of the format asked for, with
// the floor as typed, beside the one line on stderr.
func TestRefusedFlagsGiveADocument(t *testing.T) {
	for _, tt := range []struct {
		args        []string
		floor, want string
	}{
		{[]string{"check", "--format", "json", "--timeout", "abc"}, "2.14.0", `--timeout abc: time: invalid duration "abc"`},
		{[]string{"check", "--timeout", "abc", "--format", "json"}, "2.14.0", `--timeout abc: time: invalid duration "abc"`},
		{[]string{"check", "--format", "json", "--floor", "banana"}, "banana", `--floor: "banana" ` + floorMessage},
		{[]string{"check", "--format", "json", "--floor", "banana", "--timeout", "abc"}, "banana", `--timeout abc`},
		{[]string{"check", "--format", "json", "--floor", "2.12", "--flor", "2.14"}, "2.12.0", `unknown long flag '--flor'`},
		{[]string{"report", "--format", "json", "--audit.max-reply-bytes", "lots"}, "2.14.0", `--audit.max-reply-bytes lots`},
		{[]string{"plan", "--format", "json", "--to", "2.14.0", "--timeout", "abc"}, "2.14.0", `--timeout abc`},
		{[]string{"plan", "--format", "json"}, "2.14.0", `required flag(s) '--to' not provided`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			res := runCmd(t, tt.args...)
			if res.code != exitUnknown || strings.Count(res.stderr, "\n") != 1 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 3 and one line saying %q", res.code, res.stderr, tt.want)
			}
			var doc struct {
				Status findings.Severity `json:"status"`
				Floor  string            `json:"floor"`
				Error  string            `json:"error"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || doc.Status != findings.Unknown || doc.Floor != tt.floor || !strings.Contains(doc.Error, tt.want) {
				t.Errorf("stdout is not the failure document with floor %q (%v):\n%s", tt.floor, err, res.stdout)
			}
			if nulls := rendertest.UnexpectedNulls([]byte(res.stdout)); len(nulls) > 0 {
				t.Errorf("null where a list belongs: %s", strings.Join(nulls, ", "))
			}
		})
	}
	res := runCmd(t, "check", "--format", "nagios", "--timeout", "abc")
	if want := "NATS VERSIONS UNKNOWN - --timeout abc: time: invalid duration \"abc\"\n"; res.code != exitUnknown || res.stdout != want {
		t.Errorf("nagios: exit %d, stdout %q, want %q", res.code, res.stdout, want)
	}
	t.Setenv("NATS_TIMEOUT", "abc")
	if res := runCmd(t, "check", "--format", "json"); res.code != exitUnknown || !strings.Contains(res.stdout, `"error":"NATS_TIMEOUT=abc (--timeout)`) {
		t.Errorf("a refused environment variable: exit %d, stdout %q", res.code, res.stdout)
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
		if want := `load NATS context "broken" from ` + filepath.Join(dir, "broken.json") + ": "; res.code != exitUnknown || !strings.Contains(res.stderr, want) {
			t.Errorf("%s with a broken context: exit %d, %q, want it to say %q", cmd, res.code, res.stderr, want)
		}
	}
	res := runCmd(t, "check", "--context", "nope")
	if want := `load NATS context "nope": no nope.json in ` + dir + ": "; res.code != exitUnknown || !strings.Contains(res.stderr, want) {
		t.Errorf("a context that is not there: exit %d, %q, want it to say %q", res.code, res.stderr, want)
	}
}

// TestContextUnderPasswdHome: without XDG_CONFIG_HOME, natscli and
// natscontext look under the passwd home directory, not $HOME; the error
// says where it looked, and that $HOME was not it.
func TestContextUnderPasswdHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no passwd home directory: %v", err)
	}
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", home)
	res := runCmd(t, "check", "--context", "no-such-context-here")
	want := `load NATS context "no-such-context-here": no no-such-context-here.json in ` + filepath.Join(u.HomeDir, ".config", "nats", "context") +
		" (under the passwd home directory, as natscli looks, not $HOME " + home + "; set XDG_CONFIG_HOME to look elsewhere)"
	if res.code != exitUnknown || !strings.Contains(res.stderr, want) {
		t.Errorf("exit %d, %q, want it to say %q", res.code, res.stderr, want)
	}
}
