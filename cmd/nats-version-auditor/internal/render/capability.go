package render

import (
	"slices"
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

// IsZero reports whether l has no cluster and no domain: the audit saw no
// JetStream server, and the documents leave the block out.
func (l APILevels) IsZero() bool { return len(l.Clusters) == 0 && len(l.Domains) == 0 }

// capabilityOf is the api_levels and features blocks of r: both empty when
// r saw no JetStream server (every feature's support would be empty).
func capabilityOf(r *findings.Report) (APILevels, []Feature) {
	features := releases.FeatureLevels()
	c := auditor.CapabilitiesOf(r, features)
	levels := APILevels{Clusters: c.Clusters, Domains: c.Domains}
	if levels.IsZero() {
		return APILevels{}, nil
	}
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

// sameServers maps each cluster whose JetStream servers are exactly those
// of a domain to that domain: report's text shows a level or a feature
// once for the two where they agree. It reads the servers as
// auditor.CapabilitiesOf groups them.
func sameServers(r *findings.Report) map[string]string {
	servers := make([]snapshot.Server, 0, len(r.Servers))
	if r.Snapshot != nil && len(r.Snapshot.Servers) > 0 {
		servers = append(servers, r.Snapshot.Servers...)
	} else {
		for _, s := range r.Servers {
			servers = append(servers, s.Server)
		}
	}
	clusters, domains := map[string][]string{}, map[string][]string{}
	for _, s := range servers {
		if !s.JetStream {
			continue
		}
		if s.Cluster != "" {
			clusters[s.Cluster] = append(clusters[s.Cluster], s.Name)
		}
		domains[s.Domain] = append(domains[s.Domain], s.Name)
	}
	same := map[string]string{}
	for c, names := range clusters {
		for d, in := range domains {
			if len(in) == len(names) && slices.Equal(slices.Sorted(slices.Values(in)), slices.Sorted(slices.Values(names))) {
				same[c] = d
			}
		}
	}
	return same
}

// writeCapabilityText prints the levels, features and limited assets of
// report's text; a cluster that same maps to a domain shares a row with it
// where the two say the same. It takes the blocks rather than report's
// document so that the capability block stays below the documents that
// carry it.
func writeCapabilityText(ew *errWriter, levels APILevels, features []Feature, assets []auditor.AssetLevel, same map[string]string) {
	if !levels.IsZero() {
		ew.printf("\nJETSTREAM API LEVELS\tSERVERS\tMIN API LEVEL\tHELD BACK BY\n")
		shared := map[string]bool{}
		for _, l := range levels.Clusters {
			where := "cluster " + l.Name
			if d, ok := same[l.Name]; ok {
				if i := slices.IndexFunc(levels.Domains, func(g auditor.LevelGroup) bool { return g.Name == d }); i >= 0 && sameLevel(l, levels.Domains[i]) {
					where += ", domain " + domainName(d)
					shared[d] = true
				}
			}
			ew.printf("%s\t%d\t%s\t%s\n", where, l.Servers, levelCell(l), dashList(l.HeldBy))
		}
		for _, l := range levels.Domains {
			if !shared[l.Name] {
				ew.printf("domain %s\t%d\t%s\t%s\n", domainName(l.Name), l.Servers, levelCell(l), dashList(l.HeldBy))
			}
		}
	}
	if len(features) > 0 {
		ew.printf("\nFEATURE\tAPI LEVEL\tSINCE\tWHERE\tSUPPORTED\tHELD BACK BY\n")
		for _, f := range features {
			row := func(where string, s Support) {
				held := dashList(s.HeldBackBy)
				if len(s.Unknown) > 0 {
					held += " (unknown: " + strings.Join(s.Unknown, ", ") + ")"
				}
				ew.printf("%s\t%d\t%s\t%s\t%s\t%s\n", f.Feature, f.APILevel, f.Since, where, yesNo(s.Supported), held)
			}
			shared := map[string]bool{}
			for _, c := range f.Clusters {
				where := "cluster " + c.Name
				if d, ok := same[c.Name]; ok {
					if i := slices.IndexFunc(f.Domains, func(s Support) bool { return s.Name == d }); i >= 0 && sameSupport(c, f.Domains[i]) {
						where += ", domain " + domainName(d)
						shared[d] = true
					}
				}
				row(where, c)
			}
			for _, d := range f.Domains {
				if !shared[d.Name] {
					row("domain "+domainName(d.Name), d)
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

// sameLevel reports whether two groups' rows of the levels table say the
// same.
func sameLevel(a, b auditor.LevelGroup) bool {
	return a.Servers == b.Servers && a.MinLevel == b.MinLevel && a.Complete == b.Complete && slices.Equal(a.HeldBy, b.HeldBy)
}

// sameSupport reports whether a feature's rows of two groups say the same.
func sameSupport(a, b Support) bool {
	return a.Supported == b.Supported && slices.Equal(a.HeldBackBy, b.HeldBackBy) && slices.Equal(a.Unknown, b.Unknown)
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
