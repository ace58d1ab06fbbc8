// Package render writes the documents the commands print: check's, report's
// and plan's, with the what-if and capability blocks they carry, each in its
// JSON, text and (check) Nagios forms. A document of an audit that could not
// run, or of a plan that could not be made, is the document of its report
// (findings.Failed when no audit ran) with the error beside it, so that every
// list it holds is one (`[]`, never null); the blocks of what no audit saw
// (api_levels, features) are left out. A citation the findings share is
// written once per document, as a note their messages refer to.
//
// Files: render.go, the writers every document shares; one per document,
// check.go, report.go and plan.go, with whatif.go (the --assume block) and
// capability.go; findings.go, the findings' JSON by hand, their text and
// their notes; summary.go, the first line of check's and report's text (what
// check's Nagios line says was checked too); featureflags.go, a server's
// flags in text; pull.go, who pulls a consumer.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
)

// The formats a document is written in.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatNagios = "nagios"
)

// Audit says which audit a document comes from.
type Audit struct {
	Started          time.Time `json:"started"`
	DurationSeconds  float64   `json:"duration_seconds"`
	ServersExpected  int       `json:"servers_expected"`
	ServersResponded int       `json:"servers_responded"`
	Requests         int       `json:"requests"`
}

// AuditOf is the audit block of r.
func AuditOf(r *findings.Report) Audit {
	return Audit{
		Started:          r.Snapshot.Started.UTC(),
		DurationSeconds:  r.Snapshot.Duration.Seconds(),
		ServersExpected:  r.ServersExpected,
		ServersResponded: len(r.Servers),
		Requests:         r.Snapshot.Requests,
	}
}

// WriteJSON writes v as one line of JSON: indenting costs many times the
// encoding itself, and `jq .` indents for people.
func WriteJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// NonNil is s, or an empty list for nil: a document's lists are `[]`, never null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// listed is how many entries of a list the text output prints before it
// says how many more there are.
const listed = 10

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func levelText(level int) string {
	if level == releases.LevelUnknown {
		return "unknown"
	}
	return fmt.Sprint(level)
}

// errWriter keeps the first write error so that a run of prints needs one check.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// writeError wraps a failure to write a document.
func writeError(err error) error {
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
