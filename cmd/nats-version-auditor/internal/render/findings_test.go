package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

// TestFindingsJSONMatchesEncodingJSON holds the hand-written findings to
// encoding/json: every field of Finding set (by reflection, so that a field
// added later and not written by hand fails here), every field empty, and
// strings that need escaping; then whole documents, check's and report's,
// as they are and under a what-if.
func TestFindingsJSONMatchesEncodingJSON(t *testing.T) {
	strs := []string{"plain", "APP > S1 > C1", "<&>", `quote " backslash \ slash /`, "tab\tnew\nline\r\x00\x1f\x7f",
		"\b\f", "é ü 中 😀", "bad \xff\xfe utf-8 \xc3", "\u2028\u2029", ""}
	var fs []findings.Finding
	for _, s := range strs {
		var f findings.Finding
		fill(reflect.ValueOf(&f).Elem(), s)
		fs = append(fs, f, findings.Finding{Message: s})
	}
	zero := 0
	fs = append(fs, findings.Finding{}, findings.Finding{Code: findings.ServerMissing, Severity: findings.Severity(9), ServerLevel: &zero,
		RequiredLevel: -1, Count: -2, Versions: []string{}, Sourcers: []string{""}})
	want, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	got := []byte{'['}
	for i := range fs {
		if i > 0 {
			got = append(got, ',')
		}
		got = appendFindingJSON(got, &fs[i])
	}
	got = append(got, ']')
	if !bytes.Equal(got, want) {
		t.Errorf("findings written as\n  %s\nencoding/json writes\n  %s", got, want)
	}

	r := fixture.Report()
	what, err := auditor.Assume(auditor.Evaluate(r.Snapshot, auditor.Policy{Floor: version.DefaultFloor}), auditor.Policy{Floor: version.DefaultFloor}, []auditor.Assumption{{Target: "n2", Version: mustRelease(t, "2.12.15")}})
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]struct {
		write func(*bytes.Buffer) error
		v     any
	}{
		"check":          {func(b *bytes.Buffer) error { return writeCheckJSON(b, CheckOf(r, nil)) }, CheckOf(r, nil)},
		"check --assume": {func(b *bytes.Buffer) error { return writeCheckJSON(b, CheckOf(what.After, what)) }, CheckOf(what.After, what)},
		"report":         {func(b *bytes.Buffer) error { return WriteReport(b, FormatJSON, r, nil) }, ReportOf(r, nil)},
		"no findings":    {func(b *bytes.Buffer) error { return writeCheckJSON(b, Check{Findings: []findings.Finding{}}) }, Check{Findings: []findings.Finding{}}},
	} {
		var got, want bytes.Buffer
		if err := doc.write(&got); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&want, doc.v); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: written as\n  %s\nencoding/json writes\n  %s", name, got.String(), want.String())
		}
	}
}

// fill sets every field of v: strings to s, numbers to 7, pointers to a
// fresh value, slices to two elements.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), s)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), s)
		}
	default:
		panic("fill: a field of kind " + v.Kind().String())
	}
}

// TestCitationsAreNotes: a citation the release tables give a finding is
// written once per document, as a note its messages refer to: every path
// rule's, as BrokenBy says it, and a bad release's, for two servers of two
// bad releases with one defect, in text and JSON, without changing the
// report the document is made of.
func TestCitationsAreNotes(t *testing.T) {
	for _, r := range releases.PathRules {
		n := &notes{}
		msg := n.message(findings.Finding{Code: findings.UpgradePathUnsupported, Message: "server n1 would go from a to b: " + r.BrokenBy()})
		if strings.Contains(msg, r.Cite) || strings.Contains(msg, r.Why) || !strings.Contains(msg, " [1]") || len(n.list) != 1 ||
			!strings.Contains(n.list[0].Text, r.Cite) || !strings.Contains(n.list[0].Text, r.Why) {
			t.Errorf("%s: message %q, notes %+v", r.BrokenBy(), msg, n.list)
		}
	}

	snap := &snapshot.Snapshot{}
	for i, v := range []string{"2.14.4", "2.12.14"} {
		s := snapshot.Server{ID: fmt.Sprint("ID", i), Name: fmt.Sprint("n", i+1), Cluster: "c1"}
		s.SetVersion(v)
		snap.Servers = append(snap.Servers, s)
	}
	r := auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor})
	bad, _ := releases.BadReleaseOf(mustRelease(t, "2.14.4"))
	var quoted int
	for _, f := range r.Findings {
		if f.Code == findings.KnownBadRelease && strings.Contains(f.Message, bad.Defect) {
			quoted++
		}
	}
	if quoted != 2 {
		t.Fatalf("want two KNOWN_BAD_RELEASE findings quoting the defect, got %d: %+v", quoted, r.Findings)
	}
	var text bytes.Buffer
	if err := WriteCheck(&text, FormatText, r, nil); err != nil {
		t.Fatal(err)
	}
	if n, refs := strings.Count(text.String(), bad.Defect), strings.Count(text.String(), "a release known to lose data [1]; upgrade it to"); n != 1 || refs != 2 {
		t.Errorf("text quotes the defect %d times and refers to it %d times, want 1 and 2:\n%s", n, refs, text.String())
	}
	doc := CheckOf(r, nil)
	if len(doc.Notes) != 1 || !strings.Contains(doc.Notes[0].Text, bad.Cite) {
		t.Errorf("JSON notes %+v, want one with %q", doc.Notes, bad.Cite)
	}
	for _, f := range doc.Findings {
		if strings.Contains(f.Message, bad.Defect) {
			t.Errorf("JSON finding still quotes the defect: %s", f.Message)
		}
	}
	if quoted := strings.Count(fmt.Sprint(r.Findings), bad.Defect); quoted != 2 {
		t.Errorf("the report's own findings changed: the defect %d times, want 2", quoted)
	}
	// Made again of the document (check --exporter), the findings say
	// what the audit's said; a note of another release's tables is kept
	// as its text.
	if got := Uncited(doc.Findings, doc.Notes); !reflect.DeepEqual(got, r.Findings) {
		t.Errorf("uncited:\n%+v\nwant the audit's:\n%+v", got, r.Findings)
	}
	if got := Uncited([]findings.Finding{{Message: "x [1]; y [10]"}}, []Note{{ID: 1, Text: "a rule of another release"}}); got[0].Message != "x (a rule of another release); y [10]" {
		t.Errorf("unknown note written out as %q", got[0].Message)
	}
}
