package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// appName is the program's name: the first word of every line it prints
// about itself, the name its NATS connections carry and the landing page's.
const appName = "nats-version-auditor"

// checkOutput is the documented JSON of `check --format json`.
type checkOutput struct {
	Status   auditor.Severity       `json:"status"`
	Floor    string                 `json:"floor"`
	Findings []auditor.Finding      `json:"findings"`
	Servers  []auditor.ServerReport `json:"servers"`
	// APILevels and Features say what the system can use now.
	APILevels apiLevelsOutput `json:"api_levels"`
	Features  []featureOutput `json:"features"`
	// WhatIf is set under --assume: the report is the would-be one.
	WhatIf *whatIfOutput `json:"what_if,omitempty"`
	Audit  auditInfo     `json:"audit"`
	// Error is set when the audit could not run at all (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

type auditInfo struct {
	Started          time.Time `json:"started"`
	DurationSeconds  float64   `json:"duration_seconds"`
	ServersExpected  int       `json:"servers_expected"`
	ServersResponded int       `json:"servers_responded"`
	Requests         int       `json:"requests"`
}

func newAuditInfo(r *auditor.Report) auditInfo {
	return auditInfo{
		Started:          r.Snapshot.Started.UTC(),
		DurationSeconds:  r.Snapshot.Duration.Seconds(),
		ServersExpected:  r.ServersExpected,
		ServersResponded: len(r.Servers),
		Requests:         r.Snapshot.Requests,
	}
}

// failedReport is the report of an audit that could not run: UNKNOWN, the
// error as its one AUDIT_INCOMPLETE finding, nothing seen. check's and
// report's documents of it come from the code that prints a real report,
// so that every list they hold is one (`[]`, never null). took is how long
// the attempt took.
func failedReport(err error, pol auditor.Policy, started time.Time, took time.Duration) *auditor.Report {
	return &auditor.Report{Status: auditor.Unknown, Floor: auditor.Display(pol.Floor),
		Findings: []auditor.Finding{{Code: auditor.AuditIncomplete, Severity: auditor.SeverityOf(auditor.AuditIncomplete), Message: err.Error()}},
		Snapshot: &auditor.Snapshot{Started: started, Duration: took}}
}

// failedJSON is check's document for an audit that could not run.
func failedJSON(err error, r *auditor.Report) checkOutput {
	out := checkJSON(r, nil)
	out.Error = err.Error()
	return out
}

func checkJSON(r *auditor.Report, w *auditor.WhatIf) checkOutput {
	levels, features := capabilityOf(r)
	return checkOutput{Status: r.Status, Floor: r.Floor, Findings: nonNil(r.Findings), Servers: nonNil(r.Servers),
		APILevels: levels, Features: features, WhatIf: whatIfJSON(w), Audit: newAuditInfo(r)}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeJSON writes v as one line of JSON. Indenting it cost ten times the
// encoding itself (80 ms for 11,000 findings); `jq .` indents for people.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

func summary(r *auditor.Report) string {
	counts := map[auditor.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	return fmt.Sprintf("%d of %d expected servers answered, floor %s; %d %s (%d critical, %d unknown, %d warning)",
		len(r.Servers), r.ServersExpected, r.Floor, len(r.Findings), plural(len(r.Findings), "finding"),
		counts[auditor.Critical], counts[auditor.Unknown], counts[auditor.Warning])
}

func writeCheckText(w io.Writer, r *auditor.Report, what *auditor.WhatIf) error {
	ew := &errWriter{w: w}
	ew.printf("%s%s: %s\n", r.Status, assuming(what), summary(r))
	writeFindings(ew, r.Findings)
	writeWhatIfText(ew, what)
	return ew.err
}

// writeFindings lists findings grouped by code, worst first.
func writeFindings(ew *errWriter, findings []auditor.Finding) {
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

func writeNagios(w io.Writer, r *auditor.Report, what *auditor.WhatIf) error {
	counts := map[auditor.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	msg := fmt.Sprintf("%d %s", len(r.Findings), plural(len(r.Findings), "finding"))
	if what != nil {
		msg = fmt.Sprintf("%s: %s, %d would appear and %d would go", strings.TrimSpace(assuming(what)), msg, len(what.Appear), len(what.Gone))
	}
	if len(r.Findings) > 0 {
		msg += ": " + r.Findings[0].Message
	}
	_, err := fmt.Fprintf(w, "NATS VERSIONS %s - %s | servers=%d;;;0 servers_expected=%d;;;0 critical=%d;;;0 unknown=%d;;;0 warning=%d;;;0 duration=%.3fs;;;0 requests=%d;;;0\n",
		r.Status, msg, len(r.Servers), r.ServersExpected,
		counts[auditor.Critical], counts[auditor.Unknown], counts[auditor.Warning], r.Snapshot.Duration.Seconds(), r.Snapshot.Requests)
	return err
}

// writeNagiosUnknown is the one Nagios line of an audit that could not run.
func writeNagiosUnknown(w io.Writer, err error) {
	fmt.Fprintf(w, "NATS VERSIONS UNKNOWN - %v\n", err)
}

// reportOutput is the documented JSON of `report --format json`.
type reportOutput struct {
	Status    auditor.Severity        `json:"status"`
	Floor     string                  `json:"floor"`
	Servers   []auditor.ServerReport  `json:"servers"`
	Clusters  []auditor.ClusterReport `json:"clusters"`
	Leafnodes []leafOutput            `json:"leafnodes"`
	// Findings are check's: what makes the status what it is.
	Findings []auditor.Finding `json:"findings"`
	// APILevels, Features and AssetLevels say what the system can use now.
	APILevels   apiLevelsOutput      `json:"api_levels"`
	Features    []featureOutput      `json:"features"`
	AssetLevels []auditor.AssetLevel `json:"asset_levels"`
	WhatIf      *whatIfOutput        `json:"what_if,omitempty"`
	Audit       auditInfo            `json:"audit"`
	// Error is set when the audit could not run at all (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

type leafOutput struct {
	Server  string `json:"server"`
	Peer    string `json:"peer"`
	Account string `json:"account"`
	// AccountName is the account's name where the audit knows one and it
	// is not Account (operator mode; see auditor.AccountNames).
	AccountName string `json:"account_name,omitempty"`
	Audited     bool   `json:"audited"`
}

// failedReportJSON is report's document for an audit that could not run.
func failedReportJSON(err error, r *auditor.Report) reportOutput {
	out := reportOf(r, nil)
	out.Error = err.Error()
	return out
}

// reportOf is the inventory `report` prints.
func reportOf(r *auditor.Report, w *auditor.WhatIf) reportOutput {
	audited := map[string]bool{}
	for _, s := range r.Servers {
		audited[s.Name] = true
	}
	levels, features := capabilityOf(r)
	out := reportOutput{Status: r.Status, Floor: r.Floor, Servers: nonNil(r.Servers), Clusters: nonNil(r.Clusters),
		Leafnodes: []leafOutput{}, Findings: nonNil(r.Findings), APILevels: levels, Features: features,
		AssetLevels: auditor.AssetLevels(r, auditor.FeatureLevels()), WhatIf: whatIfJSON(w), Audit: newAuditInfo(r)}
	names := auditor.AccountNames(r.Snapshot)
	for _, l := range r.Leafnodes {
		out.Leafnodes = append(out.Leafnodes, leafOutput{Server: l.Server, Peer: l.Peer, Account: l.Account, AccountName: names[l.Account], Audited: audited[l.Peer]})
	}
	return out
}

func writeReportText(w io.Writer, out reportOutput, r *auditor.Report, what *auditor.WhatIf) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ew := &errWriter{w: tw}
	ew.printf("%s%s: %s\n\n", out.Status, assuming(what), summary(r))
	ew.printf("SERVER\tCLUSTER\tDOMAIN\tVERSION\tAPI LEVEL\tVERDICT\tSTREAMS LED\tCONSUMERS LED\n")
	for _, s := range out.Servers {
		ew.printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.Name, dash(s.Cluster), dash(s.Domain), s.Version, levelText(s.APILevel), s.Verdict, s.StreamsLed, s.ConsumersLed)
	}
	if len(out.Clusters) > 0 {
		ew.printf("\nCLUSTER\tSERVERS\tVERSIONS\n")
		for _, c := range out.Clusters {
			ew.printf("%s\t%d\t%s\n", c.Name, c.Servers, strings.Join(c.Versions, ", "))
		}
	}
	if len(out.Leafnodes) > 0 {
		ew.printf("\nLEAFNODE LINK\tPEER\tACCOUNT\tAUDITED\n")
		for _, l := range out.Leafnodes {
			ew.printf("%s\t%s\t%s\t%t\n", l.Server, l.Peer, auditor.AccountLabel(l.Account, l.AccountName), l.Audited)
		}
	}
	writeCapabilityText(ew, out)
	if ew.err != nil {
		return ew.err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What makes the status what it is, as check lists it: a report that
	// says UNKNOWN names the servers missing, the replies not read.
	ew = &errWriter{w: w}
	writeFindings(ew, out.Findings)
	writeWhatIfText(ew, what)
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter keeps the first write error so that a run of prints needs one check.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
