package releases

import (
	"encoding/json"
	"go/ast"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// mappingFunction is how the tables judge one mapping function of subject
// transforms ({{name(...)}} in a destination). Two lists in the server
// decide whether a release takes it: the transform engine's
// (indexPlaceHolders, subject_transform.go), which builds every transform
// and republish as the stream is created, and the config check's
// (ValidateMapping, sublist.go; ValidateMappingDestination in 2.10), which
// checkStreamCfg runs on the stream's transform and its mirror's and
// sources' transforms (2.10: sources only), on a create and again as a
// server creates the stream from its assignment or its store. A release
// missing it in either refuses such a stream.
type mappingFunction struct {
	// Engine and Check are the first releases whose engine and check
	// accept it; zero: 2.10.27 or earlier.
	Engine, Check version.Version
	// Features are the rows of Features that detect a config calling it,
	// where some release refuses it; otherwise Note says why none does.
	Features []string
	Note     string
}

var (
	mappingFunctions = map[string]mappingFunction{
		"wildcard": {Note: since210}, "partition": {Note: since210}, "split": {Note: since210},
		"splitFromLeft": {Note: since210}, "splitFromRight": {Note: since210},
		"sliceFromLeft": {Note: since210}, "sliceFromRight": {Note: since210},
		// The engine has them since 2.10.0; the check only from 2.14.7.
		"left":   {Check: v2147, Features: []string{"transform_left_right", "source_transform_left_right"}},
		"right":  {Check: v2147, Features: []string{"transform_left_right", "source_transform_left_right"}},
		"random": {Engine: v212, Check: v212, Features: []string{"transform_random"}},
	}

	// mappingChecked are the last releases before the bounds of
	// mappingFunctions, read beside the bounds themselves.
	mappingChecked = []string{"v2.11.17", "v2.14.6"}
)

// checkMappingFunctions reads, at tag, the mapping functions the transform
// engine and the config check accept, and holds mappingFunctions to them.
func checkMappingFunctions(t *testing.T, tag, dir string) {
	t.Helper()
	v := version.Must(tag)
	engine := regexArgs(mustFuncBody(t, tag, "subject_transform.go", parseServerFile(t, dir, "subject_transform.go"), "indexPlaceHolders"), "getMappingFunctionArgs")
	sublist := parseServerFile(t, dir, "sublist.go")
	check := map[string]bool{}
	for _, fn := range []string{"ValidateMapping", "ValidateMappingDestination"} {
		if body := funcBody(sublist, fn); body != nil {
			maps.Copy(check, regexArgs(body, "MatchString"))
		}
	}
	if len(engine) == 0 || len(check) == 0 {
		t.Fatalf("%s: no mapping functions read: engine %v, check %v", tag, engine, check)
	}
	for _, name := range slices.Sorted(maps.Keys(mergeSets(engine, check))) {
		if _, ok := mappingFunctions[name]; !ok {
			t.Errorf("%s brings the mapping function %s (engine: %t, check: %t), which the tables do not judge", tag, name, engine[name], check[name])
		}
	}
	for name, m := range mappingFunctions {
		if want := v.AtLeast(m.Engine); engine[name] != want {
			t.Errorf("%s: the transform engine takes %s: %t; the table says from %q", tag, name, engine[name], m.Engine)
		}
		if want := v.AtLeast(m.Check); check[name] != want {
			t.Errorf("%s: the config check takes %s: %t; the table says from %q", tag, name, check[name], m.Check)
		}
	}
}

// regexArgs lists the mapping functions whose patterns body uses: the
// <name>MappingFunctionRegEx variables passed to a call named fn, or (for
// MatchString) whose method fn is.
func regexArgs(body *ast.BlockStmt, fn string) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var exprs []ast.Expr
		switch f := c.Fun.(type) {
		case *ast.Ident:
			if f.Name == fn {
				exprs = c.Args
			}
		case *ast.SelectorExpr:
			if f.Sel.Name == fn {
				exprs = []ast.Expr{f.X}
			}
		}
		for _, e := range exprs {
			if id, ok := e.(*ast.Ident); ok {
				if name, ok := strings.CutSuffix(id.Name, "MappingFunctionRegEx"); ok {
					out[name] = true
				}
			}
		}
		return true
	})
	return out
}

func mergeSets(a, b map[string]bool) map[string]bool {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// TestMappingFunctionRows holds each mapping function's rows to the table:
// a row for every function some release refuses, released when the later
// of the engine and the check takes it, and seeing the function wherever
// the check reads it.
func TestMappingFunctionRows(t *testing.T) {
	for name, m := range mappingFunctions {
		if len(m.Features) == 0 {
			if !m.Engine.IsZero() || !m.Check.IsZero() || m.Note == "" {
				t.Errorf("%s: some release refuses it, or no note says why none does, and no feature detects it", name)
			}
			continue
		}
		since := m.Engine
		if m.Check.Compare(since) > 0 {
			since = m.Check
		}
		call := "{{" + name + "(1,2)}}"
		if name == "random" {
			call = "{{ Random(3) }}" // the server's patterns take either case of the first letter, and spaces
		}
		seen := map[string]bool{}
		for _, where := range []string{
			`{"subject_transform":{"src":"a.*.*","dest":"b.` + call + `"}}`,
			`{"mirror":{"name":"O","subject_transforms":[{"src":"a.*.*","dest":"b.` + call + `"}]}}`,
			`{"sources":[{"name":"O"},{"name":"P","subject_transforms":[{"src":"a.*.*","dest":"b.` + call + `"}]}]}`,
		} {
			var c AssetConfig
			if err := json.Unmarshal([]byte(where), &c); err != nil {
				t.Fatal(err)
			}
			found := DetectFeatures(KindStream, &c)
			for _, f := range m.Features {
				seen[f] = seen[f] || found.Has(f)
			}
			if !slices.ContainsFunc(m.Features, found.Has) {
				t.Errorf("%s: none of %v sees %s", name, m.Features, where)
			}
		}
		for _, f := range m.Features {
			if !seen[f] {
				t.Errorf("%s: feature %s sees it nowhere", name, f)
			}
			if got := featureByName(t, f).Since; got != since {
				t.Errorf("%s: feature %s came in %s; the table says every release from %s takes it", name, f, got, since)
			}
		}
	}
	// A republish goes through the engine alone (2.11.12 stream.go:1822,
	// 2.15.3 :2543): only an engine's function is refused there.
	var c AssetConfig
	if err := json.Unmarshal([]byte(`{"republish":{"src":">","dest":"r.{{left(1,2)}}.{{right(1,2)}}"}}`), &c); err != nil {
		t.Fatal(err)
	}
	if got := DetectFeatures(KindStream, &c).Names(); len(got) != 0 {
		t.Errorf("a republish with left() and right() is taken as %v; every release's engine takes them", got)
	}
	if err := json.Unmarshal([]byte(`{"republish":{"src":">","dest":"r.{{random(2)}}"}}`), &c); err != nil {
		t.Fatal(err)
	}
	if !DetectFeatures(KindStream, &c).Has("transform_random") {
		t.Error("a republish with random() is not seen")
	}
}
