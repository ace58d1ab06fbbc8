package releases

import (
	"go/ast"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// opEncoders name the function that encodes the entry of an op whose
// proposals checkProposals reads: the calls to Propose that take its
// result are where a leader proposes the op.
var opEncoders = map[string]string{"deleteRangeOp": "encodeDeleteRange"}

// checkProposals holds the Proposed of each row with an encoder in
// opEncoders to the source at tag: a leader proposes the op from the
// release the table says, and only behind the feature flag it names (the
// delete range: skipMsgs, 2.14.0 stream.go:3336-3340, 2.15.3 :3747-3751).
func checkProposals(t *testing.T, tag, dir string) {
	t.Helper()
	v := version.Must(tag)
	var files []*ast.File
	for _, name := range []string{"stream.go", "jetstream_cluster.go", "consumer.go"} {
		if f := parseServerFile(t, dir, name); f != nil {
			files = append(files, f)
		}
	}
	for _, row := range ReplicatedOps {
		enc, ok := opEncoders[row.GoName]
		if !ok || row.Snapshot != 0 {
			continue
		}
		var flags []string // the flags of the ways the table says a leader at tag proposes it
		for _, p := range row.Proposed {
			if !v.Before(p.Since) {
				flags = append(flags, p.Flag)
			}
		}
		sites := proposalSites(files, enc)
		switch {
		case len(sites) > 0 && len(flags) == 0:
			t.Errorf("%s: %s proposes %s; the table says leaders propose it from %s", tag, sites[0].fn, row.GoName, row.Proposed[0].Since)
		case len(sites) == 0 && len(flags) > 0:
			t.Errorf("%s proposes no %s (no Propose of %s); the table says it does", tag, row.GoName, enc)
		}
		for _, s := range sites {
			if !slices.ContainsFunc(flags, func(flag string) bool {
				return (flag == "" && len(s.flags) == 0) || (flag != "" && slices.Contains(s.flags, flagConstName(flag)))
			}) {
				t.Errorf("%s: %s proposes %s behind the flags %v; the table's proposals at %s are behind %q", tag, s.fn, row.GoName, s.flags, tag, flags)
			}
		}
	}
}

// proposalSite is a call to Propose whose entry an encoder makes: the
// function it is in, and the feature flag constants named in the
// conditions of the if statements whose body holds it.
type proposalSite struct {
	fn    string
	flags []string
}

// proposalSites lists the calls to a RAFT node's Propose or ProposeMulti
// that take what encoder returns.
func proposalSites(files []*ast.File, encoder string) []proposalSite {
	var out []proposalSite
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			var stack []ast.Node
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if n == nil {
					stack = stack[:len(stack)-1]
					return true
				}
				stack = append(stack, n)
				call, ok := n.(*ast.CallExpr)
				if !ok || !isPropose(call) || !callsNamed(&ast.BlockStmt{List: argStmts(call)}, encoder) {
					return true
				}
				site := proposalSite{fn: fd.Name.Name}
				for i, anc := range stack[:len(stack)-1] {
					if is, ok := anc.(*ast.IfStmt); ok && stack[i+1] == is.Body {
						site.flags = append(site.flags, flagConsts(is.Cond)...)
					}
				}
				out = append(out, site)
				return true
			})
		}
	}
	return out
}

func isPropose(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Propose" || sel.Sel.Name == "ProposeMulti")
}

// argStmts wraps a call's arguments as statements, for callsNamed.
func argStmts(c *ast.CallExpr) []ast.Stmt {
	out := make([]ast.Stmt, len(c.Args))
	for i, a := range c.Args {
		out[i] = &ast.ExprStmt{X: a}
	}
	return out
}

// flagConsts lists the feature flag constants an expression names.
func flagConsts(e ast.Expr) []string {
	var out []string
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && strings.HasPrefix(id.Name, "FeatureFlag") && id.Name != "FeatureFlag" {
			out = append(out, id.Name)
		}
		return true
	})
	return out
}
