package jsonscan_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/natsaudit/nats-version-auditor/auditor/collect/internal/jsonscan"
)

// skipAll steps over one value and checks that nothing follows it.
func skipAll(data []byte) error {
	s := jsonscan.New(data)
	if err := s.Skip(); err != nil {
		return err
	}
	return s.End()
}

// TestStringScanEveryPosition holds the string scans, which test eight
// bytes at a time, to encoding/json with a quote, a backslash, a control
// character or a byte above ASCII at every position of strings from 0 to
// 24 bytes long, and with the string ending exactly where the input does.
func TestStringScanEveryPosition(t *testing.T) {
	specials := []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xff, 'a'}
	for n := 0; n <= 24; n++ {
		for p := 0; p < max(n, 1); p++ {
			for _, c := range specials {
				body := []byte(strings.Repeat("b", n))
				if n > 0 {
					body[p] = c
				}
				for _, text := range [][]byte{
					append(append([]byte(`"`), body...), '"'),
					append(append([]byte(`{"k":"`), body...), []byte(`","`+string(body)+`":1}`)...),
				} {
					err := skipAll(text)
					if valid := json.Valid(text); valid != (err == nil) {
						t.Fatalf("%q: skip: %v, json.Valid: %v", text, err, valid)
					}
					var want map[string]any
					wantErr := json.Unmarshal(text, &want)
					if text[0] != '{' {
						continue
					}
					got := map[string]any{}
					s := jsonscan.New(text)
					err = s.Object(func(key []byte) error {
						var v string
						if string(key) == "k" {
							if err := s.Text(&v); err != nil {
								return err
							}
							got["k"] = v
							return nil
						}
						got[string(key)] = float64(1)
						return s.Skip()
					})
					if err == nil {
						err = s.End()
					}
					if (err != nil) != (wantErr != nil) {
						t.Fatalf("%q: decoded with %v, encoding/json with %v", text, err, wantErr)
					}
					if err == nil && !reflect.DeepEqual(got, want) {
						t.Fatalf("%q: decoded %q, encoding/json %q", text, got, want)
					}
				}
			}
		}
	}
}

// record is what TestReadersMatchUnmarshal decodes both ways.
type record struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"`
	On     bool     `json:"on"`
	N      int      `json:"n"`
	TTL    int64    `json:"ttl"`
	Tags   []string `json:"tags"`
	Nested []record `json:"nested"`
	Raw    any      `json:"raw"`
}

// decodeRecord reads a record with the Scanner's readers, as a decoder
// of a schema does.
func decodeRecord(s *jsonscan.Scanner, r *record) error {
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "name":
			return s.Text(&r.Name)
		case "kind":
			return s.Name(&r.Kind)
		case "on":
			return s.Bool(&r.On)
		case "n":
			return s.Int(&r.N)
		case "ttl":
			return s.Int64(&r.TTL)
		case "tags":
			return jsonscan.List(s, &r.Tags, s.Text)
		case "nested":
			return jsonscan.List(s, &r.Nested, func(n *record) error {
				if s.Null() {
					return nil
				}
				return decodeRecord(s, n)
			})
		case "raw":
			if s.Peek() == 0 {
				return s.Skip()
			}
			raw, err := s.Raw()
			if err != nil {
				return err
			}
			return json.Unmarshal(raw, &r.Raw)
		}
		return s.Skip()
	})
}

// TestReadersMatchUnmarshal holds the typed readers to encoding/json: the
// same values decoded, and an error wherever encoding/json gives one (a
// value of the wrong type, a number out of range, text that is not JSON).
func TestReadersMatchUnmarshal(t *testing.T) {
	for _, text := range []string{
		`{"name":"a\u00e9\"\\\/\b\f\n\r\t\ud83d\ude00\ud800x","kind":"pinned","on":true,"n":-7,"ttl":120000000000,"tags":["x","y"],"nested":[{"kind":"pinned"},null,{"name":"b","nested":[]}],"raw":{"a":[1,2.5e3,null]}}`,
		`{"name":null,"kind":null,"on":null,"n":null,"ttl":null,"tags":null,"nested":null,"raw":null}`,
		`{"tags":[],"nested":[],"other":{"deep":[[[{}]]]},"on":false}`,
		` { "n" : 1 , "tags" : [ "a" , "b" ] } `,
		`{"n":1,"n":2}`,
		`{"on":"yes"}`,
		`{"on":1}`,
		`{"n":1.5}`,
		`{"n":"1"}`,
		`{"n":1e3}`,
		`{"n":99999999999999999999}`,
		`{"ttl":9223372036854775808}`,
		`{"name":5}`,
		`{"tags":"x"}`,
		`{"tags":[1]}`,
		`{"nested":[5]}`,
		`{"raw":[1,]}`,
		`{"raw":tru}`,
		`{"raw":`,
		`{"name":"a"`,
		`{"name":"a"} x`,
		`[]`,
		``,
	} {
		var want record
		wantErr := json.Unmarshal([]byte(text), &want)
		var got record
		s := jsonscan.New([]byte(text))
		err := decodeRecord(&s, &got)
		if err == nil {
			err = s.End()
		}
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", text, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded\n  %+v\nencoding/json\n  %+v", text, got, want)
		}
	}
}

// TestNameInterns holds Name to one string per distinct value, whether the
// value is found in the cache in front of the table or in the table, and
// to the right value when two names share a slot of the cache.
func TestNameInterns(t *testing.T) {
	// "ab" and "cb" share a slot (same length, same last byte).
	var names []string
	for range 3 {
		for _, n := range []string{"ab", "cb", "leader-1", "", "ab"} {
			names = append(names, fmt.Sprintf("%q", n))
		}
	}
	s := jsonscan.New([]byte("[" + strings.Join(names, ",") + "]"))
	first := map[string]*byte{}
	var got []string
	err := s.Array(func() error {
		var n string
		if err := s.Name(&n); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%q", n))
		if n == "" {
			return nil
		}
		if p, ok := first[n]; ok && p != unsafe.StringData(n) {
			t.Errorf("%q read again is another string", n)
		}
		first[n] = unsafe.StringData(n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("read %v, want %v", got, names)
	}
}

// TestNestingLimit holds the scanner to encoding/json's nesting limit,
// reached by Skip alone and by Object and Array calling Skip.
func TestNestingLimit(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		text := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		valid := json.Valid(text)
		if err := skipAll(text); valid != (err == nil) {
			t.Errorf("depth %d: skip: %v, json.Valid: %v", depth, err, valid)
		}
		s := jsonscan.New(text)
		err := s.Array(func() error { return s.Skip() })
		if err == nil {
			err = s.End()
		}
		if valid != (err == nil) {
			t.Errorf("depth %d: an array then skip: %v, json.Valid: %v", depth, err, valid)
		}
	}
}

// document is a machine-written JSON document of n entries, as the fuzz
// target's seed: long strings, escapes, numbers of every form, nesting.
func document(n int) []byte {
	var entries []any
	for i := range n {
		entries = append(entries, map[string]any{
			"name":    fmt.Sprintf("entry-%05d", i),
			"created": "2026-01-02T03:04:05.123456789Z",
			"config":  map[string]any{"replicas": i % 3, "ratio": 0.25 * float64(i), "big": 1e21, "subjects": []string{"a.>", "b.*"}, "flag": i%2 == 0, "none": nil},
			"note":    "tab\there \"quoted\" \\ é \u2028 <html>",
			"peers":   []any{map[string]any{"name": "n1", "current": true}, nil, []any{}},
		})
	}
	b, err := json.Marshal(map[string]any{"data": entries, "total": n})
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzSkipMatchesValid holds Skip, which steps over most of a document, to
// encoding/json: it accepts exactly the texts json.Valid does.
func FuzzSkipMatchesValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,"x\u00e9\n",true,false,null,{}],"b":{"c":[[]]}}`, `"\ud800"`, "\"a\xffb\"",
		`{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":01}`, `{"a":tru}`, `[1,]`, `{"a" 1}`, `{,}`, ` [ 1 , { "k" : "v" } ] `, `[`, `"`, `-`, ``} {
		f.Add([]byte(s))
	}
	f.Add(document(20))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := skipAll(data)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("skip: %v, json.Valid: %v", err, valid)
		}
	})
}
