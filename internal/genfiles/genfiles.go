// Package genfiles is what the generators under deploy/ share: the command
// line (-check, -root) and writing, or checking, the files they generate.
package genfiles

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/natsaudit/nats-version-auditor/internal/modroot"
)

// File is one generated file, its path relative to the module root.
type File struct {
	Path    string
	Content []byte
}

// Main runs a generator as a command: it writes the files generate returns,
// or with -check only reports those that differ, and exits 1 on an error.
// hint says how to regenerate them.
func Main(generate func(root string) ([]File, error), hint string) {
	check := flag.Bool("check", false, "do not write: exit 1 if a generated file differs from what would be written")
	root := flag.String("root", "", "module root (default: the nearest directory above the working directory with a go.mod)")
	flag.Parse()
	if err := Run(*root, *check, generate, hint); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Run writes, or with check compares, the generated files under root (the
// module root when empty).
func Run(root string, check bool, generate func(root string) ([]File, error), hint string) error {
	if root == "" {
		var err error
		if root, err = modroot.Dir(); err != nil {
			return err
		}
	}
	files, err := generate(root)
	if err != nil {
		return err
	}
	var stale []string
	for _, f := range files {
		path := filepath.Join(root, filepath.FromSlash(f.Path))
		if check {
			if have, err := os.ReadFile(path); err != nil || !bytes.Equal(have, f.Content) {
				stale = append(stale, f.Path)
			}
			continue
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date: %s (run: %s)", strings.Join(stale, ", "), hint)
	}
	return nil
}
