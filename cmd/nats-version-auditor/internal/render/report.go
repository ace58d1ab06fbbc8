package render

import (
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Report is the documented JSON of `report --format json`: the inventory
// one audit saw and what is wrong with it.
type Report struct {
	Status    findings.Severity        `json:"status"`
	Floor     string                   `json:"floor"`
	Servers   []findings.ServerReport  `json:"servers"`
	Clusters  []findings.ClusterReport `json:"clusters"`
	Leafnodes []Leafnode               `json:"leafnodes"`
	// Findings are check's: what makes the status what it is.
	Findings []findings.Finding `json:"findings"`
	// APILevels, Features and AssetLevels say what the system can use now.
	APILevels   APILevels            `json:"api_levels"`
	Features    []Feature            `json:"features"`
	AssetLevels []auditor.AssetLevel `json:"asset_levels"`
	// Shards are the consumers with a priority policy and who pulls them.
	Shards []Shard `json:"shards,omitempty"`
	WhatIf *WhatIf `json:"what_if,omitempty"`
	Audit  Audit   `json:"audit"`
	// Error is set when the audit could not run at all (status UNKNOWN).
	Error string `json:"error,omitempty"`
}

// Leafnode is one leafnode link of the inventory.
type Leafnode struct {
	Server  string `json:"server"`
	Peer    string `json:"peer"`
	Account string `json:"account"`
	// AccountName is the account's name where the audit knows one and it
	// is not Account (operator mode; see snapshot.AccountNames).
	AccountName string `json:"account_name,omitempty"`
	Audited     bool   `json:"audited"`
}

// ReportOf is report's document of r, the would-be report of w under --assume.
func ReportOf(r *findings.Report, w *auditor.WhatIf) Report {
	audited := map[string]bool{}
	for _, s := range r.Servers {
		audited[s.Name] = true
	}
	levels, features := capabilityOf(r)
	out := Report{Status: r.Status, Floor: r.FloorShown(), Servers: NonNil(r.Servers), Clusters: NonNil(r.Clusters),
		Leafnodes: []Leafnode{}, Findings: NonNil(r.Findings), APILevels: levels, Features: features,
		AssetLevels: auditor.AssetLevels(r, releases.FeatureLevels()), Shards: shardsOf(r), WhatIf: whatIfOf(w), Audit: AuditOf(r)}
	names := snapshot.AccountNames(r.Snapshot)
	for _, l := range r.Leafnodes {
		out.Leafnodes = append(out.Leafnodes, Leafnode{Server: l.Server, Peer: l.Peer, Account: l.Account, AccountName: names[l.Account], Audited: audited[l.Peer]})
	}
	return out
}

// WriteReport writes report's document of r (the would-be report of w
// under --assume) in format, text or JSON.
func WriteReport(out io.Writer, format string, r *findings.Report, w *auditor.WhatIf) error {
	doc := ReportOf(r, w)
	if format == FormatJSON {
		return writeError(writeFindingsByHand(out, &doc, &doc.Findings))
	}
	return writeError(writeReportText(out, doc, r, w))
}

// WriteReportFailed writes report's document of an audit that could not
// run: failed is its report (findings.Failed), err what ended it. The text
// form is empty: the one line of the error on stderr says it all.
func WriteReportFailed(out io.Writer, format string, err error, failed *findings.Report) error {
	if format != FormatJSON {
		return nil
	}
	doc := ReportOf(failed, nil)
	doc.Error = err.Error()
	return writeError(WriteJSON(out, doc))
}

func writeReportText(w io.Writer, out Report, r *findings.Report, what *auditor.WhatIf) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ew := &errWriter{w: tw}
	ew.printf("%s%s: %s\n\n", out.Status, assuming(what), summary(r))
	ew.printf("SERVER\tCLUSTER\tDOMAIN\tVERSION\tAPI LEVEL\tVERDICT\tSTREAMS LED\tCONSUMERS LED\n")
	for _, s := range out.Servers {
		ew.printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.Name, dash(s.Cluster), dash(s.Domain), s.Version, levelText(s.APILevel), s.Verdict, s.StreamsLed, s.ConsumersLed)
	}
	writeFeatureFlagsText(ew, out.Servers)
	if len(out.Clusters) > 0 {
		ew.printf("\nCLUSTER\tSERVERS\tVERSIONS\n")
		for _, c := range out.Clusters {
			ew.printf("%s\t%d\t%s\n", c.Name, c.Servers, strings.Join(c.Versions, ", "))
		}
	}
	if len(out.Leafnodes) > 0 {
		ew.printf("\nLEAFNODE LINK\tPEER\tACCOUNT\tAUDITED\n")
		for _, l := range out.Leafnodes {
			ew.printf("%s\t%s\t%s\t%t\n", l.Server, l.Peer, snapshot.AccountLabel(l.Account, l.AccountName), l.Audited)
		}
	}
	writeShardsText(ew, out.Shards)
	writeCapabilityText(ew, out.APILevels, out.Features, out.AssetLevels)
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

// writeFeatureFlagsText lists, for each server that reports feature flags
// (2.14.0 on), the flags it has on and those its config turns off, marking
// what its config sets rather than its release's default. A system with no
// such server has no section.
func writeFeatureFlagsText(ew *errWriter, servers []findings.ServerReport) {
	reported := false
	for _, s := range servers {
		reported = reported || len(s.FeatureFlags) > 0
	}
	if !reported {
		return
	}
	ew.printf("\nSERVER\tFEATURE FLAGS\n")
	for _, s := range servers {
		if len(s.FeatureFlags) == 0 {
			continue
		}
		ew.printf("%s\t%s\n", s.Name, dashList(flagsShown(s.Server)))
	}
}

// writeShardsText lists the consumers with a priority policy: their leader,
// backlog, waiting pulls and the pin's holder with its age, as the leader
// reported them. A system with none has no section.
func writeShardsText(ew *errWriter, shards []Shard) {
	if len(shards) == 0 {
		return
	}
	ew.printf("\nSHARD\tPOLICY\tLEADER\tPENDING\tUNACKED\tWAITING\tIDLE\tPINNED TO\tPIN AGE\n")
	for _, s := range shards {
		name := snapshot.AccountLabel(s.Account, s.AccountName) + " > " + s.Stream + " > " + s.Consumer
		p := s.Pull
		if !p.FromLeader {
			ew.printf("%s\t%s\t%s\t-\t-\t-\t-\t-\t-\n", name, p.Policy, dash(s.Leader))
			continue
		}
		pinAge := "-"
		if p.PinnedID != "" {
			pinAge = seconds(p.PinAgeSeconds)
		}
		ew.printf("%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", name, p.Policy, s.Leader, p.Pending, p.AckPending, p.Waiting,
			seconds(p.IdleSeconds), dash(p.PinnedID), pinAge)
	}
}

// seconds writes a duration in whole seconds, as the shard table shows it.
func seconds(s float64) string { return strconv.FormatFloat(math.Round(s), 'f', 0, 64) + "s" }
