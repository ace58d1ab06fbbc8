package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// The first line of check's and report's text, and check's Nagios line,
// say what was checked (the servers, their versions, the floor, the streams
// and consumers) before what was found. Both documents open with it, so it
// is neither one's.

// firstLineMax is the length, in characters, a first line stays under: a
// Nagios status line is read in one glance, and some consoles cut it.
const firstLineMax = 200

// summary is what follows the status on the first line of check's and
// report's text: what was checked, then the findings by severity.
func summary(r *findings.Report) string {
	return checked(r) + "; " + found(r.Findings)
}

// firstLine is the first line of check's and report's text (without its
// newline): the status, under --assume the assumptions, and the summary.
func firstLine(r *findings.Report, what *auditor.WhatIf) string {
	return shortened(r.Status.String()+assuming(what)+": "+summary(r), firstLineMax-1)
}

// found counts findings, and those of each severity there are.
func found(fs []findings.Finding) string {
	if len(fs) == 0 {
		return "no findings"
	}
	counts := severityCounts(fs)
	var by []string
	for _, s := range []findings.Severity{findings.Critical, findings.Unknown, findings.Warning} {
		if counts[s] > 0 {
			by = append(by, fmt.Sprintf("%d %s", counts[s], strings.ToLower(s.String())))
		}
	}
	return fmt.Sprintf("%d %s (%s)", len(fs), plural(len(fs), "finding"), strings.Join(by, ", "))
}

// checked says what an audit saw: how many servers answered of those
// expected, the versions they run (oldest to newest), the floor, and how
// many streams and consumers it saw.
func checked(r *findings.Report) string {
	servers := fmt.Sprintf("%d of %d expected servers answered", len(r.Servers), r.ServersExpected)
	if span := versionSpan(r.Servers); span != "" {
		servers += ", " + span
	}
	// A report made again of a document (check --exporter reads serve's)
	// has no assets: what its servers lead is what it knows of them.
	streams, consumers := 0, 0
	for _, s := range r.Servers {
		streams, consumers = streams+s.StreamsLed, consumers+s.ConsumersLed
	}
	if r.Snapshot != nil {
		streams, consumers = max(streams, len(r.Snapshot.Streams)), max(consumers, len(r.Snapshot.Consumers))
	}
	return fmt.Sprintf("%s, floor %s, %d %s, %d %s", servers, r.FloorShown(), streams, plural(streams, "stream"), consumers, plural(consumers, "consumer"))
}

// versionSpan is the oldest and newest version the servers run ("2.12.15
// to 2.14.0", or one version), with how many run none the audit could
// read; empty when no server answered.
func versionSpan(servers []findings.ServerReport) string {
	var oldest, newest version.Version
	unparsed := 0
	for _, s := range servers {
		switch {
		case s.Parsed.IsZero():
			unparsed++
		case oldest.IsZero():
			oldest, newest = s.Parsed, s.Parsed
		case s.Parsed.Before(oldest):
			oldest = s.Parsed
		case newest.Before(s.Parsed):
			newest = s.Parsed
		}
	}
	var span string
	switch {
	case oldest.IsZero():
	case oldest == newest:
		span = oldest.String()
	default:
		span = oldest.String() + " to " + newest.String()
	}
	if unparsed > 0 {
		span = strings.TrimPrefix(span+fmt.Sprintf(", %d unparseable", unparsed), ", ")
	}
	return span
}

// clusterVersions are the lines of check's text that say which versions
// each cluster runs, oldest first, each with how many servers run it:
// `cluster c1: 2.12.15 on 1 server, 2.14.0 on 2 servers`. Servers in no
// cluster have a line of their own.
func clusterVersions(servers []findings.ServerReport) []string {
	type run struct {
		shown  string
		parsed version.Version
		n      int
	}
	byCluster := map[string][]run{}
	for _, s := range servers {
		runs := byCluster[s.Cluster]
		i := slices.IndexFunc(runs, func(r run) bool { return r.shown == s.Version })
		if i < 0 {
			runs, i = append(runs, run{shown: s.Version, parsed: s.Parsed}), len(runs)
		}
		runs[i].n++
		byCluster[s.Cluster] = runs
	}
	var out []string
	for _, name := range sortedKeys(byCluster) {
		runs := byCluster[name]
		// A version that does not parse sorts after those that do.
		slices.SortFunc(runs, func(a, b run) int {
			if a.parsed.IsZero() != b.parsed.IsZero() {
				return cmp.Compare(btoi(a.parsed.IsZero()), btoi(b.parsed.IsZero()))
			}
			return cmp.Or(a.parsed.Compare(b.parsed), cmp.Compare(a.shown, b.shown))
		})
		parts := make([]string, len(runs))
		for i, r := range runs {
			parts[i] = fmt.Sprintf("%s on %d %s", dash(r.shown), r.n, plural(r.n, "server"))
		}
		where := "cluster " + name
		if name == "" {
			where = "in no cluster"
		}
		out = append(out, where+": "+strings.Join(parts, ", "))
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shortened is s cut to at most n characters, at a word where it can be,
// with "..." where it was cut.
func shortened(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const more = "..."
	cut := []rune(s)[:n-len(more)]
	if i := strings.LastIndexByte(string(cut), ' '); i > n/2 {
		return string(cut)[:i] + more
	}
	return string(cut) + more
}

func severityCounts(fs []findings.Finding) map[findings.Severity]int {
	counts := map[findings.Severity]int{}
	for _, f := range fs {
		counts[f.Severity]++
	}
	return counts
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
