package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// The renamed audit flags read the same under their old spellings, which
// stay out of --help.
func TestAuditFlagAliases(t *testing.T) {
	for _, tt := range []struct {
		args     []string
		max      int
		compress bool
	}{
		{nil, 0, false}, // 0: auditor.DefaultMaxReplyBytes
		{[]string{"--audit.max-reply-bytes", "8KiB", "--audit.compress"}, 8 << 10, true},
		{[]string{"--max-reply-bytes", "8KiB", "--compress"}, 8 << 10, true},
	} {
		app := kingpin.New("t", "")
		c := addConnFlags(app)
		if _, err := app.Parse(tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if o := c.auditOptions(nil); o.MaxReplyBytes != tt.max || o.Compress != tt.compress {
			t.Errorf("%v: max %d compress %v, want %d %v", tt.args, o.MaxReplyBytes, o.Compress, tt.max, tt.compress)
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
