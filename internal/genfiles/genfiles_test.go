package genfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunWritesThenChecks(t *testing.T) {
	root := t.TempDir()
	content := "v1"
	gen := func(string) ([]File, error) {
		return []File{{Path: "a.txt", Content: []byte(content)}, {Path: "sub/b.txt", Content: []byte(content)}}, nil
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(root, true, gen, "regen"); err == nil || !strings.Contains(err.Error(), "a.txt, sub/b.txt") {
		t.Fatalf("check before writing: %v", err)
	}
	if err := Run(root, false, gen, "regen"); err != nil {
		t.Fatal(err)
	}
	if err := Run(root, true, gen, "regen"); err != nil {
		t.Fatalf("check after writing: %v", err)
	}
	content = "v2"
	if err := Run(root, true, gen, "regen"); err == nil || !strings.Contains(err.Error(), "run: regen") {
		t.Fatalf("check of a stale file: %v", err)
	}
}
