package render

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
)

// A check of a large system has thousands of findings, and encoding/json
// reflects over every field of every one: more than the rest of the output
// together (BenchmarkCheckJSON; BENCHMARKS.md). The findings are written
// here by hand, byte for byte as encoding/json writes them
// (TestFindingsJSONMatchesEncodingJSON holds the two together, every field
// set); everything around them is still encoding/json's.

// findingsKey opens the findings of a document whose Findings are empty. No
// string value can hold it: a quote inside a JSON string is escaped.
var findingsKey = []byte(`"findings":[]`)

// writeFindingsByHand writes doc as WriteJSON would: encoding/json's, with
// the findings that field (doc's top-level Findings) holds written by hand
// in their place.
func writeFindingsByHand(w io.Writer, doc any, field *[]findings.Finding) error {
	all := *field
	*field = []findings.Finding{}
	head, err := json.Marshal(doc)
	*field = all
	if err != nil {
		return err
	}
	at := bytes.Index(head, findingsKey)
	if at < 0 {
		return WriteJSON(w, doc) // not where it was looked for: all by encoding/json
	}
	at += len(findingsKey) - 1 // before the closing bracket
	// Written as it is made, a chunk at a time: the findings of a large
	// system run to megabytes that need not all be held at once.
	const chunk = 64 << 10
	buf := make([]byte, 0, 2*chunk)
	buf = append(buf, head[:at]...)
	for i := range all {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendFindingJSON(buf, &all[i])
		if len(buf) >= chunk {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, head[at:]...)
	buf = append(buf, '\n')
	_, err = w.Write(buf)
	return err
}

// appendFindingJSON appends f as encoding/json writes an findings.Finding.
func appendFindingJSON(buf []byte, f *findings.Finding) []byte {
	buf = append(buf, `{"code":`...)
	buf = appendJSONString(buf, string(f.Code))
	buf = append(buf, `,"severity":`...)
	buf = appendJSONString(buf, f.Severity.String())
	buf = append(buf, `,"message":`...)
	buf = appendJSONString(buf, f.Message)
	buf = appendStringField(buf, `,"server":`, f.Server)
	buf = appendStringField(buf, `,"cluster":`, f.Cluster)
	buf = appendStringField(buf, `,"version":`, f.Version)
	buf = appendStringsField(buf, `,"versions":`, f.Versions)
	buf = appendStringField(buf, `,"peer":`, f.Peer)
	buf = appendStringField(buf, `,"account":`, f.Account)
	buf = appendStringField(buf, `,"account_name":`, f.AccountName)
	buf = appendStringField(buf, `,"stream":`, f.Stream)
	buf = appendStringField(buf, `,"consumer":`, f.Consumer)
	if f.RequiredLevel != 0 {
		buf = strconv.AppendInt(append(buf, `,"required_level":`...), int64(f.RequiredLevel), 10)
	}
	if f.ServerLevel != nil {
		buf = strconv.AppendInt(append(buf, `,"server_level":`...), int64(*f.ServerLevel), 10)
	}
	buf = appendStringField(buf, `,"feature":`, f.Feature)
	buf = appendStringField(buf, `,"op":`, f.Op)
	buf = appendStringsField(buf, `,"sourcers":`, f.Sourcers)
	if f.Count != 0 {
		buf = strconv.AppendInt(append(buf, `,"count":`...), int64(f.Count), 10)
	}
	buf = appendStringField(buf, `,"release":`, f.Release)
	return append(buf, '}')
}

// appendStringField appends an omitempty string field.
func appendStringField(buf []byte, key, s string) []byte {
	if s == "" {
		return buf
	}
	return appendJSONString(append(buf, key...), s)
}

// appendStringsField appends an omitempty []string field.
func appendStringsField(buf []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return buf
	}
	buf = append(append(buf, key...), '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, s)
	}
	return append(buf, ']')
}

// appendJSONString appends s quoted as encoding/json quotes it (with its
// default HTML escaping). Printable ASCII, and the ">" of every asset name,
// are written here; a string with anything else (a quote, a backslash, a
// control character, any non-ASCII) is handed to encoding/json whole.
func appendJSONString(buf []byte, s string) []byte {
	start := len(buf)
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		// Runs of bytes that stand for themselves, appended at once.
		j := i
		for j < len(s) && jsonPlain[s[j]] {
			j++
		}
		buf = append(buf, s[i:j]...)
		if j == len(s) {
			break
		}
		switch s[j] {
		case '<':
			buf = append(buf, `\u003c`...)
		case '>':
			buf = append(buf, `\u003e`...)
		case '&':
			buf = append(buf, `\u0026`...)
		default:
			b, _ := json.Marshal(s) // a string always marshals
			return append(buf[:start], b...)
		}
		i = j
	}
	return append(buf, '"')
}

// jsonPlain marks the bytes encoding/json writes as they are: printable
// ASCII but for the quote, the backslash and the HTML escapes (<, >, &).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// Check's and report's text list the findings the same way, so the text
// form lives beside the JSON one.

// writeFindings lists findings grouped by code, worst first.
func writeFindings(ew *errWriter, findings []findings.Finding) {
	for i := 0; i < len(findings); {
		code := findings[i].Code
		j := i
		for j < len(findings) && findings[j].Code == code {
			j++
		}
		ew.printf("\n%s (%s, %d)\n", code, findings[i].Severity, j-i)
		for _, f := range findings[i:j] {
			ew.printf("  %s\n", f.Message)
		}
		i = j
	}
}
