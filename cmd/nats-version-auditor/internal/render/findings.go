package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
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

// writeFindings lists findings grouped by code, worst first, their
// citations as references to n's notes.
func writeFindings(ew *errWriter, n *notes, findings []findings.Finding) {
	for i := 0; i < len(findings); {
		code := findings[i].Code
		j := i
		for j < len(findings) && findings[j].Code == code {
			j++
		}
		ew.printf("\n%s (%s, %d)\n", code, findings[i].Severity, j-i)
		for _, f := range findings[i:j] {
			ew.printf("  %s\n", n.message(f))
		}
		i = j
	}
}

// Some findings quote where the rule they break comes from: a release
// note, the NATS docs, a pull request. A plan or a what-if gives the same
// finding for server after server, so each document writes each such
// citation once, in a numbered note, and the messages refer to it ("[1]").

// Note is one citation a document's findings refer to as [ID]: the rule or
// the release it stands for, with its source.
type Note struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// citation is a text findings' messages carry in full, and the note that
// stands for it.
type citation struct {
	quoted, note string
}

// citations are the texts of the release tables that findings quote: each
// path rule's source and reason (releases.PathRule.BrokenBy, and
// UPGRADE_PATH_MIXED), each bad release's defect and source. A reason
// refers to what goes before it in the message ("releases before it"), so a
// note says that too.
var citations = func() []citation {
	var out []citation
	for _, r := range releases.PathRules {
		var rule string
		switch {
		case r.OnePatch:
			rule = "a downgrade more than one patch release back is outside what the NATS docs support"
		case r.Downgrade:
			rule = fmt.Sprintf("a downgrade from %s goes no lower than %s", r.Line.Minor(), r.Floor)
		default:
			rule = fmt.Sprintf("%s wants %s or later first", r.Line.Minor(), r.Floor)
		}
		out = append(out, citation{quoted: " (" + r.Cite + "): " + r.Why, note: rule + " (" + r.Cite + "): " + r.Why})
	}
	for _, b := range releases.BadReleases {
		c := citation{quoted: ": " + b.Defect + " (" + b.Cite + ")", note: b.Defect + " (" + b.Cite + ")"}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}()

// citing are the codes whose messages quote a citation. Only their
// messages are searched: a check of a large system has thousands of
// findings of other codes.
var citing = map[findings.Code]bool{findings.UpgradePathUnsupported: true, findings.DowngradeBelowFloor: true,
	findings.UpgradePathMixed: true, findings.KnownBadRelease: true}

// notes are one document's notes, numbered in the order the document first
// cites them.
type notes struct {
	list []Note
	// ids are the IDs of citations' entries cited so far.
	ids map[int]int
}

// message is f's message with each citation it quotes replaced by a
// reference to its note, the note added when it is the first reference.
func (n *notes) message(f findings.Finding) string {
	if !citing[f.Code] {
		return f.Message
	}
	msg := f.Message
	for i, c := range citations {
		if !strings.Contains(msg, c.quoted) {
			continue
		}
		id, ok := n.ids[i]
		if !ok {
			if n.ids == nil {
				n.ids = map[int]int{}
			}
			id = len(n.list) + 1
			n.ids[i] = id
			n.list = append(n.list, Note{ID: id, Text: c.note})
		}
		msg = strings.ReplaceAll(msg, c.quoted, fmt.Sprintf(" [%d]", id))
	}
	return msg
}

// uncited is f's message without the citations it quotes: for a line that
// has no room for notes.
func uncited(f findings.Finding) string {
	if !citing[f.Code] {
		return f.Message
	}
	msg := f.Message
	for _, c := range citations {
		msg = strings.ReplaceAll(msg, c.quoted, "")
	}
	return msg
}

// cite is fs with each message's citations replaced by references to n's
// notes: fs itself when no message quotes one, else a copy (fs may be a
// report's that other readers share).
func (n *notes) cite(fs []findings.Finding) []findings.Finding {
	var out []findings.Finding
	for i := range fs {
		msg := n.message(fs[i])
		if msg == fs[i].Message {
			continue
		}
		if out == nil {
			out = slices.Clone(fs)
		}
		out[i].Message = msg
	}
	if out == nil {
		return fs
	}
	return out
}

// Uncited is fs, findings of a document whose notes are notes, with each
// reference to a note written out as the message first quoted it: a report
// made again of a document (check --exporter reads serve's) prints its
// own notes. A note these tables do not know (a serve of another release)
// is written out as its text, in parentheses.
func Uncited(fs []findings.Finding, notes []Note) []findings.Finding {
	if len(notes) == 0 {
		return fs
	}
	quoted := make(map[int]string, len(notes))
	for _, note := range notes {
		quoted[note.ID] = " (" + note.Text + ")"
		for _, c := range citations {
			if c.note == note.Text {
				quoted[note.ID] = c.quoted
			}
		}
	}
	out := slices.Clone(fs)
	for i := range out {
		if !strings.Contains(out[i].Message, " [") {
			continue
		}
		for id, q := range quoted {
			out[i].Message = strings.ReplaceAll(out[i].Message, fmt.Sprintf(" [%d]", id), q)
		}
	}
	return out
}

// writeNotes prints the notes n's references point to, once, at the end
// of a text document.
func writeNotes(ew *errWriter, n *notes) {
	if len(n.list) == 0 {
		return
	}
	ew.printf("\nNOTES\n")
	for _, note := range n.list {
		ew.printf("  [%d] %s\n", note.ID, note.Text)
	}
}
