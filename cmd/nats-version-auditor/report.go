package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

type reportCommand struct {
	cmd    *kingpin.CmdClause
	pol    policyFlags
	format string
}

func addReportCommand(app *kingpin.Application) *reportCommand {
	c := &reportCommand{}
	c.cmd = app.Command("report", "Print the inventory one audit saw: servers, clusters and leafnode links.")
	addFloorFlag(c.cmd, &c.pol)
	c.cmd.Flag("format", "Output format").Default("text").EnumVar(&c.format, "text", "json")
	return c
}

type reportOutput struct {
	Status    auditor.Severity        `json:"status"`
	Floor     string                  `json:"floor"`
	Servers   []auditor.ServerReport  `json:"servers"`
	Clusters  []auditor.ClusterReport `json:"clusters"`
	Leafnodes []leafOutput            `json:"leafnodes"`
	Audit     auditInfo               `json:"audit"`
}

type leafOutput struct {
	Server  string `json:"server"`
	Peer    string `json:"peer"`
	Account string `json:"account"`
	Audited bool   `json:"audited"`
}

func (c *reportCommand) run(ctx context.Context, conn *connFlags, logger *slog.Logger, stdout, stderr io.Writer) int {
	pol, err := c.pol.policy()
	if err != nil {
		return fail(stderr, err)
	}
	r, err := audit(ctx, conn, pol, logger)
	if err != nil {
		return fail(stderr, err)
	}
	out := reportOf(r)
	if c.format == "json" {
		err = writeJSON(stdout, out)
	} else {
		err = writeReportText(stdout, out, r)
	}
	if err != nil {
		return fail(stderr, fmt.Errorf("write output: %w", err))
	}
	return exitOK
}

// reportOf is the inventory `report` prints.
func reportOf(r *auditor.Report) reportOutput {
	audited := map[string]bool{}
	for _, s := range r.Servers {
		audited[s.Name] = true
	}
	out := reportOutput{Status: r.Status, Floor: r.Floor, Servers: nonNil(r.Servers), Clusters: nonNil(r.Clusters),
		Leafnodes: []leafOutput{}, Audit: newAuditInfo(r)}
	for _, l := range r.Leafnodes {
		out.Leafnodes = append(out.Leafnodes, leafOutput{Server: l.Server, Peer: l.Peer, Account: l.Account, Audited: audited[l.Peer]})
	}
	return out
}

func writeReportText(w io.Writer, out reportOutput, r *auditor.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ew := &errWriter{w: tw}
	ew.printf("%s: %s\n\n", out.Status, summary(r))
	ew.printf("SERVER\tCLUSTER\tDOMAIN\tVERSION\tAPI LEVEL\tVERDICT\tSTREAMS LED\tCONSUMERS LED\n")
	for _, s := range out.Servers {
		ew.printf("%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\n", s.Name, dash(s.Cluster), dash(s.Domain), s.Version, s.APILevel, s.Verdict, s.StreamsLed, s.ConsumersLed)
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
			ew.printf("%s\t%s\t%s\t%t\n", l.Server, l.Peer, l.Account, l.Audited)
		}
	}
	if ew.err != nil {
		return ew.err
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
