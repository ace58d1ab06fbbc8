package findings

// ForServer narrows a report to what concerns one server: its own entry,
// the findings it owns (see Owner), its leafnode links, and its cluster when
// it owns that cluster's findings. The
// status is that of the remaining findings. Audits of every server, each
// narrowed to itself, add up to the audit of the whole system.
func (r *Report) ForServer(name string) *Report {
	out := *r
	out.Servers, out.Findings, out.Leafnodes, out.Clusters = nil, nil, nil, nil
	cluster := ""
	for _, s := range r.Servers {
		if s.Name == name {
			out.Servers = append(out.Servers, s)
			cluster = s.Cluster
		}
	}
	// A cluster belongs to the first-named of its servers that answered, as
	// a mixed-versions finding does: its sidecar alone exports it.
	if cluster != "" && r.Owner(Finding{Code: ClusterMixedVersions, Cluster: cluster}) == name {
		for _, c := range r.Clusters {
			if c.Name == cluster {
				out.Clusters = append(out.Clusters, c)
			}
		}
	}
	for _, l := range r.Leafnodes {
		if l.Server == name {
			out.Leafnodes = append(out.Leafnodes, l)
		}
	}
	for _, f := range r.Findings {
		if owner := r.Owner(f); owner == "" || owner == name {
			out.Findings = append(out.Findings, f)
		}
	}
	out.Status = StatusOf(out.Findings)
	return &out
}
