package auditor

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

type evaluation struct {
	p      Policy
	byName map[string]*findings.ServerReport
	// findings are added in chunks that never move: a growing slice of
	// thousands of findings was copied each time it grew, every pointer of
	// them through the write barrier while the collector ran, which it
	// does as the audit's heap grows. The sort places each finding once,
	// into a slice of the exact size.
	findings [][]findings.Finding
	// seen are the servers that answered, by name; sourcers the origin
	// consumers that mirrors and sources RESET by themselves.
	seen     map[string]snapshot.Server
	sourcers map[ConsumerKey][]Sourcer
	// unread are the servers a request of which failed or whose reply
	// could not be used: what they did not report is no evidence.
	unread map[string]bool
	// snap is the snapshot judged.
	snap *snapshot.Snapshot
	// ackV2 are the servers that answered with js_ack_fc_v2 on: read once
	// per server, not once per consumer's peer (a flag's default is
	// looked up in a table).
	ackV2 map[string]bool
	// lastCode and lastSeverity are the code of the finding added last
	// and its severity.
	lastCode     findings.Code
	lastSeverity findings.Severity
	// rule is the rule judging, which names the codes it may add.
	rule *rule
}

// checkRuleCodes makes add hold each finding to the codes its rule names;
// the tests set it.
var checkRuleCodes bool

// findingChunk is how many findings a chunk holds.
const findingChunk = 512

func (e *evaluation) add(f findings.Finding) {
	if checkRuleCodes && e.rule != nil && !slices.Contains(e.rule.codes, f.Code) {
		panic(fmt.Sprintf("rule %q added a finding of %s, which it does not name", e.rule.name, f.Code))
	}
	// Findings come in runs of one code: its registration is looked up
	// once per run, not once per finding.
	if f.Code != e.lastCode || e.lastCode == "" {
		e.lastCode, e.lastSeverity = f.Code, findings.SeverityOf(f.Code)
	}
	f.Severity = e.lastSeverity
	if n := len(e.findings); n == 0 || len(e.findings[n-1]) == findingChunk {
		e.findings = append(e.findings, make([]findings.Finding, 0, findingChunk))
	}
	last := &e.findings[len(e.findings)-1]
	*last = append(*last, f)
}

// countVerb is "count", or "counts" after one name.
func countVerb(names int) string {
	if names == 1 {
		return "counts"
	}
	return "count"
}

func (e *evaluation) selected(a *snapshot.Asset) bool {
	if !accountSelected(e.p.Accounts, a) || !matchAny(e.p.Streams, a.Stream) {
		return false
	}
	return a.Kind != releases.KindConsumer || matchAny(e.p.Consumers, a.Consumer)
}

// assetFinding is a finding about a: made only for a finding, as most
// assets have none.
func assetFinding(a *snapshot.Asset) findings.Finding {
	return findings.Finding{Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer}
}

func codeIndex(c findings.Code) int {
	return slices.IndexFunc(findings.Codes, func(k findings.CodeInfo) bool { return k.Code == c })
}

// sortFindings orders findings worst first, then by code, asset and server,
// keeping the order of equals.
func sortFindings(fs []findings.Finding) {
	copy(fs, sortedFindings([][]findings.Finding{fs}))
}

// sortedFindings returns the findings of the chunks, in order, as
// sortFindings orders them. It sorts small keys, then copies every finding
// once: a stable sort of the findings themselves (large structs,
// thousands of them) moved them over and over. A key holds what decides
// most comparisons without reading the finding: its rank and code, the
// place of its account and stream among the few distinct ones (a stream's
// findings share them), and the first bytes of its consumer's name.
func sortedFindings(chunks [][]findings.Finding) []findings.Finding {
	type key struct {
		order, account, stream uint32
		consumer               uint64
		i                      int
		f                      *findings.Finding
	}
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	if n == 0 {
		return nil
	}
	keys := make([]key, 0, n)
	accounts, streams := ordinals{}, ordinals{}
	var lastCode findings.Code
	code := -1
	for _, c := range chunks {
		for i := range c {
			f := &c[i]
			if code < 0 || f.Code != lastCode {
				lastCode, code = f.Code, codeIndex(f.Code)
			}
			// Worst first; codes in their registered order (an unregistered
			// one, -1, before the rest, as it was).
			order := uint32(3-f.Severity.Rank())<<16 | uint32(code+1)
			keys = append(keys, key{order, accounts.id(f.Account), streams.id(f.Stream), prefix8(f.Consumer), len(keys), f})
		}
	}
	accountRank, streamRank := accounts.ranks(), streams.ranks()
	for j := range keys {
		keys[j].account, keys[j].stream = accountRank[keys[j].account], streamRank[keys[j].stream]
	}
	slices.SortFunc(keys, func(x, y key) int {
		// One test per field until one differs: cmp.Or would compare
		// every field first.
		switch {
		case x.order != y.order:
			return cmp.Compare(x.order, y.order)
		case x.account != y.account:
			return cmp.Compare(x.account, y.account)
		case x.stream != y.stream:
			return cmp.Compare(x.stream, y.stream)
		case x.consumer != y.consumer:
			return cmp.Compare(x.consumer, y.consumer)
		}
		a, b := x.f, y.f
		return cmp.Or(
			cmp.Compare(a.Consumer, b.Consumer),
			cmp.Compare(a.Cluster, b.Cluster),
			cmp.Compare(a.Server, b.Server),
			cmp.Compare(a.Peer, b.Peer),
			cmp.Compare(x.i, y.i), // stable
		)
	})
	out := make([]findings.Finding, len(keys))
	for j, k := range keys {
		out[j] = *k.f
	}
	return out
}

// ordinals numbers distinct strings in the order they are first met, then
// ranks them in sorted order.
type ordinals struct {
	ids    map[string]uint32
	values []string
	last   string
	lastID uint32
}

// id is the number of s; consecutive findings mostly share the string.
func (o *ordinals) id(s string) uint32 {
	if o.values != nil && s == o.last {
		return o.lastID
	}
	if o.ids == nil {
		o.ids = map[string]uint32{}
	}
	id, ok := o.ids[s]
	if !ok {
		id = uint32(len(o.values))
		o.ids[s] = id
		o.values = append(o.values, s)
	}
	o.last, o.lastID = s, id
	return id
}

// ranks maps each id to the place of its string among all, sorted.
func (o *ordinals) ranks() []uint32 {
	byValue := make([]uint32, len(o.values))
	for i := range byValue {
		byValue[i] = uint32(i)
	}
	slices.SortFunc(byValue, func(a, b uint32) int { return cmp.Compare(o.values[a], o.values[b]) })
	rank := make([]uint32, len(o.values))
	for r, id := range byValue {
		rank[id] = uint32(r)
	}
	return rank
}

// prefix8 is the first eight bytes of s as a big-endian number, zero
// padded: numbers that differ order as their strings do; equal ones leave
// the strings to compare.
func prefix8(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}

func joinSorted(ss []string) string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return strings.Join(slices.Compact(ss), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func domainSuffix(domain string) string {
	if domain == "" {
		return ""
	}
	return " of domain " + domain
}

// ConsumerKey names a consumer: a JetStream domain ("" for none), an
// account by its id (see Asset.Account), a stream and the consumer.
type ConsumerKey struct {
	Domain, Account, Stream, Consumer string
}

// StreamKey names a stream: a JetStream domain ("" for none), an account
// and the stream.
type StreamKey struct {
	Domain, Account, Stream string
}

// Sourcer is a mirror or source that reads an origin consumer through
// durable sourcing: while a server at ResetVersion or later leads it, it
// sends that consumer $JS.API.CONSUMER.RESET by itself at setup, after each
// of its leader changes and on retries (2.14.0 stream.go:3564-3590), whether
// or not any application does.
type Sourcer struct {
	Account, Stream string
	Mirror          bool
	// Leader leads the mirror or source stream ("" for none).
	Leader string
}

// Name is the stream as findings write it.
func (s Sourcer) Name() string { return s.Account + " > " + s.Stream }

// Kind is "mirror" or "source".
func (s Sourcer) Kind() string {
	if s.Mirror {
		return "mirror"
	}
	return "source"
}

// sourcerNames writes the sourcers as findings name them: "mirror APP >
// MIRROR, source APP > AGG".
func sourcerNames(ss []Sourcer) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Kind() + " " + s.Name()
	}
	return strings.Join(parts, ", ")
}

// runsOn writes how many of an asset's n peers run it, and what one more
// loss does; atMost when that many is only a bound, as some peers that may
// not run it did not answer.
func runsOn(running, n int, atMost bool) string {
	out := fmt.Sprintf("runs on %d of its %d peers", running, n)
	if atMost {
		out = fmt.Sprintf("runs on at most %d of its %d peers", running, n)
	}
	quorum := n/2 + 1
	switch {
	case running < quorum:
		out += ", fewer than its quorum of " + strconv.Itoa(quorum) + ": it stops"
	case running == quorum && n > 1:
		out += "; one more peer down and it stops"
	}
	return out
}

// orList writes names as "n1", "n1 or n2", "n1, n2 or n3".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// A rule judges one aspect of a snapshot: it adds findings of the codes it
// names, each registered in findings.Codes, and may fill in the report.
type rule struct {
	// name says what the rule judges.
	name string
	// codes are the codes of the findings it adds; the tests hold every
	// finding a rule adds to them.
	codes []findings.Code
	judge func(e *evaluation, r *findings.Report)
}
