package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
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
