// Package layout measures how the shipped code is laid out: the lines of
// each package, which files of a package use each other's declarations
// (with go/types, as the compiler resolves them), the loops those uses
// make, and which packages of the module each imports. The layout test in
// docs/ holds the code to docs/layout.md with it, and `go run
// ./internal/layout/figures` prints them.
package layout

import (
	"fmt"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Package is one package's measures, test files left out.
type Package struct {
	// Path is the import path; Dir its directory.
	Path, Dir string
	// Files are the base names of its non-test Go files, sorted.
	Files []string
	// Lines counts the lines of those files.
	Lines int
	// Uses maps a file to the files whose package-level declarations it
	// uses (itself left out).
	Uses map[string][]string
	// Names maps "from -> to" to the names from uses of to's declarations.
	Names map[string][]string
	// Loops are the groups of more than one file that use each other,
	// directly or through others: the strongly connected components of
	// Uses. Each is sorted; the largest come first.
	Loops [][]string
	// Imports are the packages of the same module it imports, sorted.
	Imports []string
}

// Load type-checks the packages patterns name, from dir, and measures
// those whose import path begins with module.
func Load(dir, module string, patterns ...string) ([]*Package, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
			packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		Dir: dir,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
	}
	var out []*Package
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("load %s: %v", p.PkgPath, p.Errors[0])
		}
		if !strings.HasPrefix(p.PkgPath, module) || len(p.Syntax) == 0 {
			continue
		}
		out = append(out, measure(p, module))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func measure(p *packages.Package, module string) *Package {
	m := &Package{Path: p.PkgPath, Uses: map[string][]string{}, Names: map[string][]string{}}
	names := map[string]map[string]bool{}
	fileOf := func(pos token.Pos) string { return filepath.Base(p.Fset.Position(pos).Filename) }
	for _, f := range p.Syntax {
		path := p.Fset.Position(f.Pos()).Filename
		name := filepath.Base(path)
		m.Dir = filepath.Dir(path)
		m.Files = append(m.Files, name)
		m.Lines += p.Fset.File(f.Pos()).LineCount()
	}
	sort.Strings(m.Files)
	scope := p.Types.Scope()
	uses := map[string]map[string]bool{}
	note := func(from string, obj types.Object) {
		if obj == nil || obj.Pkg() != p.Types || !obj.Pos().IsValid() {
			return
		}
		if !declaredAtTop(scope, obj) {
			return
		}
		to := fileOf(obj.Pos())
		if to == from {
			return
		}
		if uses[from] == nil {
			uses[from] = map[string]bool{}
		}
		uses[from][to] = true
		edge := from + " -> " + to
		if names[edge] == nil {
			names[edge] = map[string]bool{}
		}
		names[edge][obj.Name()] = true
	}
	for id, obj := range p.TypesInfo.Uses {
		note(fileOf(id.Pos()), obj)
	}
	// A method or field reached through a value is a use of the file that
	// declares it, as much as a named function is.
	for sel, s := range p.TypesInfo.Selections {
		note(fileOf(sel.Pos()), s.Obj())
	}
	for from, tos := range uses {
		for to := range tos {
			m.Uses[from] = append(m.Uses[from], to)
		}
		sort.Strings(m.Uses[from])
	}
	for edge, ns := range names {
		for n := range ns {
			m.Names[edge] = append(m.Names[edge], n)
		}
		sort.Strings(m.Names[edge])
	}
	m.Loops = loops(m.Files, m.Uses)
	for path := range p.Imports {
		if strings.HasPrefix(path, module) {
			m.Imports = append(m.Imports, path)
		}
	}
	sort.Strings(m.Imports)
	return m
}

// declaredAtTop reports whether obj is a package-level declaration, or a
// method or field of one: what one file can use of another's.
func declaredAtTop(scope *types.Scope, obj types.Object) bool {
	if obj.Parent() == scope {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}

// loops returns the strongly connected components of more than one file
// (Tarjan's algorithm), largest first.
func loops(files []string, uses map[string][]string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(f string)
	visit = func(f string) {
		index[f], low[f] = next, next
		next++
		stack = append(stack, f)
		on[f] = true
		for _, g := range uses[f] {
			if _, seen := index[g]; !seen {
				visit(g)
				low[f] = min(low[f], low[g])
			} else if on[g] {
				low[f] = min(low[f], index[g])
			}
		}
		if low[f] != index[f] {
			return
		}
		var comp []string
		for {
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[g] = false
			comp = append(comp, g)
			if g == f {
				break
			}
		}
		if len(comp) > 1 {
			sort.Strings(comp)
			out = append(out, comp)
		}
	}
	for _, f := range files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	slices.SortStableFunc(out, func(a, b []string) int { return len(b) - len(a) })
	return out
}

// Largest is the size of the package's largest file loop, 1 when it has none.
func (p *Package) Largest() int {
	if len(p.Loops) == 0 {
		return 1
	}
	return len(p.Loops[0])
}
