package render

import (
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

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
	// APILevels, Features and AssetLevels say what the system can use now;
	// the first two are left out when the audit saw no JetStream server.
	APILevels   APILevels            `json:"api_levels,omitzero"`
	Features    []Feature            `json:"features,omitempty"`
	AssetLevels []auditor.AssetLevel `json:"asset_levels"`
	// Shards are the consumers with a priority policy and who pulls them.
	Shards []Shard `json:"shards,omitempty"`
	// Pulls says whose pulls the audit heard, and for how long; left out
	// when it did not listen.
	Pulls  *PullSight `json:"pulls,omitempty"`
	WhatIf *WhatIf    `json:"what_if,omitempty"`
	// Notes are the citations the messages of Findings and WhatIf refer to
	// as [ID], each written once.
	Notes []Note `json:"notes,omitempty"`
	Audit Audit  `json:"audit"`
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
	n := &notes{}
	out := Report{Status: r.Status, Floor: r.FloorShown(), Servers: NonNil(r.Servers), Clusters: NonNil(r.Clusters),
		Leafnodes: []Leafnode{}, Findings: NonNil(n.cite(r.Findings)), APILevels: levels, Features: features,
		AssetLevels: auditor.AssetLevels(r, releases.FeatureLevels()), Shards: shardsOf(r), Pulls: PullSightOf(r.Snapshot), WhatIf: whatIfOf(w, n), Audit: AuditOf(r)}
	out.Notes = n.list
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
	ew.printf("%s\n\n", firstLine(r, what))
	ew.printf("SERVER\tCLUSTER\tDOMAIN\tVERSION\tAPI LEVEL\tVERDICT\tSTREAMS LED\tCONSUMERS LED\n")
	for _, s := range out.Servers {
		// A server without JetStream reports no level (its 0 is no level).
		level := "-"
		if s.JetStream {
			level = levelText(s.APILevel)
		}
		ew.printf("%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.Name, dash(s.Cluster), dash(s.Domain), s.Version, level, s.Verdict, s.StreamsLed, s.ConsumersLed)
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
	writePullersText(ew, out.Shards, out.Pulls)
	writeCapabilityText(ew, out.APILevels, out.Features, out.AssetLevels, sameServers(r))
	if ew.err != nil {
		return ew.err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What makes the status what it is, as check lists it: a report that
	// says UNKNOWN names the servers missing, the replies not read.
	ew = &errWriter{w: w}
	n := &notes{}
	writeFindingsOrWhatIf(ew, n, r.Findings, what)
	writeNotes(ew, n)
	return ew.err
}

// writeFeatureFlagsText lists, for each server that reports feature flags
// (releases.FeatureFlagsSince on), the flags it has on and those its config
// turns off, marking what its config sets rather than its release's
// default; a server of an earlier release has none, and says so. A system
// with no server that reports flags has no section.
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
		switch {
		case len(s.FeatureFlags) > 0:
			ew.printf("%s\t%s\n", s.Name, dashList(flagsShown(s.Server)))
		case !s.Parsed.IsZero() && s.Parsed.Before(releases.FeatureFlagsSince):
			ew.printf("%s\tnone: before %s\n", s.Name, releases.FeatureFlagsSince)
		default:
			ew.printf("%s\tnone reported\n", s.Name)
		}
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

// writePullersText lists, where the audit listened, the processes heard
// pulling each shard, and each account with shards whose pulls it could
// not hear, with the step that lets it.
func writePullersText(ew *errWriter, shards []Shard, sight *PullSight) {
	if sight == nil {
		return
	}
	ew.printf("\nPULLS HEARD FOR %s\n", seconds(sight.WatchedSeconds))
	ew.printf("ACCOUNT\tHEARD\n")
	for _, a := range sight.Accounts {
		heard := "yes"
		if !a.Heard {
			heard = "no: the system account does not import its $JS.API.CONSUMER.MSG.NEXT.> (docs/pulls.md gives the step)"
		}
		ew.printf("%s\t%s\n", snapshot.AccountLabel(a.Account, a.AccountName), heard)
	}
	if sight.Dropped > 0 {
		ew.printf("%d pull requests not kept (the auditor fell behind): the pullers below may be incomplete\n", sight.Dropped)
	}
	any := false
	for _, s := range shards {
		if len(s.Pull.Pullers) > 0 {
			any = true
		}
	}
	if !any {
		return
	}
	ew.printf("\nSHARD\tPULLER\tIP\tSERVER\tPIN\tLAST PULL\n")
	for _, s := range shards {
		name := snapshot.AccountLabel(s.Account, s.AccountName) + " > " + s.Stream + " > " + s.Consumer
		for _, p := range s.Pull.Pullers {
			pin := "waits"
			if p.Holder {
				pin = "holds"
			}
			who := p.Name
			if who == "" {
				who = p.Process
			}
			ew.printf("%s\t%s\t%s\t%s\t%s\t%s\n", name, who, dash(p.IP), dash(p.Server), pin, p.LastSeen.UTC().Format(time.TimeOnly))
		}
	}
}

// seconds writes a duration in whole seconds, as the shard table shows it.
func seconds(s float64) string { return strconv.FormatFloat(math.Round(s), 'f', 0, 64) + "s" }
