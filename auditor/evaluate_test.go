package auditor

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// parsed is s as a Version, the zero Version when it is none.
func parsed(s string) version.Version {
	v, _ := version.ParseVersion(s)
	return v
}

func srv(name, cluster, version string, level int) snapshot.Server {
	s := snapshot.Server{ID: "ID-" + name, Name: name, Cluster: cluster, JetStream: true, APILevel: level}
	s.SetVersion(version)
	return s
}

func consumer(stream, name, leader string, peers ...string) snapshot.Asset {
	return snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: stream, Consumer: name, Leader: leader, Peers: peers, Replicas: len(peers)}
}

func stream(name, leader string, peers ...string) snapshot.Asset {
	return snapshot.Asset{Kind: releases.KindStream, Account: "APP", Stream: name, Leader: leader, Peers: peers, Replicas: len(peers)}
}

// cluster is a healthy 2.14/2.14/2.15 cluster.
func cluster() []snapshot.Server {
	return []snapshot.Server{srv("n1", "c1", "2.14.0", 4), srv("n2", "c1", "2.14.0", 4), srv("n3", "c1", "2.14.0", 4)}
}

// restarted is cluster() where n3 came back 10 s ago counting n servers,
// while n1 and n2 (up for an hour) count one more.
func restarted(n int) []snapshot.Server {
	s := cluster()
	for i := range s {
		s[i].Uptime, s[i].ActiveServers = time.Hour, 4
	}
	s[2].Uptime, s[2].ActiveServers = 10*time.Second, n
	return s
}

// brief renders a finding as CODE(server,peer,account/stream/consumer).
func brief(f findings.Finding) string {
	return fmt.Sprintf("%s(%s,%s,%s/%s/%s)", f.Code, f.Server, f.Peer, f.Account, f.Stream, f.Consumer)
}

func TestEvaluate(t *testing.T) {
	mixed := cluster()
	mixed[2] = srv("n3", "c1", "2.12.15", 3)

	tests := []struct {
		name   string
		snap   snapshot.Snapshot
		policy Policy
		want   []string
		status findings.Severity
	}{
		{
			name:   "all at the floor",
			snap:   snapshot.Snapshot{Servers: cluster(), Consumers: []snapshot.Asset{consumer("S", "C", "n1", "n1", "n2", "n3")}, ExpectedCount: 3},
			want:   nil,
			status: findings.OK,
		},
		{
			name: "consumer led by a server below the floor",
			snap: snapshot.Snapshot{Servers: mixed, Consumers: []snapshot.Asset{
				consumer("S", "C", "n3", "n1", "n2", "n3"),
				consumer("S", "R1", "n1", "n1"),
			}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: findings.Critical,
		},
		{
			name: "follower below the floor under a good leader",
			snap: snapshot.Snapshot{Servers: mixed, Consumers: []snapshot.Asset{consumer("S", "C", "n1", "n1", "n2", "n3")}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n3,n1,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: findings.Critical,
		},
		{
			name:   "replicated consumer without a leader",
			snap:   snapshot.Snapshot{Servers: cluster(), Consumers: []snapshot.Asset{consumer("S", "C", "", "n1", "n2", "n3")}},
			want:   []string{"CONSUMER_NO_LEADER(,,APP/S/C)"},
			status: findings.Warning,
		},
		{
			name: "leaderless consumer with a follower below the floor",
			snap: snapshot.Snapshot{Servers: mixed, Consumers: []snapshot.Asset{consumer("S", "C", "", "n1", "n3")}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n3,,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"CONSUMER_NO_LEADER(,,APP/S/C)",
			},
			status: findings.Critical,
		},
		{
			name: "stream and meta leader below the floor",
			snap: snapshot.Snapshot{Servers: mixed, Streams: []snapshot.Asset{stream("S", "n3", "n1", "n2", "n3")},
				Meta: []snapshot.MetaGroup{{Cluster: "c1", Leader: "n3", Peers: []string{"n1", "n2", "n3"}}}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"STREAM_LEADER_BELOW_FLOOR(n3,,APP/S/)",
				"META_LEADER_BELOW_FLOOR(n3,,//)",
			},
			status: findings.Critical,
		},
		{
			name: "asset needs an API level a peer lacks",
			snap: snapshot.Snapshot{Servers: []snapshot.Server{srv("n1", "c1", "2.15.3", 5), srv("n2", "c1", "2.15.3", 5), srv("old", "c1", "2.15.0", 3)},
				Streams: []snapshot.Asset{
					func() snapshot.Asset { a := stream("FAST", "n1", "n1", "n2", "old"); a.RequiredLevel = 4; return a }(),
					func() snapshot.Asset { a := stream("TTL", "n1", "n1", "n2", "old"); a.RequiredLevel = 1; return a }(),
				}},
			want:   []string{"ASSET_API_LEVEL_UNSUPPORTED(old,,APP/FAST/)", "CLUSTER_MIXED_VERSIONS(,,//)"},
			status: findings.Critical,
		},
		{
			name: "leafnode peer outside the system account",
			snap: snapshot.Snapshot{Servers: []snapshot.Server{srv("hub", "", "2.14.0", 4), srv("leaf-sys", "", "2.15.3", 5)},
				Leafnodes: []snapshot.LeafLink{
					{Server: "hub", Peer: "leaf-app", Account: "APP"},
					{Server: "hub", Peer: "leaf-app", Account: "APP"},
					{Server: "hub", Peer: "leaf-sys", Account: "SYS"},
					{Server: "leaf-sys", Peer: "hub", Account: "SYS"},
				}},
			want:   []string{"LEAFNODE_UNAUDITED(hub,leaf-app,APP//)"},
			status: findings.Warning,
		},
		{
			name: "expected servers missing, named and unnamed",
			snap: snapshot.Snapshot{Servers: cluster()[:2], ExpectedCount: 4,
				ExpectedNames: map[string][]string{"n3": {"n2", "n1", "n1"}, "n1": {"n2"}}},
			want:   []string{"SERVER_MISSING(,,//)", "SERVER_MISSING(n3,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "count surplus explained by a server that just came back",
			snap:   snapshot.Snapshot{Servers: restarted(3), ExpectedCount: 4},
			want:   nil,
			status: findings.OK,
		},
		{
			name: "a system that started together: no server came back",
			snap: snapshot.Snapshot{Servers: func() []snapshot.Server {
				s := restarted(3)
				s[0].Uptime, s[1].Uptime = 10*time.Second, 10*time.Second
				return s
			}(), ExpectedCount: 4},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "a shortfall against --expect is never explained away",
			snap:   snapshot.Snapshot{Servers: restarted(3), ExpectedCount: 5},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "young server that counts more than answered",
			snap:   snapshot.Snapshot{Servers: restarted(4), ExpectedCount: 4},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name: "a named server missing is never explained away",
			snap: snapshot.Snapshot{Servers: restarted(3), ExpectedCount: 5,
				ExpectedNames: map[string][]string{"n4": {"n1"}}},
			want:   []string{"SERVER_MISSING(,,//)", "SERVER_MISSING(n4,,//)"},
			status: findings.Unknown,
		},
		{
			name: "gateway cluster with nobody answering",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
				ExpectedClusters: map[string][]string{"c1": {"x"}, "west": {"n2", "n1"}}},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name: "a hung gateway cluster whose servers are named too",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 5,
				ExpectedNames:    map[string][]string{"w1": {"n1"}, "w2": {"n1"}},
				ExpectedClusters: map[string][]string{"west": {"n1"}}},
			// The cluster's finding comes last (by cluster) and counts no
			// server of its own: w1 and w2 may be all of west.
			want:   []string{"SERVER_MISSING(w1,,//)", "SERVER_MISSING(w2,,//)", "SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			// Two of three stopped with SIGTERM: they left the survivor's
			// routes and count at once, but not the RAFT groups.
			name: "servers that left gracefully, named by a consumer's peers",
			snap: snapshot.Snapshot{Servers: cluster()[:1], ExpectedCount: 1,
				Meta:          []snapshot.MetaGroup{{Cluster: "c1", Size: 3}},
				Consumers:     []snapshot.Asset{consumer("S", "C", "", "n1", "n2", "n3")},
				ExpectedNames: map[string][]string{"n2": {"n1"}, "n3": {"n1"}}},
			want:   []string{"SERVER_MISSING(n2,,//)", "SERVER_MISSING(n3,,//)", "CONSUMER_NO_LEADER(,,APP/S/C)"},
			status: findings.Unknown,
		},
		{
			name: "servers that left gracefully, counted by the meta group alone",
			snap: snapshot.Snapshot{Servers: cluster()[:1], ExpectedCount: 1,
				Meta:    []snapshot.MetaGroup{{Cluster: "c1", Size: 3}},
				Streams: []snapshot.Asset{stream("R1", "n1", "n1")}},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name: "narrowing to an R1 stream never hides a missing server",
			snap: snapshot.Snapshot{Servers: cluster()[:1], ExpectedCount: 1,
				Meta:          []snapshot.MetaGroup{{Cluster: "c1", Size: 3}},
				Streams:       []snapshot.Asset{stream("R1", "n1", "n1")},
				Consumers:     []snapshot.Asset{consumer("S", "C", "", "n1", "n2", "n3")},
				ExpectedNames: map[string][]string{"n2": {"n1"}, "n3": {"n1"}}},
			policy: Policy{Streams: []string{"R1"}},
			want:   []string{"SERVER_MISSING(n2,,//)", "SERVER_MISSING(n3,,//)"},
			status: findings.Unknown,
		},
		{
			name: "meta group of another domain counts its own servers",
			snap: snapshot.Snapshot{Servers: append(cluster(), snapshot.Server{ID: "L", Name: "leaf", Domain: "edge", Version: "2.14.0", Parsed: version.Must("2.14.0"), JetStream: true, APILevel: 4}),
				ExpectedCount: 4,
				Meta:          []snapshot.MetaGroup{{Cluster: "c1", Size: 3}, {Domain: "edge", Size: 1}}},
			want:   nil,
			status: findings.OK,
		},
		{
			name: "a peer known only by its id that answered under its name",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
				ExpectedNames: map[string][]string{snapshot.UnknownPeerPrefix + snapshot.PeerID("n3") + ")": {"n1"}}},
			want:   nil,
			status: findings.OK,
		},
		{
			name: "a peer known only by its id that did not answer",
			snap: snapshot.Snapshot{Servers: cluster()[:2], ExpectedCount: 2,
				Meta:          []snapshot.MetaGroup{{Cluster: "c1", Size: 3}},
				ExpectedNames: map[string][]string{snapshot.UnknownPeerPrefix + snapshot.PeerID("n3") + ")": {"n1"}}},
			want:   []string{"SERVER_MISSING(,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "version that is not a version",
			snap:   snapshot.Snapshot{Servers: []snapshot.Server{srv("odd", "", "custom-build", 4)}},
			want:   []string{"VERSION_UNPARSEABLE(odd,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "failed request",
			snap:   snapshot.Snapshot{Servers: cluster(), Problems: []snapshot.Problem{{Server: "n2", Request: "JSZ", Err: "timeout"}}},
			want:   []string{"AUDIT_INCOMPLETE(n2,,//)"},
			status: findings.Unknown,
		},
		{
			name:   "nobody answered",
			snap:   snapshot.Snapshot{},
			want:   []string{"AUDIT_INCOMPLETE(,,//)"},
			status: findings.Unknown,
		},
		{
			name: "critical outranks unknown, unknown outranks warning",
			snap: snapshot.Snapshot{Servers: mixed, ExpectedCount: 4,
				Leafnodes: []snapshot.LeafLink{{Server: "n1", Peer: "x", Account: "APP"}}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"SERVER_MISSING(,,//)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"LEAFNODE_UNAUDITED(n1,x,APP//)",
			},
			status: findings.Critical,
		},
		{
			name: "gate narrowed to its own consumers keeps server findings",
			snap: snapshot.Snapshot{Servers: mixed,
				Streams: []snapshot.Asset{stream("ORDERS", "n3", "n1", "n2", "n3"), stream("BILLING", "n3", "n1", "n2", "n3")},
				Consumers: []snapshot.Asset{
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
			status: findings.Critical,
		},
		{
			name: "account filter",
			snap: snapshot.Snapshot{Servers: mixed, Consumers: []snapshot.Asset{
				consumer("S", "C", "n3", "n3"),
				func() snapshot.Asset { a := consumer("S", "C", "n3", "n3"); a.Account = "OTHER"; return a }(),
			}},
			policy: Policy{Accounts: []string{"OTHER"}},
			want: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,OTHER/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
			},
			status: findings.Critical,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.policy.Floor.IsZero() {
				tt.policy.Floor = version.DefaultFloor
			}
			r := Evaluate(&tt.snap, tt.policy)
			var got []string
			for _, f := range r.Findings {
				got = append(got, brief(f))
				if f.Severity != findings.SeverityOf(f.Code) || f.Message == "" {
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
	snap := &snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams:       []snapshot.Asset{stream("S", "n2", "n1", "n2", "n3")},
		Consumers:     []snapshot.Asset{consumer("S", "A", "n1", "n1"), consumer("S", "B", "n1", "n1", "n2"), consumer("S", "C", "n3", "n3")},
		ExpectedNames: map[string][]string{"gone": {"n1"}}}
	r := Evaluate(snap, Policy{Floor: version.DefaultFloor})
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
	if r := Evaluate(snap, Policy{Floor: version.DefaultFloor}); r.ServersExpected != 5 {
		t.Errorf("ServersExpected %d with west's two servers named, want 5", r.ServersExpected)
	}
	if r.Floor.String() != "2.14.0" {
		t.Errorf("Floor %q, want 2.14.0", r.Floor)
	}
}

func TestEvaluateExpectedCountsEveryServerOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		snap snapshot.Snapshot
		want int
	}{
		{"graceful stop named by peers", snapshot.Snapshot{Servers: cluster()[:1], ExpectedCount: 1,
			Meta: []snapshot.MetaGroup{{Size: 3}}, ExpectedNames: map[string][]string{"n2": {"n1"}, "n3": {"n1"}}}, 3},
		{"graceful stop counted by the meta group", snapshot.Snapshot{Servers: cluster()[:1], ExpectedCount: 1,
			Meta: []snapshot.MetaGroup{{Size: 3}}}, 3},
		// Killed: the survivors still count n3 and route to it until they
		// forget it, and the meta group still has it: one server, not three.
		{"killed, counted three ways", snapshot.Snapshot{Servers: cluster()[:2], ExpectedCount: 3,
			Meta: []snapshot.MetaGroup{{Size: 3}}, ExpectedNames: map[string][]string{"n3": {"n1", "n2"}}}, 3},
		{"peer id and name of one server", snapshot.Snapshot{Servers: cluster()[:2], ExpectedCount: 2, Meta: []snapshot.MetaGroup{{Size: 3}},
			ExpectedNames: map[string][]string{"n3": {"n1"}, snapshot.UnknownPeerPrefix + snapshot.PeerID("n3") + ")": {"n2"}}}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := Evaluate(&tt.snap, Policy{Floor: version.DefaultFloor}); r.ServersExpected != tt.want {
				t.Errorf("ServersExpected %d, want %d:%v", r.ServersExpected, tt.want, r.Findings)
			}
		})
	}
}

func TestEvaluateMissingServerAsLastSeen(t *testing.T) {
	snap := &snapshot.Snapshot{Servers: cluster()[:2], ExpectedCount: 3, ExpectedNames: map[string][]string{"n3": {"n1"}},
		LastSeen: map[string]snapshot.Server{"n3": srv("n3", "c1", "2.12.15", 3)}}
	r := Evaluate(snap, Policy{Floor: version.DefaultFloor})
	if len(r.Findings) != 1 {
		t.Fatalf("findings %v", r.Findings)
	}
	f := r.Findings[0]
	if f.Code != findings.ServerMissing || f.Version != "2.12.15" || f.ServerLevel == nil || *f.ServerLevel != 3 || f.Cluster != "c1" ||
		!strings.Contains(f.Message, "last seen running 2.12.15") {
		t.Errorf("finding %+v", f)
	}
}

// What a RESET does depends on the versions against 2.14.0, not the floor:
// the words must follow that even when the floor is higher.
func TestEvaluateResetWords(t *testing.T) {
	servers := []snapshot.Server{srv("new", "c1", "2.15.3", 5), srv("mid", "c1", "2.14.0", 4), srv("old", "c1", "2.12.15", 3)}
	messages := func(floor version.Version, leader string) map[findings.Code]string {
		snap := &snapshot.Snapshot{Servers: servers, Consumers: []snapshot.Asset{consumer("S", "C", leader, "new", "mid", "old")}}
		out := map[findings.Code]string{}
		for _, f := range Evaluate(snap, Policy{Floor: floor}).Findings {
			out[f.Code] += f.Message + "|"
		}
		return out
	}
	m := messages(version.Must("2.15.0"), "mid")
	if got := m[findings.ConsumerLeaderBelowFloor]; strings.Contains(got, "unanswered") || !strings.Contains(got, "below the floor 2.15.0") {
		t.Errorf("a 2.14 leader answers RESET: %q", got)
	}
	// The 2.14 leader answers RESET and replicates it: the 2.12 follower's
	// hazard must not be hidden behind the leader's own finding.
	if got := m[findings.ConsumerReplicaBelowFloor]; !strings.Contains(got, "follower old running 2.12.15: a RESET answered by a leader at 2.14.0 or later crashes it") {
		t.Errorf("replica finding %q", got)
	}
	m = messages(version.Must("2.14.0"), "old")
	if got := m[findings.ConsumerLeaderBelowFloor]; !strings.Contains(got, "RESET (first in 2.14.0) to it goes unanswered") || strings.Contains(got, "UNPIN") {
		t.Errorf("a 2.12 leader: %q", got)
	}
	if got := m[findings.ConsumerReplicaBelowFloor]; got != "" {
		t.Errorf("a leader that does not know RESET replicates none, yet: %q", got)
	}
	m = messages(version.Must("2.15.0"), "new")
	if got := m[findings.ConsumerReplicaBelowFloor]; !strings.Contains(got, "follower mid running 2.14.0, below the floor 2.15.0") {
		t.Errorf("a 2.14 follower below a 2.15 floor: %q", got)
	}
}

func TestEvaluateAPILevelWords(t *testing.T) {
	s := snapshot.Asset{Kind: releases.KindStream, Account: "APP", Stream: "TTL", Leader: "new", Peers: []string{"new", "old", "ancient"}, RequiredLevel: 4}
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{srv("new", "c1", "2.15.3", 5), srv("old", "c1", "2.12.15", 3), srv("ancient", "c1", "2.10.27", 0)},
		Streams: []snapshot.Asset{s}}
	got := map[string]string{}
	for _, f := range Evaluate(snap, Policy{Floor: version.Must("2.10.0")}).Findings {
		if f.Code == findings.AssetAPILevelUnsupported {
			got[f.Server] = f.Message
		}
	}
	if !strings.Contains(got["old"], "supports 3: it holds the stream offline") {
		t.Errorf("2.11+ peer: %q", got["old"])
	}
	if !strings.Contains(got["ancient"], "runs 2.10.27, from before API levels: it runs the stream online") || !strings.Contains(got["ancient"], "diverges") {
		t.Errorf("2.10 peer: %q", got["ancient"])
	}
}

// TestEvaluateUnreadableLevel: a level that is not a number
// (TestUnreadableRequiredLevel) is judged on a peer that knows levels.
func TestEvaluateUnreadableLevel(t *testing.T) {
	s := snapshot.Asset{Kind: releases.KindStream, Account: "APP", Stream: "ODD", Leader: "new", Peers: []string{"new", "ancient"}, RequiredLevel: snapshot.LevelUnreadable}
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{srv("new", "c1", "2.15.3", 5), srv("ancient", "c1", "2.10.27", 0)}, Streams: []snapshot.Asset{s}}
	var got []string
	for _, f := range Evaluate(snap, Policy{Floor: version.Must("2.10.0")}).Findings {
		if f.Code == findings.AssetAPILevelUnsupported {
			got = append(got, f.Server+": "+f.Message)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "new: ") || !strings.Contains(got[0], "not a number") {
		t.Errorf("findings %q", got)
	}
}

// TestEvaluateNarrowedToNothing: a pattern that selects nothing the audit
// saw is UNKNOWN and says which pattern; the gate did not see what it was
// asked about.
func TestEvaluateNarrowedToNothing(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams: []snapshot.Asset{stream("ORDERS", "n1", "n1", "n2", "n3")},
		Consumers: []snapshot.Asset{consumer("ORDERS", "worker", "n1", "n1", "n2", "n3"),
			func() snapshot.Asset { a := consumer("BILLING", "payer", "n1", "n1"); a.Account = "OTHER"; return a }(),
			// Operator mode: the account is its key, with its JWT name beside it.
			func() snapshot.Asset {
				a := consumer("KEYED", "k", "n1", "n1")
				a.Account, a.AccountName = "ADKEY", "NAMED"
				return a
			}()}}
	tests := []struct {
		name   string
		policy Policy
		want   []string // the messages of the findings, all AUDIT_INCOMPLETE
	}{
		{"no patterns", Policy{}, nil},
		{"every pattern matches", Policy{Accounts: []string{"APP"}, Streams: []string{"ORD*"}, Consumers: []string{"work*"}}, nil},
		{"misspelt stream", Policy{Streams: []string{"ORDRES"}},
			[]string{`stream pattern "ORDRES" matches no stream the audit saw: the gate checked nothing it was narrowed to`}},
		{"one of two streams", Policy{Streams: []string{"ORDERS", "ORDRES"}},
			[]string{`stream pattern "ORDRES" matches no stream the audit saw: the gate checked nothing it was narrowed to`}},
		{"misspelt account", Policy{Accounts: []string{"AP"}},
			[]string{`account pattern "AP" matches no account the audit saw: the gate checked nothing it was narrowed to`}},
		{"a consumer of another stream", Policy{Streams: []string{"ORDERS"}, Consumers: []string{"payer"}},
			[]string{`consumer pattern "payer" matches no consumer the audit saw in the streams selected: the gate checked nothing it was narrowed to`}},
		{"a stream of another account", Policy{Accounts: []string{"APP"}, Streams: []string{"BILLING"}},
			[]string{`stream pattern "BILLING" matches no stream the audit saw in the accounts selected: the gate checked nothing it was narrowed to`}},
		{"a consumer anywhere", Policy{Consumers: []string{"payer"}}, nil},
		{"an account by its JWT name", Policy{Accounts: []string{"NAMED"}, Streams: []string{"KEYED"}}, nil},
		{"an account by its key", Policy{Accounts: []string{"ADKEY"}, Consumers: []string{"k"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.policy.Floor = version.DefaultFloor
			r := Evaluate(&snap, tt.policy)
			var got []string
			for _, f := range r.Findings {
				if f.Code != findings.AuditIncomplete {
					t.Errorf("unexpected finding %s", brief(f))
				}
				got = append(got, f.Message)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("findings:\n  got  %q\n  want %q", got, tt.want)
			}
			if want := map[bool]findings.Severity{true: findings.OK, false: findings.Unknown}[tt.want == nil]; r.Status != want {
				t.Errorf("status %s, want %s", r.Status, want)
			}
		})
	}
}

// TestEvaluateFailedAudit: an audit that could not run is UNKNOWN with its
// one reason, not also "no server answered".
func TestEvaluateFailedAudit(t *testing.T) {
	r := findings.Failed(errors.New("audit: permissions violation: ..."), version.DefaultFloor, "", time.Now(), 0)
	if r.Status != findings.Unknown || len(r.Findings) != 1 || r.Findings[0].Message != "audit: permissions violation: ..." {
		t.Errorf("status %s, findings %+v", r.Status, r.Findings)
	}
	if r := Evaluate(&snapshot.Snapshot{}, Policy{Floor: version.DefaultFloor}); r.Status != findings.Unknown || len(r.Findings) != 1 || r.Findings[0].Message != "no server answered the audit" {
		t.Errorf("an empty snapshot: status %s, findings %+v", r.Status, r.Findings)
	}
}

// TestLeafnodeAccountName: LEAFZ names a link's account by its id alone (in
// operator mode its public key); the finding names it as the audit's assets
// do, with the JWT's name, where the audit saw one, and by the key alone
// where it did not.
func TestLeafnodeAccountName(t *testing.T) {
	const app, other = "ACXD4KXKPV6KCL7X5IK2SQAS4XAA5ACP77V4TC5SZUKVU47U5LSM7DWJ", "ABCSK3LXTUNSEBYZC22MPEDOAJWEJBW7FOLMQF3L3EG2M2XRRXC3PMDU"
	s := stream("ORDERS", "hub", "hub")
	s.Account, s.AccountName = app, "APP"
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{srv("hub", "", "2.14.0", 4)}, Streams: []snapshot.Asset{s},
		Leafnodes: []snapshot.LeafLink{{Server: "hub", Peer: "leaf-app", Account: app}, {Server: "hub", Peer: "leaf-other", Account: other}}}
	var got []string // in the findings' order: by message
	for _, f := range Evaluate(snap, Policy{Floor: version.DefaultFloor}).Findings {
		if f.Code == findings.LeafnodeUnaudited {
			got = append(got, f.Peer+" "+f.AccountName+": "+f.Message)
		}
	}
	want := []string{
		"leaf-other : leafnode peer leaf-other, linked to hub in account " + other + ", was not audited: it does not share the system account, or it is not answering",
		"leaf-app APP: leafnode peer leaf-app, linked to hub in account APP (" + app + "), was not audited: it does not share the system account, or it is not answering",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
}

// TestSortFindingsOrder holds the sort's keys (codes, account and stream
// ranks, the first bytes of a consumer's name) to the order they stand
// for: worst first, then by code, account, stream, consumer, cluster,
// server and peer, equals as they came. The names share prefixes longer
// than eight bytes, differ by trailing NULs, and include an unregistered
// code.
func TestSortFindingsOrder(t *testing.T) {
	want := func(fs []findings.Finding) []findings.Finding {
		fs = slices.Clone(fs)
		slices.SortStableFunc(fs, func(a, b findings.Finding) int {
			return cmp.Or(
				cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
				cmp.Compare(codeIndex(a.Code), codeIndex(b.Code)),
				cmp.Compare(a.Account, b.Account),
				cmp.Compare(a.Stream, b.Stream),
				cmp.Compare(a.Consumer, b.Consumer),
				cmp.Compare(a.Cluster, b.Cluster),
				cmp.Compare(a.Server, b.Server),
				cmp.Compare(a.Peer, b.Peer),
			)
		})
		return fs
	}
	names := []string{"", "a", "a\x00", "a\x00\x00", "b", "orders-processor-1", "orders-processor-10", "orders-processor-2",
		"orders-p", "orders-pr", "ORDERS", "\xff", "zz"}
	codes := []findings.Code{findings.ConsumerLeaderBelowFloor, findings.ConsumerReplicaBelowFloor, findings.AssetAPILevelUnsupported, findings.ServerBelowFloor,
		findings.ClusterMixedVersions, findings.AuditIncomplete, "NOT_A_CODE"}
	severities := []findings.Severity{findings.OK, findings.Warning, findings.Critical, findings.Unknown}
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(ss []string) string { return ss[r.IntN(len(ss))] }
	for round := range 200 {
		fs := make([]findings.Finding, r.IntN(300))
		for i := range fs {
			fs[i] = findings.Finding{Code: codes[r.IntN(len(codes))], Severity: severities[r.IntN(len(severities))],
				Account: pick(names[:4+r.IntN(len(names)-4)]), Stream: pick(names), Consumer: pick(names),
				Cluster: pick(names[:3]), Server: pick(names[:5]), Peer: pick(names[:5]), Message: fmt.Sprint(i)}
		}
		w := want(fs)
		got := slices.Clone(fs)
		sortFindings(got)
		if !slices.EqualFunc(got, w, func(a, b findings.Finding) bool { return reflect.DeepEqual(a, b) }) {
			for i := range got {
				if !reflect.DeepEqual(got[i], w[i]) {
					t.Fatalf("round %d: at %d got %+v, want %+v", round, i, got[i], w[i])
				}
			}
		}
	}
}
