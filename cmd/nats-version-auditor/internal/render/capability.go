package render

import (
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// What the system can use now, as check's and report's JSON and report's
// text show it: the lowest JetStream API level of each cluster and domain,
// and for each feature of the feature table whether every server there
// supports it.

// Feature is one feature, cluster by cluster and domain by domain.
type Feature struct {
	Feature  string    `json:"feature"`
	Title    string    `json:"title"`
	APILevel int       `json:"api_level"`
	Since    string    `json:"since"`
	Clusters []Support `json:"clusters"`
	Domains  []Support `json:"domains"`
}

// Support says whether every server of a cluster or domain supports
// a feature, and which hold it back.
type Support struct {
	Name       string   `json:"name"`
	Supported  bool     `json:"supported"`
	HeldBackBy []string `json:"held_back_by"`
	Unknown    []string `json:"unknown,omitempty"`
}

// APILevels is the api_levels block of check's and report's JSON: the
// lowest JetStream API level of each cluster and domain.
type APILevels struct {
	Clusters []auditor.LevelGroup `json:"clusters"`
	Domains  []auditor.LevelGroup `json:"domains"`
}

// capabilityOf is the api_levels and features blocks of r.
func capabilityOf(r *findings.Report) (APILevels, []Feature) {
	features := releases.FeatureLevels()
	c := auditor.CapabilitiesOf(r, features)
	levels := APILevels{Clusters: c.Clusters, Domains: c.Domains}
	out := []Feature{}
	for _, f := range features {
		out = append(out, Feature{Feature: f.Name, Title: f.Title, APILevel: f.Level, Since: f.Since.String(),
			Clusters: supportOf(c.Clusters, f.Name), Domains: supportOf(c.Domains, f.Name)})
	}
	return levels, out
}

// supportOf is the feature named name in every group.
func supportOf(gs []auditor.LevelGroup, name string) []Support {
	out := []Support{}
	for _, g := range gs {
		for _, fs := range g.Features {
			if fs.Feature == name {
				out = append(out, Support{Name: g.Name, Supported: fs.Supported, HeldBackBy: fs.HeldBackBy, Unknown: fs.Unknown})
			}
		}
	}
	return out
}

// writeCapabilityText prints the levels, features and limited assets of
// report's text. It takes the blocks rather than report's document so that
// the capability block stays below the documents that carry it.
func writeCapabilityText(ew *errWriter, levels APILevels, features []Feature, assets []auditor.AssetLevel) {
	ew.printf("\nJETSTREAM API LEVELS\tSERVERS\tMIN API LEVEL\tHELD BACK BY\n")
	for _, l := range levels.Clusters {
		ew.printf("cluster %s\t%d\t%s\t%s\n", l.Name, l.Servers, levelCell(l), dashList(l.HeldBy))
	}
	for _, l := range levels.Domains {
		ew.printf("domain %s\t%d\t%s\t%s\n", domainName(l.Name), l.Servers, levelCell(l), dashList(l.HeldBy))
	}
	if len(features) > 0 {
		ew.printf("\nFEATURE\tAPI LEVEL\tSINCE\tWHERE\tSUPPORTED\tHELD BACK BY\n")
		for _, f := range features {
			for _, where := range []struct {
				kind string
				s    []Support
			}{{"cluster", f.Clusters}, {"domain", f.Domains}} {
				for _, s := range where.s {
					name := s.Name
					if where.kind == "domain" {
						name = domainName(name)
					}
					held := dashList(s.HeldBackBy)
					if len(s.Unknown) > 0 {
						held += " (unknown: " + strings.Join(s.Unknown, ", ") + ")"
					}
					ew.printf("%s\t%d\t%s\t%s %s\t%s\t%s\n", f.Feature, f.APILevel, f.Since, where.kind, name, yesNo(s.Supported), held)
				}
			}
		}
	}
	var limited []auditor.AssetLevel
	for _, a := range assets {
		if len(a.Forbidden) > 0 {
			limited = append(limited, a)
		}
	}
	if len(limited) > 0 {
		ew.printf("\nASSET\tMIN API LEVEL\tHELD BACK BY\tFEATURES ITS PEERS FORBID\n")
		for i, a := range limited {
			if i == listed {
				ew.printf("... and %d more\t\t\t\n", len(limited)-listed)
				break
			}
			name := string(a.Kind) + " " + snapshot.AccountLabel(a.Account, a.AccountName) + " > " + a.Stream
			if a.Consumer != "" {
				name += " > " + a.Consumer
			}
			ew.printf("%s\t%s\t%s\t%s\n", name, levelText(a.MinLevel), dashList(a.HeldBy), strings.Join(a.Forbidden, ", "))
		}
	}
}

func levelCell(l auditor.LevelGroup) string {
	s := levelText(l.MinLevel)
	if !l.Complete {
		s += " (incomplete audit)"
	}
	return s
}

func domainName(d string) string {
	if d == "" {
		return "(none)"
	}
	return d
}
