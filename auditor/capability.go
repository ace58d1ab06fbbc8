package auditor

import (
	"cmp"
	"slices"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Capabilities is what the system can use now: the lowest JetStream API
// level of each cluster and each domain, from the levels the servers
// report, and which features those levels allow.
type Capabilities struct {
	Clusters []LevelGroup `json:"clusters"`
	Domains  []LevelGroup `json:"domains"`
}

// LevelGroup is the lowest API level among the JetStream servers of a
// cluster or a domain, and the features it allows.
type LevelGroup struct {
	Name    string `json:"name"`
	Servers int    `json:"servers"`
	// MinLevel is LevelUnknown when some server's level is not known.
	MinLevel int `json:"min_api_level"`
	// HeldBy are the servers at MinLevel when others are above it.
	HeldBy []string `json:"held_back_by"`
	// Complete is false when a server of the group may not have answered:
	// its level could be lower.
	Complete bool `json:"complete"`
	// Features are the features of the table, in order of level; JSON
	// shows them feature by feature instead.
	Features []FeatureSupport `json:"-"`
}

// FeatureSupport says whether every server of a group supports a feature.
type FeatureSupport struct {
	Feature string `json:"feature"`
	Level   int    `json:"api_level"`
	// Supported is true when every server that answered supports it.
	Supported bool `json:"supported"`
	// HeldBackBy are the servers that do not; Unknown those whose level is
	// not known.
	HeldBackBy []string `json:"held_back_by"`
	Unknown    []string `json:"unknown,omitempty"`
}

// AssetLevel is the lowest API level among the peers of one asset's group.
type AssetLevel struct {
	Kind        releases.AssetKind `json:"kind"`
	Domain      string             `json:"domain,omitempty"`
	Account     string             `json:"account"`
	AccountName string             `json:"account_name,omitempty"`
	Stream      string             `json:"stream"`
	Consumer    string             `json:"consumer,omitempty"`
	MinLevel    int                `json:"min_api_level"`
	HeldBy      []string           `json:"held_back_by"`
	// RequiredLevel is the asset's _nats.req.level.
	RequiredLevel int `json:"required_level"`
	// Complete is false when a peer did not answer.
	Complete bool `json:"complete"`
	// Forbidden are the features of the asset's kind that some peer does
	// not support.
	Forbidden []string `json:"forbidden"`
}

// supports reports whether s supports f: 1 yes, 0 no, -1 not known.
func supports(s snapshot.Server, f releases.FeatureLevel) int {
	if s.APILevel == releases.LevelUnknown {
		return -1
	}
	if s.APILevel < f.Level {
		return 0
	}
	if !s.Parsed.IsZero() && s.Parsed.Before(f.Since) {
		return 0
	}
	return 1
}

// CapabilitiesOf computes what the system of report r can use, feature by
// feature of features: the levels of its clusters and domains (AssetLevels
// gives those of each asset). Servers without JetStream are left out: they host
// no asset and decode no assignment. It reads the census of the snapshot,
// which a report narrowed to one server (Report.ForServer) keeps whole.
func CapabilitiesOf(r *findings.Report, features []releases.FeatureLevel) *Capabilities {
	c := &Capabilities{Clusters: []LevelGroup{}, Domains: []LevelGroup{}}
	clusters, domains := map[string][]snapshot.Server{}, map[string][]snapshot.Server{}
	for _, s := range census(r) {
		if !s.JetStream {
			continue
		}
		if s.Cluster != "" {
			clusters[s.Cluster] = append(clusters[s.Cluster], s)
		}
		domains[s.Domain] = append(domains[s.Domain], s)
	}
	incomplete, incompleteCluster := false, map[string]bool{}
	for _, f := range r.Findings {
		if k, _ := findings.Info(f.Code); k.Incomplete {
			incomplete = true
			incompleteCluster[f.Cluster] = true
		}
	}
	for _, name := range sortedKeys(clusters) {
		g := levelGroup(name, clusters[name], features)
		g.Complete = !incompleteCluster[name] && !incompleteCluster[""]
		c.Clusters = append(c.Clusters, g)
	}
	for _, name := range sortedKeys(domains) {
		g := levelGroup(name, domains[name], features)
		g.Complete = !incomplete
		c.Domains = append(c.Domains, g)
	}
	return c
}

func census(r *findings.Report) []snapshot.Server {
	if r.Snapshot != nil {
		return r.Snapshot.Servers
	}
	out := make([]snapshot.Server, len(r.Servers))
	for i, s := range r.Servers {
		out[i] = s.Server
	}
	return out
}

// AssetLevels is the lowest API level of each stream's and consumer's RAFT
// group of r, with the features of its kind that some peer forbids: streams
// first, each kind by domain, account, stream and consumer. The snapshot
// lists its assets as the replies came, which differs between two audits
// of the same system.
func AssetLevels(r *findings.Report, features []releases.FeatureLevel) []AssetLevel {
	out := []AssetLevel{}
	if r.Snapshot == nil {
		return out
	}
	byName := map[string]snapshot.Server{}
	for _, s := range census(r) {
		if s.JetStream {
			byName[s.Name] = s
		}
	}
	for _, assets := range [][]snapshot.Asset{r.Snapshot.Streams, r.Snapshot.Consumers} {
		for _, a := range sortedAssets(assets) {
			var peers []snapshot.Server
			complete := len(a.Peers) >= a.Replicas
			for _, n := range a.Peers {
				if s, ok := byName[n]; ok {
					peers = append(peers, s)
				} else {
					complete = false
				}
			}
			g := levelGroup("", peers, nil)
			al := AssetLevel{Kind: a.Kind, Domain: a.Domain, Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer,
				MinLevel: g.MinLevel, HeldBy: g.HeldBy, RequiredLevel: a.RequiredLevel, Complete: complete, Forbidden: []string{}}
			for _, f := range features {
				if f.Kind != "" && f.Kind != a.Kind {
					continue
				}
				for _, s := range peers {
					if supports(s, f) != 1 {
						al.Forbidden = append(al.Forbidden, f.Name)
						break
					}
				}
			}
			out = append(out, al)
		}
	}
	return out
}

// sortedAssets orders assets by domain, account, stream and consumer,
// through pointers: an Asset is a large struct to move.
func sortedAssets(assets []snapshot.Asset) []*snapshot.Asset {
	out := make([]*snapshot.Asset, len(assets))
	for i := range assets {
		out[i] = &assets[i]
	}
	slices.SortFunc(out, func(a, b *snapshot.Asset) int {
		return cmp.Or(cmp.Compare(a.Domain, b.Domain), cmp.Compare(a.Account, b.Account),
			cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Consumer, b.Consumer))
	})
	return out
}

// minAPILevel returns the lowest API level among servers (LevelUnknown
// when any one's is not known) and the highest, LevelUnknown for none.
func minAPILevel(servers []snapshot.Server) (lowest, highest int) {
	lowest, highest = releases.LevelUnknown, releases.LevelUnknown
	for _, s := range servers {
		if s.APILevel == releases.LevelUnknown {
			return releases.LevelUnknown, releases.LevelUnknown
		}
		if lowest == releases.LevelUnknown || s.APILevel < lowest {
			lowest = s.APILevel
		}
		highest = max(highest, s.APILevel)
	}
	return lowest, highest
}

// setClusterLevels sets each cluster's MinAPILevel from its JetStream
// servers.
func setClusterLevels(clusters []findings.ClusterReport, servers []findings.ServerReport) {
	for i := range clusters {
		c := &clusters[i]
		var js []snapshot.Server
		for _, s := range servers {
			if s.Cluster == c.Name && s.JetStream {
				js = append(js, s.Server)
			}
		}
		c.MinAPILevel = nil
		if len(js) > 0 {
			lowest, _ := minAPILevel(js)
			c.MinAPILevel = &lowest
		}
	}
}

func levelGroup(name string, servers []snapshot.Server, features []releases.FeatureLevel) LevelGroup {
	g := LevelGroup{Name: name, Servers: len(servers), HeldBy: []string{}, Features: []FeatureSupport{}}
	var maxLevel int
	g.MinLevel, maxLevel = minAPILevel(servers)
	if g.MinLevel != releases.LevelUnknown && g.MinLevel < maxLevel {
		for _, s := range servers {
			if s.APILevel == g.MinLevel {
				g.HeldBy = append(g.HeldBy, s.Name)
			}
		}
		slices.Sort(g.HeldBy)
	}
	for _, f := range features {
		fs := FeatureSupport{Feature: f.Name, Level: f.Level, HeldBackBy: []string{}}
		for _, s := range servers {
			switch supports(s, f) {
			case 0:
				fs.HeldBackBy = append(fs.HeldBackBy, s.Name)
			case -1:
				fs.Unknown = append(fs.Unknown, s.Name)
			}
		}
		slices.Sort(fs.HeldBackBy)
		slices.Sort(fs.Unknown)
		fs.Supported = len(servers) > 0 && len(fs.HeldBackBy) == 0 && len(fs.Unknown) == 0
		g.Features = append(g.Features, fs)
	}
	slices.SortStableFunc(g.Features, func(a, b FeatureSupport) int { return cmp.Compare(a.Level, b.Level) })
	return g
}
