package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/layout"
)

const module = "github.com/natsaudit/nats-version-auditor"

// The measures every shipped package keeps.
const (
	maxLines = 4000
	maxLoop  = 3
)

// ownModule are the packages of this repository that are modules of their
// own, outside ./...: any room may import them.
var ownModule = map[string]bool{"auditor/client": true}

// room is one package's section of docs/layout.md.
type room struct {
	path    string
	shipped bool
	imports []string
	files   []string
}

var (
	roomHeading = regexp.MustCompile("^### `([^`]+)`")
	fileName    = regexp.MustCompile("`([a-z0-9_]+\\.go)`")
	pathName    = regexp.MustCompile("`([a-z0-9_/.-]+)`")
)

// rooms reads the package sections of docs/layout.md, bottom up, by
// paragraph: a section's "May import:" paragraph names packages of earlier
// sections, its paragraph starting "Ships." marks what goes into the binary,
// and each bullet maps the files it names.
func rooms(t *testing.T) []room {
	t.Helper()
	b, err := os.ReadFile("layout.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []room
	var para []string
	flush := func() {
		text := strings.Join(para, " ")
		para = nil
		if len(out) == 0 || text == "" {
			return
		}
		r := &out[len(out)-1]
		switch {
		case strings.HasPrefix(text, "Ships."):
			r.shipped = true
		case strings.HasPrefix(text, "May import:"):
			for _, m := range pathName.FindAllStringSubmatch(text, -1) {
				r.imports = append(r.imports, m[1])
			}
		case strings.HasPrefix(text, "- "):
			for _, m := range fileName.FindAllStringSubmatch(text, -1) {
				r.files = append(r.files, m[1])
			}
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## ") && len(out) > 0:
			flush()
			return out
		case roomHeading.MatchString(line):
			flush()
			out = append(out, room{path: roomHeading.FindStringSubmatch(line)[1]})
		case line == "" || strings.HasPrefix(line, "- "):
			flush()
			if line != "" {
				para = append(para, line)
			}
		default:
			para = append(para, strings.TrimSpace(line))
		}
	}
	flush()
	return out
}

// TestLayout holds the code to the map in docs/layout.md: every package and
// every non-test file is in it, a package imports only packages its
// section allows, each of them mapped earlier (below it), and every shipped
// package keeps to the measures.
func TestLayout(t *testing.T) {
	pkgs, err := layout.Load("..", module, "./...")
	if err != nil {
		t.Fatal(err)
	}
	rs := rooms(t)
	if len(rs) == 0 {
		t.Fatal("docs/layout.md maps no package: want sections headed ### `path`")
	}
	rank := map[string]int{}
	for i, r := range rs {
		if _, dup := rank[r.path]; dup {
			t.Errorf("docs/layout.md maps %s twice", r.path)
		}
		rank[r.path] = i
	}
	for i, r := range rs {
		for _, imp := range r.imports {
			j, ok := rank[imp]
			switch {
			case ownModule[imp]:
			case !ok:
				t.Errorf("docs/layout.md: %s may import %s, which it does not map", r.path, imp)
			case j >= i:
				t.Errorf("docs/layout.md: %s may import %s, which is mapped above it: a room imports only rooms below it", r.path, imp)
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		path := strings.TrimPrefix(strings.TrimPrefix(p.Path, module), "/")
		if path == "" {
			path = "."
		}
		seen[path] = true
		i, ok := rank[path]
		if !ok {
			t.Errorf("package %s is not in docs/layout.md: add a section ### `%s` where it sits, bottom up", path, path)
			continue
		}
		r := rs[i]
		for _, imp := range p.Imports {
			imp = strings.TrimPrefix(imp, module+"/")
			if !slices.Contains(r.imports, imp) {
				t.Errorf("%s imports %s, which its section of docs/layout.md does not allow", path, imp)
			}
			if ir, ok := rank[imp]; ok && rs[ir].shipped != r.shipped && r.shipped {
				t.Errorf("%s ships and imports %s, which does not", path, imp)
			}
		}
		for _, f := range p.Files {
			if !slices.Contains(r.files, f) {
				t.Errorf("%s/%s is not mapped in docs/layout.md: add a bullet `%s`: what it holds", path, f, f)
			}
		}
		for _, f := range r.files {
			if !slices.Contains(p.Files, f) {
				t.Errorf("docs/layout.md maps %s/%s, which is gone", path, f)
			}
		}
		if len(p.Files) > 1 {
			doc := packageDoc(t, p)
			for _, f := range p.Files {
				if f != "doc.go" && !strings.Contains(doc, f) {
					t.Errorf("%s: the package's doc comment does not map %s", path, f)
				}
			}
		}
		if !r.shipped {
			continue
		}
		if p.Lines > maxLines {
			t.Errorf("%s has %d lines of non-test Go, over %d: carve a room out of it", path, p.Lines, maxLines)
		}
		if p.Largest() > maxLoop {
			t.Errorf("%s has a loop of %d files using each other, over %d: %v", path, p.Largest(), maxLoop, p.Loops[0])
		}
	}
	for _, r := range rs {
		if !seen[r.path] {
			t.Errorf("docs/layout.md maps %s, which is not a package", r.path)
		}
	}
}

// packageDoc is the comments above the package clause of each of p's files:
// where the package's doc comment, and with it its map, is.
func packageDoc(t *testing.T, p *layout.Package) string {
	t.Helper()
	var doc strings.Builder
	for _, f := range p.Files {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(b), "\npackage ")
		doc.WriteString(head)
	}
	return doc.String()
}
