package auditor

import (
	"fmt"
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// testFeatures stand for rows of the feature table.
var testFeatures = []releases.FeatureLevel{
	{Name: "msg_ttl", Kind: releases.KindStream, Level: 1, Since: version.Must("2.11.0")},
	{Name: "priority_prioritized", Kind: releases.KindConsumer, Level: 1, Since: version.Must("2.12.0")},
	{Name: "msg_counter", Kind: releases.KindStream, Level: 2, Since: version.Must("2.12.0")},
	{Name: "ack_flow_control", Kind: releases.KindConsumer, Level: 4, Since: version.Must("2.14.0")},
	{Name: "fast_batch", Kind: releases.KindStream, Level: 4, Since: version.Must("2.14.0")},
}

func support(g LevelGroup) []string {
	var out []string
	for _, f := range g.Features {
		s := fmt.Sprintf("%s:%v%v", f.Feature, f.Supported, f.HeldBackBy)
		if len(f.Unknown) > 0 {
			s += fmt.Sprintf("?%v", f.Unknown)
		}
		out = append(out, s)
	}
	return out
}

func TestCapabilities(t *testing.T) {
	snap := &snapshot.Snapshot{
		Servers: []snapshot.Server{
			srv("n1", "east", "2.14.0", 4), srv("n2", "east", "2.14.0", 4), srv("n3", "east", "2.12.15", 3),
			srv("w1", "west", "2.11.12", 1), srv("w2", "west", "2.15.3", 5),
			{Name: "core", Cluster: "west", Version: "2.10.27", Parsed: version.Must("2.10.27")}, // no JetStream: left out
			func() snapshot.Server { s := srv("l1", "", "2.10.27", 0); s.Domain = "edge"; return s }(),
		},
		ExpectedCount: 7,
		ExpectedNames: map[string][]string{"n9": {"n1"}},
		// n9 last ran in west: east is complete, west and the domain not.
		LastSeen: map[string]snapshot.Server{"n9": srv("n9", "west", "2.12.15", 3)},
		Streams:  []snapshot.Asset{stream("S", "n1", "n1", "n2", "n3"), stream("W", "w2", "w2")},
		Consumers: []snapshot.Asset{
			consumer("S", "C", "n1", "n1", "n2"),
			func() snapshot.Asset { c := consumer("S", "GONE", "n1", "n1", "n9"); c.Replicas = 3; return c }(),
		},
	}
	r := Evaluate(snap, Policy{Floor: version.DefaultFloor})
	c := CapabilitiesOf(r, testFeatures)
	// The report's clusters carry the same lowest level.
	for i, want := range []int{3, 1} {
		if got := r.Clusters[i].MinAPILevel; got == nil || *got != want || r.Clusters[i].Name != c.Clusters[i].Name {
			t.Errorf("cluster %s: MinAPILevel %v, want %d", r.Clusters[i].Name, got, want)
		}
	}

	type want struct {
		name     string
		min      int
		heldBy   []string
		complete bool
		support  []string
	}
	check := func(what string, got []LevelGroup, wants []want) {
		t.Helper()
		if len(got) != len(wants) {
			t.Fatalf("%s: %+v", what, got)
		}
		for i, w := range wants {
			g := got[i]
			if g.Name != w.name || g.MinLevel != w.min || !slices.Equal(g.HeldBy, w.heldBy) || g.Complete != w.complete {
				t.Errorf("%s %q: min %d held by %v complete %v; want %+v", what, g.Name, g.MinLevel, g.HeldBy, g.Complete, w)
			}
			if s := support(g); !slices.Equal(s, w.support) {
				t.Errorf("%s %q: features\n  %q\nwant\n  %q", what, g.Name, s, w.support)
			}
		}
	}
	check("clusters", c.Clusters, []want{
		{"east", 3, []string{"n3"}, true, []string{"msg_ttl:true[]", "priority_prioritized:true[]", "msg_counter:true[]", "ack_flow_control:false[n3]", "fast_batch:false[n3]"}},
		// 2.11.12 reports level 1 but the prioritized policy came in 2.12.
		{"west", 1, []string{"w1"}, false, []string{"msg_ttl:true[]", "priority_prioritized:false[w1]", "msg_counter:false[w1]", "ack_flow_control:false[w1]", "fast_batch:false[w1]"}},
	})
	check("domains", c.Domains, []want{
		{"", 1, []string{"w1"}, false, []string{"msg_ttl:true[]", "priority_prioritized:false[w1]", "msg_counter:false[w1]", "ack_flow_control:false[n3 w1]", "fast_batch:false[n3 w1]"}},
		{"edge", 0, []string{}, false, []string{"msg_ttl:false[l1]", "priority_prioritized:false[l1]", "msg_counter:false[l1]", "ack_flow_control:false[l1]", "fast_batch:false[l1]"}},
	})
	var assets []string
	for _, a := range AssetLevels(r, testFeatures) {
		assets = append(assets, fmt.Sprintf("%s/%s %d %v %v %v", a.Stream, a.Consumer, a.MinLevel, a.HeldBy, a.Complete, a.Forbidden))
	}
	wantAssets := []string{
		"S/ 3 [n3] true [fast_batch]",
		"W/ 5 [] true []",
		"S/C 4 [] true []",
		"S/GONE 4 [] false []",
	}
	if !slices.Equal(assets, wantAssets) {
		t.Errorf("assets\n  %q\nwant\n  %q", assets, wantAssets)
	}
}

func TestCapabilitiesOfAWhatIf(t *testing.T) {
	snap := &snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3}
	w := assume(t, snap, Policy{}, "n3=2.16.0")
	c := CapabilitiesOf(w.After, testFeatures)
	g := c.Clusters[0]
	if g.MinLevel != releases.LevelUnknown || !g.Complete {
		t.Errorf("min %d complete %v", g.MinLevel, g.Complete)
	}
	if l := w.After.Clusters[0].MinAPILevel; l == nil || *l != releases.LevelUnknown {
		t.Errorf("the would-be report's cluster level %v, want unknown", l)
	}
	if got := support(g)[4]; got != "fast_batch:false[]?[n3]" {
		t.Errorf("fast_batch: %s", got)
	}
	// As it is: all at level 4, nothing held back.
	c = CapabilitiesOf(w.Before, testFeatures)
	if g := c.Clusters[0]; g.MinLevel != 4 || len(g.HeldBy) != 0 || !g.Complete || !g.Features[4].Supported {
		t.Errorf("%+v", g)
	}
}

// TestAssetLevelsOrder: the assets' levels come streams first, each kind by
// domain, account, stream and consumer, whatever order the snapshot lists
// them in (the order the replies came).
func TestAssetLevelsOrder(t *testing.T) {
	in := func(domain, account string, a snapshot.Asset) snapshot.Asset {
		a.Domain, a.Account = domain, account
		return a
	}
	streams := []snapshot.Asset{
		in("", "B", stream("S", "n1", "n1")), in("hub", "A", stream("S", "n1", "n1")),
		in("", "A", stream("T", "n1", "n1")), in("", "A", stream("S", "n1", "n1")),
	}
	consumers := []snapshot.Asset{
		in("", "A", consumer("T", "C", "n1", "n1")), in("", "A", consumer("S", "D", "n1", "n1")),
		in("hub", "A", consumer("S", "C", "n1", "n1")), in("", "A", consumer("S", "C", "n1", "n1")),
		in("", "B", consumer("S", "C", "n1", "n1")),
	}
	want := []string{
		"stream /A/S/", "stream /A/T/", "stream /B/S/", "stream hub/A/S/",
		"consumer /A/S/C", "consumer /A/S/D", "consumer /A/T/C", "consumer /B/S/C", "consumer hub/A/S/C",
	}
	for _, reversed := range []bool{false, true} {
		s, c := slices.Clone(streams), slices.Clone(consumers)
		if reversed {
			slices.Reverse(s)
			slices.Reverse(c)
		}
		r := Evaluate(&snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3, Streams: s, Consumers: c}, Policy{Floor: version.DefaultFloor})
		var got []string
		for _, a := range AssetLevels(r, testFeatures) {
			got = append(got, fmt.Sprintf("%s %s/%s/%s/%s", a.Kind, a.Domain, a.Account, a.Stream, a.Consumer))
		}
		if !slices.Equal(got, want) {
			t.Errorf("reversed %v:\n  %q\nwant\n  %q", reversed, got, want)
		}
	}
}
