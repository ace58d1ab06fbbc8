package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// flagDocs are the documents whose tables list the flags, each row's first
// cell naming one or more.
var flagDocs = []string{"../../docs/flags.md", "../../docs/exporter.md"}

// flagCell is a flag as the first cell of a table row names it.
var flagCell = regexp.MustCompile("`-(?:-(?:\\[no-\\])?)?([a-z][a-z0-9.-]*)`")

// documentedFlags are the flags the first cells of flagDocs' table rows name.
func documentedFlags(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, doc := range flagDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "| `-") && !strings.HasPrefix(line, "| `--") {
				continue
			}
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			for _, m := range flagCell.FindAllStringSubmatch(first, -1) {
				out[m[1]] = true
			}
		}
	}
	return out
}

// TestFlagsAreDocumented holds the tables of flagDocs to the command line:
// every flag a user can see has a row, and every row names a flag that is.
func TestFlagsAreDocumented(t *testing.T) {
	app := newCLI(io.Discard, io.Discard).app
	visible := map[string]bool{}
	add := func(flags []*kingpin.FlagModel) {
		for _, f := range flags {
			if !f.Hidden && f.Name != "help" && f.Name != "version" {
				visible[f.Name] = true
			}
		}
	}
	model := app.Model()
	add(model.Flags)
	for _, c := range model.Commands {
		add(c.Flags)
	}
	doc := documentedFlags(t)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range visible {
			if !yield(n) {
				return
			}
		}
	}) {
		if !doc[name] {
			t.Errorf("--%s has no row in %v", name, flagDocs)
		}
	}
	for name := range doc {
		if !visible[name] && name != "s" {
			t.Errorf("%v has a row for --%s, which no command has (or it is hidden)", flagDocs, name)
		}
	}
}
