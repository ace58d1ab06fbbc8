package releases

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"testing"
)

// TestDefaultAction holds defaultAction to the default branches a release
// could write: the three TestOpTablesAgainstSource tells apart, and the
// shapes that would pass for one of them by mistake.
func TestDefaultAction(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{`panic(fmt.Sprintf("Unknown op: %v", op))`, defaultPanics},
		{`return fmt.Errorf("unknown stream entry op type: %v", op)`, defaultErrors},
		{`return 0, fmt.Errorf("unknown op")`, defaultErrors},
		{`return isRecovering, didSnap, errUnknownOp`, defaultErrors},
		{`s.Warnf("unknown op %v", op); return nil`, defaultIgnores},
		{`return 0, nil`, defaultIgnores},
		{`return`, defaultIgnores},
		{`s.Warnf("unknown op %v", op)`, defaultNothing},
		// Only the branch's own code counts, first action first.
		{`defer func() { panic("later") }(); return nil`, defaultIgnores},
		{`f := func() error { return errX }; _ = f; panic("op")`, defaultPanics},
		{`if op > 200 { return nil }; panic("op")`, defaultIgnores},
	}
	for _, tt := range tests {
		src := "package p\nfunc f() { switch op { case 1: default: " + tt.body + " } }"
		f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		var def *ast.CaseClause
		ast.Inspect(f, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok && cc.List == nil {
				def = cc
			}
			return def == nil
		})
		if got := defaultAction(def); got != tt.want {
			t.Errorf("default: %s\n  %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestEntryOpsOf holds entryOpsOf to the ways a release can declare an
// entry op: a later block or a single constant, in jetstream_cluster.go or
// any other file, with iota, an offset, a conversion, or a blank.
func TestEntryOpsOf(t *testing.T) {
	src := `package server
type entryOp uint8
const (
	assignStreamOp entryOp = iota
	assignConsumerOp
	_
	streamMsgOp
)
const other = 7
const (
	laterOp entryOp = iota + 20
	nextOp
)
const singleOp entryOp = 30
const convertedOp = entryOp(31)
const (
	notAnOp = iota
	alsoNotAnOp
)
const unresolvedOp entryOp = someOtherConst
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"assignStreamOp": 0, "assignConsumerOp": 1, "streamMsgOp": 3, "laterOp": 20, "nextOp": 21,
		"singleOp": 30, "convertedOp": 31, "unresolvedOp": -1}
	if got := entryOpsOf(f); !maps.Equal(got, want) {
		t.Errorf("entryOpsOf = %v\nwant %v", got, want)
	}
}
