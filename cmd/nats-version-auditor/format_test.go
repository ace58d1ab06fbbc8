package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// exits names the flags that end a run at once (help, version, completion).
func exits(f *kingpin.FlagModel) bool {
	return f.Name == "help" || f.Name == "version" || strings.HasPrefix(f.Name, "help-") || strings.HasPrefix(f.Name, "completion-")
}

// parses reports whether the parser takes args (plan given its --to).
func parses(args ...string) bool {
	c := newCLI(io.Discard, io.Discard)
	if args[0] == "plan" && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--to") }) {
		args = append(args, "--to=2.14.0")
	}
	_, err := c.app.Parse(args)
	return err == nil
}

// parserErrors are args that the parser refuses with cmd: after the
// command, every flag cmd takes (the application's and its own) without its
// value, negated, repeated and with a value it refuses, every other
// command's flag, and the tokens no command takes; before the command, each
// of cmd's own flags. Those of last end the flags (--): --format after them
// is an argument, as it is to kingpin, and is tried only before them.
func parserErrors(t *testing.T, cmd string) (after, before, last [][]string) {
	t.Helper()
	m := newCLI(io.Discard, io.Discard).app.Model()
	var own *kingpin.CmdModel
	for _, c := range m.Commands {
		if c.Name == cmd {
			own = c
		}
	}
	takes := map[string]bool{}
	for _, f := range slices.Concat(m.Flags, own.Flags) {
		if exits(f) {
			continue
		}
		takes[f.Name] = true
		if f.IsBoolFlag() {
			after = append(after, []string{"--" + f.Name + "=maybe"}, []string{"--" + f.Name, "--" + f.Name + "=yes"})
			continue
		}
		after = append(after, []string{"--" + f.Name})
		if !slices.ContainsFunc(m.Flags, func(g *kingpin.FlagModel) bool { return g.Name == "no-"+f.Name }) { // --context has --no-context
			after = append(after, []string{"--no-" + f.Name})
		}
		bad, good := "", ""
		for _, v := range []string{"abc", "x=y=z", "0", "-1", "1.2.3.4.5", ""} {
			switch {
			case bad == "" && !parses(cmd, "--"+f.Name+"="+v):
				bad = v
			case good == "" && parses(cmd, "--"+f.Name+"="+v):
				good = v
			}
		}
		if bad != "" {
			after = append(after, []string{"--" + f.Name + "=" + bad}, []string{"--" + f.Name, bad})
		}
		cumulative := false
		if r, ok := f.Value.(interface{ IsCumulative() bool }); ok {
			cumulative = r.IsCumulative()
		}
		if good != "" && !cumulative {
			after = append(after, []string{"--" + f.Name + "=" + good, "--" + f.Name + "=" + good})
		}
		if slices.Contains(own.Flags, f) {
			before = append(before, []string{"--" + f.Name + "=" + good})
		}
	}
	for _, c := range m.Commands {
		for _, f := range c.Flags {
			if !takes[f.Name] && !exits(f) {
				takes[f.Name] = true
				after = append(after, []string{"--" + f.Name + "=1"})
			}
		}
	}
	missing := filepath.Join(t.TempDir(), "no-such-args")
	after = append(after, []string{"--bogus"}, []string{"-x"}, []string{"extra"}, []string{"@" + missing})
	before = append(before, []string{"--bogus"}, []string{"-x"})
	last = append(last, []string{"--", "extra"}, []string{"--", "--format", "json"})
	return after, before, last
}

// TestFormatHoldsWhereverItStands: whatever the parser refuses, and
// wherever --format stands (after the error, before it, before the command,
// with or without =), the run prints one document of that format, UNKNOWN
// with the parser's error as its AUDIT_INCOMPLETE finding (plan: its error),
// beside the one line on stderr, and exits 3.
func TestFormatHoldsWhereverItStands(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, cmd := range []string{"check", "report", "plan"} {
		after, before, last := parserErrors(t, cmd)
		if len(after) < 40 {
			t.Fatalf("%s: only %d refused args: the flags were not all found", cmd, len(after))
		}
		formats := [][]string{{"--format", "json"}, {"--format=json"}}
		if cmd == "check" {
			formats = append(formats, []string{"--format", "nagios"})
		}
		for _, format := range formats {
			var runs [][]string
			for _, bad := range after {
				runs = append(runs,
					slices.Concat([]string{cmd}, bad, format),
					slices.Concat([]string{cmd}, format, bad),
					slices.Concat(format, []string{cmd}, bad))
			}
			for _, bad := range before {
				runs = append(runs, slices.Concat(bad, []string{cmd}, format))
			}
			for _, bad := range last {
				runs = append(runs, slices.Concat([]string{cmd}, format, bad), slices.Concat(format, []string{cmd}, bad))
			}
			for _, args := range runs {
				holdsFormat(t, cmd, format[len(format)-1], args)
			}
		}
	}
	// Without a command, or with one misspelt, the document is check's.
	holdsFormat(t, "check", "json", []string{"chek", "--format", "json"})
	holdsFormat(t, "check", "json", []string{"--format=json"})
	// A refused environment variable, with --format after the command.
	t.Setenv("NATS_TIMEOUT", "abc")
	holdsFormat(t, "report", "json", []string{"report", "--format", "json"})
}

// holdsFormat runs args and fails t unless they give one document of
// format (json or nagios, or --format=json), UNKNOWN, with the parser's error.
func holdsFormat(t *testing.T, cmd, format string, args []string) {
	t.Helper()
	format = strings.TrimPrefix(format, "--format=")
	res := runCmd(t, args...)
	msg, ok := strings.CutPrefix(res.stderr, appName+": error: ")
	msg, tried := strings.CutSuffix(msg, " (try --help)\n")
	if res.code != exitUnknown || !ok || !tried || strings.Contains(msg, "\n") {
		t.Errorf("%q: exit %d, stderr %q; want 3 and one line of the parser's error", args, res.code, res.stderr)
		return
	}
	if format == "nagios" {
		if want := "NATS VERSIONS UNKNOWN - " + msg + "\n"; res.stdout != want {
			t.Errorf("%q: stdout %q, want %q", args, res.stdout, want)
		}
		return
	}
	if err := oneFailureDocument(cmd, res.stdout, msg); err != nil {
		t.Errorf("%q: %v\n%s", args, err, res.stdout)
	}
}

// oneFailureDocument says what is wrong unless stdout is exactly one JSON
// document of cmd's, UNKNOWN, with msg as its one AUDIT_INCOMPLETE finding
// (check, report) or its error (plan).
func oneFailureDocument(cmd, stdout, msg string) error {
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc struct {
		Status   string `json:"status"`
		Error    string `json:"error"`
		To       *string
		Servers  []json.RawMessage `json:"servers"`
		Findings []struct {
			Code, Message string
		} `json:"findings"`
	}
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("not a JSON document: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more than one document")
	}
	if doc.Status != "UNKNOWN" || doc.Error != msg {
		return fmt.Errorf("status %q, error %q; want UNKNOWN and %q", doc.Status, doc.Error, msg)
	}
	switch {
	case cmd == "plan" && doc.To == nil:
		return fmt.Errorf("not plan's document (no \"to\")")
	case cmd == "plan":
	case doc.To != nil || doc.Servers == nil:
		return fmt.Errorf("not %s's document", cmd)
	case len(doc.Findings) != 1 || doc.Findings[0].Code != "AUDIT_INCOMPLETE" || doc.Findings[0].Message != msg:
		return fmt.Errorf("findings %+v, want one AUDIT_INCOMPLETE saying %q", doc.Findings, msg)
	}
	return nil
}
