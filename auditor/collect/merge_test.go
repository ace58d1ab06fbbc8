package collect

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// report is one server's JSZ line about an asset: its view of the leader
// and of the other peers, and the configured replicas.
type report struct {
	reporter, leader string
	replicas         []string
	configured       int
}

func page(account, stream string, consumer string, r report) *jszData {
	ci := &clusterInfo{Leader: r.leader}
	for _, p := range r.replicas {
		ci.Replicas = append(ci.Replicas, &replicaPeer{Name: p, Current: true})
	}
	cfg := configSummary{Replicas: r.configured}
	sd := jszStream{Name: stream, Cluster: ci, Config: streamConfig{configSummary: cfg}}
	if consumer != "" {
		sd = jszStream{Name: stream, Consumers: []jszConsumer{{Name: consumer, Cluster: ci, Config: consumerConfig{configSummary: cfg}}}}
	}
	return &jszData{AccountDetails: []jszAccount{{Name: account, Streams: []jszStream{sd}}}}
}

func TestMergeAssets(t *testing.T) {
	tests := []struct {
		name     string
		reports  []report
		leader   string
		peers    []string
		replicas int
	}{
		{"the leader's own word wins over a follower's stale view reported after it",
			[]report{{"n1", "n1", []string{"n2", "n3"}, 3}, {"n2", "n3", []string{"n1", "n3"}, 3}, {"n3", "n1", []string{"n1", "n2"}, 3}},
			"n1", []string{"n1", "n2", "n3"}, 3},
		{"a follower's word stands while the leader has not reported",
			[]report{{"n2", "n3", []string{"n1", "n3"}, 3}},
			"n3", []string{"n1", "n2", "n3"}, 3},
		{"peers from every reporter",
			[]report{{"n1", "n1", []string{"n2"}, 3}, {"n3", "n1", nil, 3}},
			"n1", []string{"n1", "n2", "n3"}, 3},
		{"replicas never below the peers seen",
			[]report{{"n1", "n1", []string{"n2", "n3"}, 1}},
			"n1", []string{"n1", "n2", "n3"}, 3},
		{"no leader",
			[]report{{"n1", "", []string{"n2", "n3"}, 3}},
			"", []string{"n1", "n2", "n3"}, 3},
	}
	for _, tt := range tests {
		for _, consumer := range []string{"", "C"} {
			t.Run(fmt.Sprintf("%s/consumer=%q", tt.name, consumer), func(t *testing.T) {
				m := newMerger()
				for _, r := range tt.reports {
					m.add(r.reporter, "", page("APP", "S", consumer, r))
				}
				assets := m.streams()
				if consumer != "" {
					assets = m.consumers()
				}
				if len(assets) != 1 {
					t.Fatalf("%d assets", len(assets))
				}
				a := assets[0]
				if a.Leader != tt.leader || !slices.Equal(a.Peers, tt.peers) || a.Replicas != tt.replicas {
					t.Errorf("leader %q peers %v R%d, want %q %v R%d", a.Leader, a.Peers, a.Replicas, tt.leader, tt.peers, tt.replicas)
				}
			})
		}
	}
}

// A consumer is built from its own reports alone: nothing of its stream's
// merged state (leader, peers, replicas, level) leaks into it.
func TestMergeConsumerOwnsItsFields(t *testing.T) {
	m := newMerger()
	stream := page("APP", "S", "", report{"n1", "n1", []string{"n2", "n3"}, 3})
	stream.AccountDetails[0].Streams[0].Config.RequiredLevel = 4
	stream.AccountDetails[0].Streams[0].Consumers = []jszConsumer{{Name: "C", Config: consumerConfig{configSummary: configSummary{Replicas: 1}}, Cluster: &clusterInfo{Leader: "n2"}}}
	m.add("n2", "hub", stream)
	c := m.consumers()
	want := snapshot.Asset{Kind: releases.KindConsumer, Domain: "hub", Account: "APP", Stream: "S", Consumer: "C", Leader: "n2", Peers: []string{"n2"}, Replicas: 1}
	if len(c) != 1 || fmt.Sprint(c[0]) != fmt.Sprint(want) {
		t.Errorf("consumer %+v, want %+v", c, want)
	}
}

func TestMergeNamesEveryServerOnce(t *testing.T) {
	m := newMerger()
	js := page("APP", "S", "", report{"n1", "n2", []string{"n2", "n3"}, 3})
	js.Meta = &metaClusterInfo{Name: "c1", Leader: "n4", Replicas: []*metaPeer{{Name: "n1"}, {Name: "n5"}}, Size: 5}
	if got := m.add("n1", "", js); !slices.Equal(got, []string{"n2", "n3", "n4", "n5"}) {
		t.Errorf("named %v", got)
	}
	g := m.metaGroups()
	if len(g) != 1 || g[0].Size != 5 || g[0].Leader != "n4" || !slices.Equal(g[0].Peers, []string{"n1", "n4", "n5"}) {
		t.Errorf("meta %+v", g)
	}
}

// TestMergeConfigs merges decoded replies: what each replica's copy of a
// config says is a union, a stream's durable sources come from the first
// copy that names them, and a consumer takes nothing from its stream's
// config.
func TestMergeConfigs(t *testing.T) {
	reply := func(streamConfig, consumerConfig string) *jszData {
		t.Helper()
		r, err := decodeJSZReply([]byte(`{"data":{"account_details":[{"name":"APP","stream_detail":[{"name":"S","config":` + streamConfig +
			`,"cluster":{"leader":"n1"},"consumer_detail":[{"name":"C","config":` + consumerConfig + `,"cluster":{"leader":"n1"}}]}]}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		return r.Data
	}
	m := newMerger()
	m.add("n1", "", reply(`null`, `{"ack_policy":"flow_control","num_replicas":1}`))
	m.add("n2", "", reply(`{"num_replicas":3,"mirror":{"name":"O","consumer":{}}}`, `{"num_replicas":3,"metadata":{"_nats.req.level":"2"}}`))
	m.add("n3", "", reply(`{"num_replicas":3,"allow_msg_ttl":true,"mirror":{"name":"O","consumer":{"name":"D"}},"metadata":{"_nats.req.level":"1"}}`, `null`))
	m.add("n1", "", reply(`{"mirror":{"name":"X","consumer":{"name":"Y"}}}`, `{}`))
	s, c := m.streams(), m.consumers()
	if len(s) != 1 || len(c) != 1 {
		t.Fatalf("%d streams, %d consumers", len(s), len(c))
	}
	if !s[0].Features.Has("durable_sourcing") || !s[0].Features.Has("msg_ttl") || s[0].Features.Has("ack_flow_control") {
		t.Errorf("stream features %v", s[0].Features.Names())
	}
	if want := []releases.DurableSource{{Stream: "O", Consumer: "D", Mirror: true}}; !slices.Equal(s[0].DurableSources, want) {
		t.Errorf("durable sources %+v, want %+v", s[0].DurableSources, want)
	}
	if s[0].Replicas != 3 || s[0].RequiredLevel != 1 {
		t.Errorf("stream R%d level %d, want R3 level 1", s[0].Replicas, s[0].RequiredLevel)
	}
	if !c[0].Features.Has("ack_flow_control") || c[0].Features.Has("msg_ttl") || c[0].DurableSources != nil {
		t.Errorf("consumer features %v, durable sources %+v", c[0].Features.Names(), c[0].DurableSources)
	}
	if c[0].Replicas != 3 || c[0].RequiredLevel != 2 {
		t.Errorf("consumer R%d level %d, want R3 level 2", c[0].Replicas, c[0].RequiredLevel)
	}
	if again := m.consumers(); fmt.Sprint(again) != fmt.Sprint(c) {
		t.Errorf("listed again: %+v, first %+v", again, c)
	}
}

// TestMergeSharesPeerSets: assets of the same peers share one list, capped
// at its length, and no two different lists meet in one key, however their
// names divide.
func TestMergeSharesPeerSets(t *testing.T) {
	m := newMerger()
	reports := map[string][]string{
		"C1": {"n1", "n2", "n3"},
		"C2": {"n3", "n2", "n1"}, // the same set, listed otherwise
		"C3": {"ab", "c"},
		"C4": {"a", "bc"},
		"C5": {"n1", "n2"},
	}
	for _, name := range slices.Sorted(maps.Keys(reports)) {
		peers := reports[name]
		js := page("APP", "S", name, report{peers[0], peers[0], peers[1:], len(peers)})
		m.add(peers[0], "", js)
	}
	byName := map[string]snapshot.Asset{}
	for _, c := range m.consumers() {
		byName[c.Consumer] = c
	}
	same := func(a, b string) bool { return &byName[a].Peers[0] == &byName[b].Peers[0] }
	if !same("C1", "C2") {
		t.Errorf("C1 %v and C2 %v do not share their peers", byName["C1"].Peers, byName["C2"].Peers)
	}
	for _, pair := range [][2]string{{"C3", "C4"}, {"C1", "C5"}} {
		if same(pair[0], pair[1]) {
			t.Errorf("%s %v and %s %v share one list", pair[0], byName[pair[0]].Peers, pair[1], byName[pair[1]].Peers)
		}
	}
	for name, want := range map[string][]string{"C1": {"n1", "n2", "n3"}, "C3": {"ab", "c"}, "C4": {"a", "bc"}, "C5": {"n1", "n2"}} {
		if got := byName[name].Peers; !slices.Equal(got, want) || cap(got) != len(got) {
			t.Errorf("%s peers %v (cap %d), want %v", name, got, cap(got), want)
		}
	}
	// An append to one asset's peers leaves the other's alone.
	grown := append(byName["C1"].Peers, "n4")
	if !slices.Equal(byName["C2"].Peers, []string{"n1", "n2", "n3"}) || len(grown) != 4 {
		t.Errorf("after an append to C1's peers, C2's are %v", byName["C2"].Peers)
	}
}

// TestMergeObservation: the leader's own report decides who is listed and
// who is behind; a peer that reported the asset runs it; a follower's
// stale list adds no absent peer.
func TestMergeObservation(t *testing.T) {
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	leaderPage := func(leader string, replicas ...*replicaPeer) *jszData {
		return &jszData{AccountDetails: []jszAccount{{Name: "APP", Streams: []jszStream{{Name: "S", Created: created,
			Cluster: &clusterInfo{Leader: leader, Replicas: replicas}}}}}}
	}
	tests := []struct {
		name    string
		pages   map[string]*jszData // by reporter, added in name order
		absent  []string
		behind  []snapshot.ReplicaLag
		noneObs bool
	}{
		{"every peer reports it", map[string]*jszData{
			"n1": leaderPage("n1", &replicaPeer{Name: "n2", Current: true}, &replicaPeer{Name: "n3", Current: true}),
			"n2": page("APP", "S", "", report{"n2", "n1", []string{"n1", "n3"}, 3}),
			"n3": page("APP", "S", "", report{"n3", "n1", []string{"n1", "n2"}, 3}),
		}, nil, nil, true},
		{"n3 does not report it", map[string]*jszData{
			"n1": leaderPage("n1", &replicaPeer{Name: "n2", Current: true}, &replicaPeer{Name: "n3", Current: false, Active: int64(time.Minute)}),
			"n2": page("APP", "S", "", report{"n2", "n1", []string{"n1", "n3"}, 3}),
		}, []string{"n3"}, []snapshot.ReplicaLag{{Server: "n3", Active: time.Minute}}, false},
		{"without the leader's report nothing is judged", map[string]*jszData{
			"n2": page("APP", "S", "", report{"n2", "n1", []string{"n1", "n3"}, 3}),
		}, nil, nil, true},
		{"a follower's stale list names n4, the leader's does not", map[string]*jszData{
			"n1": leaderPage("n1", &replicaPeer{Name: "n2", Current: true}, &replicaPeer{Name: "n3", Current: true}),
			"n2": page("APP", "S", "", report{"n2", "n1", []string{"n1", "n4"}, 3}),
			"n3": page("APP", "S", "", report{"n3", "n1", []string{"n1", "n2"}, 3}),
		}, nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMerger()
			for _, r := range slices.Sorted(maps.Keys(tc.pages)) {
				m.add(r, "", tc.pages[r])
			}
			a := m.streams()[0]
			if tc.noneObs {
				if a.Observed != nil {
					t.Fatalf("observed %+v", a.Observed)
				}
				return
			}
			if a.Observed == nil {
				t.Fatal("nothing observed")
			}
			if !slices.Equal(a.Observed.Absent, tc.absent) || !slices.Equal(a.Observed.Behind, tc.behind) || !a.Observed.Created.Equal(created) || a.Observed.Listed != 3 {
				t.Errorf("observed %+v; want absent %v, behind %v, created %s", a.Observed, tc.absent, tc.behind, created)
			}
		})
	}
}
