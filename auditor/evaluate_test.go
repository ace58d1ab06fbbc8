package auditor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func srv(name, cluster, version string, level int) Server {
	return Server{ID: "ID-" + name, Name: name, Cluster: cluster, Version: version, JetStream: true, APILevel: level}
}

func consumer(stream, name, leader string, peers ...string) Asset {
	return Asset{Kind: KindConsumer, Account: "APP", Stream: stream, Consumer: name, Leader: leader, Peers: peers, Replicas: len(peers)}
}

func stream(name, leader string, peers ...string) Asset {
	return Asset{Kind: KindStream, Account: "APP", Stream: name, Leader: leader, Peers: peers, Replicas: len(peers)}
}

// cluster is a healthy 2.14/2.14/2.15 cluster.
func cluster() []Server {
	return []Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.14.0", 4)}
}

// restarted is cluster() where n3 came back 10 s ago counting n servers,
// while n1 and n2 (up for an hour) count one more.
func restarted(n int) []Server {
	s := cluster()
	for i := range s {
		s[i].Uptime, s[i].ActiveServers = time.Hour, 4
	}
	s[2].Uptime, s[2].ActiveServers = 10*time.Second, n
	return s
}

// brief renders a finding as CODE(server,peer,account/stream/consumer).
func brief(f Finding) string {
	return fmt.Sprintf("%s(%s,%s,%s/%s/%s)", f.Code, f.Server, f.Peer, f.Account, f.Stream, f.Consumer)
}

func TestEvaluate(t *testing.T) {
	mixed := cluster()
	mixed[2] = srv("n3", "c1", "2.12.15", 3)

	tests := []struct {
		name   string
		snap   Snapshot
		policy Policy
		want   []string
		status Severity
	}{
		{
			name:   "all at the floor",
			snap:   Snapshot{Servers: cluster(), Consumers: []Asset{consumer("S", "C", "n1", "n1", "n2", "n3")}, ExpectedCount: 3},
			want:   nil,
			status: OK,
		},
		{
			name: "consumer led by a server below the floor",
			snap: Snapshot{Servers: mixed, Consumers: []Asset{
				consumer("S", "C", "n3", "n1", "n2", "n3"),
				consumer("S", "R1", "n1", "n1"),
			}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: Critical,
		},
		{
			name: "follower below the floor under a good leader",
			snap: Snapshot{Servers: mixed, Consumers: []Asset{consumer("S", "C", "n1", "n1", "n2", "n3")}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n3,n1,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: Critical,
		},
		{
			name:   "replicated consumer without a leader",
			snap:   Snapshot{Servers: cluster(), Consumers: []Asset{consumer("S", "C", "", "n1", "n2", "n3")}},
			want:   []string{"CONSUMER_NO_LEADER(,,APP/S/C)"},
			status: Warning,
		},
		{
			name: "leaderless consumer with a follower below the floor",
			snap: Snapshot{Servers: mixed, Consumers: []Asset{consumer("S", "C", "", "n1", "n3")}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n3,,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"CONSUMER_NO_LEADER(,,APP/S/C)",
			},
			status: Critical,
		},
		{
			name: "stream and meta leader below the floor",
			snap: Snapshot{Servers: mixed, Streams: []Asset{stream("S", "n3", "n1", "n2", "n3")},
				Meta: []MetaGroup{{Cluster: "c1", Leader: "n3", Peers: []string{"n1", "n2", "n3"}}}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"STREAM_LEADER_BELOW_FLOOR(n3,,APP/S/)",
				"META_LEADER_BELOW_FLOOR(n3,,//)",
			},
			status: Critical,
		},
		{
			name: "asset needs an API level a peer lacks",
			snap: Snapshot{Servers: []Server{srv("n1", "c1", "2.15.3", 5), srv("n2", "c1", "2.15.3", 5), srv("old", "c1", "2.15.0", 3)},
				Streams: []Asset{
					func() Asset { a := stream("FAST", "n1", "n1", "n2", "old"); a.RequiredLevel = 4; return a }(),
					func() Asset { a := stream("TTL", "n1", "n1", "n2", "old"); a.RequiredLevel = 1; return a }(),
				}},
			want:   []string{"ASSET_API_LEVEL_UNSUPPORTED(old,,APP/FAST/)", "CLUSTER_MIXED_VERSIONS(,,//)"},
			status: Critical,
		},
		{
			name: "leafnode peer outside the system account",
			snap: Snapshot{Servers: []Server{srv("hub", "", "2.14.0", 4), srv("leaf-sys", "", "2.15.3", 5)},
				Leafnodes: []LeafLink{
					{Server: "hub", Peer: "leaf-app", Account: "APP"},
					{Server: "hub", Peer: "leaf-app", Account: "APP"},
					{Server: "hub", Peer: "leaf-sys", Account: "SYS"},
					{Server: "leaf-sys", Peer: "hub", Account: "SYS"},
				}},
			want:   []string{"LEAFNODE_UNAUDITED(hub,leaf-app,APP//)"},
			status: Warning,
		},
		{
			name: "expected servers missing, named and unnamed",
			snap: Snapshot{Servers: cluster()[:2], ExpectedCount: 4,
				ExpectedNames: map[string][]string{"n3": {"n2", "n1", "n1"}, "n1": {"n2"}}},
			want:   []string{"SERVER_MISSING(,,//)", "SERVER_MISSING(n3,,//)"},
			status: Unknown,
		},
		{
			name:   "count surplus explained by a server that just came back",
			snap:   Snapshot{Servers: restarted(3), ExpectedCount: 4},
			want:   nil,
			status: OK,
		},
		{
			name: "a system that started together: no server came back",
			snap: Snapshot{Servers: func() []Server {
				s := restarted(3)
				s[0].Uptime, s[1].Uptime = 10*time.Second, 10*time.Second
				return s
			}(), ExpectedCount: 4},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: Unknown,
		},
		{
			name:   "a shortfall against --expect is never explained away",
			snap:   Snapshot{Servers: restarted(3), ExpectedCount: 5},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: Unknown,
		},
		{
			name:   "young server that counts more than answered",
			snap:   Snapshot{Servers: restarted(4), ExpectedCount: 4},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: Unknown,
		},
		{
			name: "a named server missing is never explained away",
			snap: Snapshot{Servers: restarted(3), ExpectedCount: 5,
				ExpectedNames: map[string][]string{"n4": {"n1"}}},
			want:   []string{"SERVER_MISSING(,,//)", "SERVER_MISSING(n4,,//)"},
			status: Unknown,
		},
		{
			name: "gateway cluster with nobody answering",
			snap: Snapshot{Servers: cluster(), ExpectedCount: 3,
				ExpectedClusters: map[string][]string{"c1": {"x"}, "west": {"n2", "n1"}}},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: Unknown,
		},
		{
			name: "a hung gateway cluster whose servers are named too",
			snap: Snapshot{Servers: cluster(), ExpectedCount: 5,
				ExpectedNames:    map[string][]string{"w1": {"n1"}, "w2": {"n1"}},
				ExpectedClusters: map[string][]string{"west": {"n1"}}},
			// The cluster's finding comes last (by cluster) and counts no
			// server of its own: w1 and w2 may be all of west.
			want:   []string{"SERVER_MISSING(w1,,//)", "SERVER_MISSING(w2,,//)", "SERVER_MISSING(,,//)"},
			status: Unknown,
		},
		{
			name:   "version that is not a version",
			snap:   Snapshot{Servers: []Server{srv("odd", "", "custom-build", 4)}},
			want:   []string{"VERSION_UNPARSEABLE(odd,,//)"},
			status: Unknown,
		},
		{
			name:   "failed request",
			snap:   Snapshot{Servers: cluster(), Problems: []Problem{{Server: "n2", Request: "JSZ", Err: "timeout"}}},
			want:   []string{"AUDIT_INCOMPLETE(n2,,//)"},
			status: Unknown,
		},
		{
			name:   "nobody answered",
			snap:   Snapshot{},
			want:   []string{"AUDIT_INCOMPLETE(,,//)"},
			status: Unknown,
		},
		{
			name: "critical outranks unknown, unknown outranks warning",
			snap: Snapshot{Servers: mixed, ExpectedCount: 4,
				Leafnodes: []LeafLink{{Server: "n1", Peer: "x", Account: "APP"}}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"SERVER_MISSING(,,//)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"LEAFNODE_UNAUDITED(n1,x,APP//)",
			},
			status: Critical,
		},
		{
			name: "gate narrowed to its own consumers keeps server findings",
			snap: Snapshot{Servers: mixed,
				Streams: []Asset{stream("ORDERS", "n3", "n1", "n2", "n3"), stream("BILLING", "n3", "n1", "n2", "n3")},
				Consumers: []Asset{
					consumer("ORDERS", "worker-1", "n3", "n1", "n2", "n3"),
					consumer("ORDERS", "audit", "n3", "n1", "n2", "n3"),
					consumer("BILLING", "worker-2", "n3", "n1", "n2", "n3"),
				}},
			policy: Policy{Streams: []string{"ORD*"}, Consumers: []string{"worker-*"}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,APP/ORDERS/worker-1)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"STREAM_LEADER_BELOW_FLOOR(n3,,APP/ORDERS/)",
			},
			status: Critical,
		},
		{
			name: "account filter",
			snap: Snapshot{Servers: mixed, Consumers: []Asset{
				consumer("S", "C", "n3", "n3"),
				func() Asset { a := consumer("S", "C", "n3", "n3"); a.Account = "OTHER"; return a }(),
			}},
			policy: Policy{Accounts: []string{"OTHER"}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,OTHER/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: Critical,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.policy.Floor == "" {
				tt.policy.Floor = DefaultFloor
			}
			r := Evaluate(&tt.snap, tt.policy)
			var got []string
			for _, f := range r.Findings {
				got = append(got, brief(f))
				if f.Severity != SeverityOf(f.Code) || f.Message == "" {
					t.Errorf("%s: severity %s, message %q", f.Code, f.Severity, f.Message)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(tt.want, "\n       "))
			}
			if r.Status != tt.status {
				t.Errorf("status %s, want %s", r.Status, tt.status)
			}
		})
	}
}

func TestEvaluateCountsLeadershipAndExpected(t *testing.T) {
	snap := &Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams:       []Asset{stream("S", "n2", "n1", "n2", "n3")},
		Consumers:     []Asset{consumer("S", "A", "n1", "n1"), consumer("S", "B", "n1", "n1", "n2"), consumer("S", "C", "n3", "n3")},
		ExpectedNames: map[string][]string{"gone": {"n1"}}}
	r := Evaluate(snap, Policy{Floor: DefaultFloor})
	led := map[string][2]int{}
	for _, s := range r.Servers {
		led[s.Name] = [2]int{s.StreamsLed, s.ConsumersLed}
	}
	if want := map[string][2]int{"n1": {0, 2}, "n2": {1, 0}, "n3": {0, 1}}; fmt.Sprint(led) != fmt.Sprint(want) {
		t.Errorf("led %v, want %v", led, want)
	}
	if r.ServersExpected != 4 {
		t.Errorf("ServersExpected %d, want 4 (3 answered + gone)", r.ServersExpected)
	}
	// A hung gateway cluster whose two servers are named: 3 + 2, not 3 + 3.
	snap.ExpectedNames = map[string][]string{"w1": {"n1"}, "w2": {"n1"}}
	snap.ExpectedClusters = map[string][]string{"west": {"n1"}}
	snap.ExpectedCount = 5
	if r := Evaluate(snap, Policy{Floor: DefaultFloor}); r.ServersExpected != 5 {
		t.Errorf("ServersExpected %d with west's two servers named, want 5", r.ServersExpected)
	}
	if r.Floor != "2.14.0" {
		t.Errorf("Floor %q, want 2.14.0", r.Floor)
	}
}
