package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// The renamed audit flags read the same under their old spellings, which
// stay out of --help.
func TestAuditFlagAliases(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		max      int
		compress bool
		inFlight int
	}{
		{nil, 0, false, 0}, // 0: collect.DefaultMaxReplyBytes, DefaultMaxBytesInFlight
		{[]string{"--audit.max-reply-bytes", "8KiB", "--audit.compress"}, 8 << 10, true, 0},
		{[]string{"--max-reply-bytes", "8KiB", "--compress"}, 8 << 10, true, 0},
		{[]string{"--audit.max-bytes-in-flight", "48MiB"}, 0, false, 48 << 20},
	} {
		app := kingpin.New("t", "")
		f := addAuditFlags(app)
		if _, err := app.Parse(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if o := f.options(0, nil); o.MaxReplyBytes != tt.max || o.Compress != tt.compress || o.MaxBytesInFlight != tt.inFlight {
			t.Errorf("%v: max %d compress %v in flight %d, want %d %v %d", tt.args, o.MaxReplyBytes, o.Compress, o.MaxBytesInFlight, tt.max, tt.compress, tt.inFlight)
		}
	}
	for _, bad := range []string{"0", "-1MiB"} {
		var stderr bytes.Buffer
		code := run(t.Context(), []string{"check", "--audit.max-bytes-in-flight=" + bad}, &stderr, &stderr)
		if code != exitUnknown || !strings.Contains(stderr.String(), "--audit.max-bytes-in-flight") || !strings.Contains(stderr.String(), "above 0") {
			t.Errorf("--audit.max-bytes-in-flight %s: exit %d, %q; want exit %d naming the flag", bad, code, stderr.String(), exitUnknown)
		}
	}
	var help bytes.Buffer
	if code := run(t.Context(), []string{"--help"}, &help, &help); code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	if h := help.String(); !strings.Contains(h, "--audit.max-reply-bytes") || strings.Contains(h, "--max-reply-bytes") || strings.Contains(h, "  --compress") {
		t.Errorf("--help shows the aliases or not the flags:\n%s", h)
	}
}

// --audit.min-interval is one flag with one help text and a default per
// command: 5s for check --wait, 15s for serve.
func TestMinIntervalDefaults(t *testing.T) {
	app := kingpin.New("t", "")
	check, serve := addCheckCommand(app), addServeCommand(app)
	for _, tt := range []struct {
		args []string
		got  *time.Duration
		want time.Duration
	}{
		{[]string{"check", "--wait", "1m"}, &check.wait.minInterval, 5 * time.Second},
		{[]string{"serve"}, &serve.minInterval, 15 * time.Second},
		{[]string{"check", "--wait", "1m", "--audit.min-interval", "2s"}, &check.wait.minInterval, 2 * time.Second},
		{[]string{"serve", "--audit.min-interval", "0s"}, &serve.minInterval, 0},
	} {
		if _, err := app.Parse(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if *tt.got != tt.want {
			t.Errorf("%v: --audit.min-interval %s, want %s", tt.args, *tt.got, tt.want)
		}
	}
}

// A value kingpin refuses is named with its flag: kingpin's own message
// names only the value.
func TestBadFlagValuesNameTheFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--timeout", "abc"}, `--timeout abc: time: invalid duration "abc"`},
		{[]string{"check", "--format", "yaml"}, "--format yaml: enum value must be one of text,json,nagios"},
		{[]string{"report", "--audit.max-reply-bytes", "lots"}, "--audit.max-reply-bytes lots: "},
		{[]string{"--expect", "x", "check"}, "--expect x: "},
		// Errors that are not a value's keep kingpin's words.
		{[]string{"check", "--nope"}, "unknown long flag '--nope'"},
	} {
		var stderr bytes.Buffer
		if code := run(t.Context(), tt.args, &stderr, &stderr); code != exitUnknown || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, %q; want exit %d with %q", tt.args, code, stderr.String(), exitUnknown, tt.want)
		}
	}
}

func TestBadEnvironmentValueNamesTheVariable(t *testing.T) {
	t.Setenv("NATS_TIMEOUT", "abc")
	var stderr bytes.Buffer
	want := `NATS_TIMEOUT=abc (--timeout): time: invalid duration "abc"`
	if code := run(t.Context(), []string{"check"}, &stderr, &stderr); code != exitUnknown || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, %q; want exit %d with %q", code, stderr.String(), exitUnknown, want)
	}
}

// TestUnpulledAfterReachesThePolicy: --unpulled-after is the threshold of
// CONSUMER_PULLED_BY_NOBODY in the policy a command evaluates with, the
// rule's own default when it is not given, off (negative) at 0; a value that is not a duration
// is refused with the flag named.
func TestUnpulledAfterReachesThePolicy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{{nil, auditor.DefaultUnpulledAfter}, {[]string{"--unpulled-after", "5s"}, 5 * time.Second}, {[]string{"--unpulled-after", "0"}, -1}} {
		app := kingpin.New(appName, "")
		c := addCheckCommand(app)
		if _, err := app.Parse(append([]string{"check"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		pol, err := c.pol.policy()
		if err != nil || pol.UnpulledAfter != tc.want {
			t.Errorf("%v: UnpulledAfter %s, %v; want %s", tc.args, pol.UnpulledAfter, err, tc.want)
		}
	}
	res := runCmd(t, "check", "--format", "json", "--unpulled-after", "soon")
	if res.code != exitUnknown || !strings.Contains(res.stderr, "--unpulled-after soon") || !strings.Contains(res.stdout, `"status":"UNKNOWN"`) {
		t.Errorf("exit %d, stderr %q, stdout %q", res.code, res.stderr, res.stdout)
	}
}
