package auditor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestParseAssumption(t *testing.T) {
	good := map[string]Assumption{
		"n2=2.12.15":          {"n2", version.Must("2.12.15")},
		" n2 = v2.14":         {"n2", version.Must("2.14.0")},
		"cluster/east=2.15.3": {"cluster/east", version.Must("2.15.3")},
		"*=2.14.0-fips":       {"*", version.Must("2.14.0")},
	}
	for in, want := range good {
		got, err := ParseAssumption(in)
		if err != nil || got != want {
			t.Errorf("ParseAssumption(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "n2", "=2.14.0", "n2=", "n2=banana", "cluster/=2.14.0", "n2:2.14.0"} {
		if _, err := ParseAssumption(in); err == nil {
			t.Errorf("ParseAssumption(%q) accepted", in)
		}
	}
}

// levelAsset sets an asset's required level.
func levelAsset(a snapshot.Asset, level int) snapshot.Asset { a.RequiredLevel = level; return a }

func briefs(fs []findings.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, brief(f))
	}
	return out
}

func assume(t *testing.T, snap *snapshot.Snapshot, p Policy, as ...string) *WhatIf {
	t.Helper()
	var parsed []Assumption
	for _, s := range as {
		a, err := ParseAssumption(s)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, a)
	}
	if p.Floor.IsZero() {
		p.Floor = version.DefaultFloor
	}
	w, err := Assume(Evaluate(snap, p), p, parsed)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAssume(t *testing.T) {
	mixed := cluster()
	mixed[2] = srv("n3", "c1", "2.12.15", 3)
	tests := []struct {
		name    string
		snap    snapshot.Snapshot
		assume  []string
		status  findings.Severity
		appear  []string
		gone    []string
		depend  []string // kind/stream/consumer -> assumed leader
		levels  map[string]int
		message string // a substring of some finding's message
	}{
		{
			name: "a 2.14 server goes back to 2.12.15 under level-4 assets",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
				Streams: []snapshot.Asset{levelAsset(stream("FAST", "n1", "n1", "n2", "n3"), 4), stream("PLAIN", "n2", "n1", "n2", "n3")},
				Consumers: []snapshot.Asset{
					consumer("PLAIN", "C", "n1", "n1", "n2", "n3"),
					levelAsset(consumer("PLAIN", "R1", "n2", "n2"), 4),
				}},
			assume: []string{"n2=2.12.15"},
			status: findings.Critical,
			appear: []string{
				"SERVER_BELOW_FLOOR(n2,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n2,,APP/PLAIN/R1)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n2,n1,APP/PLAIN/C)",
				"ASSET_API_LEVEL_UNSUPPORTED(n2,,APP/FAST/)",
				"ASSET_API_LEVEL_UNSUPPORTED(n2,,APP/PLAIN/R1)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"STREAM_LEADER_BELOW_FLOOR(n2,,APP/PLAIN/)",
				"UPGRADE_PATH_UNSUPPORTED(n2,,//)", // more than one patch back
			},
			gone: []string{},
			// C: led by n1 or n3 a RESET crashes n2, led by n2 it goes
			// unanswered; the crash is assumed and the current leader
			// kept. PLAIN: n2 leading is the worse.
			depend: []string{"stream/PLAIN/ n2", "consumer/PLAIN/C n1"},
			levels: map[string]int{"n2": 3},
		},
		{
			name: "the 2.12 server of a mixed cluster is upgraded",
			snap: snapshot.Snapshot{Servers: mixed, ExpectedCount: 3,
				Streams:   []snapshot.Asset{stream("S", "n3", "n1", "n2", "n3")},
				Consumers: []snapshot.Asset{consumer("S", "C", "n1", "n1", "n2", "n3"), consumer("S", "D", "n3", "n1", "n2", "n3")},
				Meta:      []snapshot.MetaGroup{{Cluster: "c1", Leader: "n3", Peers: []string{"n1", "n2", "n3"}, Size: 3}}},
			assume: []string{"n3=2.14.0"},
			status: findings.OK,
			appear: []string{},
			gone: []string{
				"SERVER_BELOW_FLOOR(n3,,//)",
				"CONSUMER_LEADER_BELOW_FLOOR(n3,,APP/S/D)",
				"CONSUMER_REPLICA_BELOW_FLOOR(n3,n1,APP/S/C)",
				"CLUSTER_MIXED_VERSIONS(,,//)",
				"STREAM_LEADER_BELOW_FLOOR(n3,,APP/S/)",
				"META_LEADER_BELOW_FLOOR(n3,,//)",
			},
			depend: []string{},
			levels: map[string]int{"n3": 4},
		},
		{
			name: "a version the table does not know: its level findings are unknown",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
				Streams: []snapshot.Asset{levelAsset(stream("FAST", "n1", "n1", "n2", "n3"), 4), stream("PLAIN", "n1", "n1", "n2", "n3")}},
			assume: []string{"n2=2.16.0"},
			status: findings.Unknown,
			// 2.16 is past 2.15, which wants 2.14.7 first, of n2 and of
			// the 2.14.0 servers of its cluster.
			appear: []string{"API_LEVEL_UNKNOWN(n2,,APP/FAST/)", "CLUSTER_MIXED_VERSIONS(,,//)", "UPGRADE_PATH_UNSUPPORTED(n2,,//)",
				"UPGRADE_PATH_MIXED(n1,,//)", "UPGRADE_PATH_MIXED(n3,,//)"},
			gone:    []string{},
			depend:  []string{},
			levels:  map[string]int{"n2": releases.LevelUnknown},
			message: "whose API level is not known (the level table does not list 2.16.0)",
		},
		{
			name: "a version another server runs takes the level it reports",
			snap: snapshot.Snapshot{Servers: []snapshot.Server{srv("n1", "c1", "2.16.0", 6), srv("n2", "c1", "2.16.0", 6), srv("n3", "c1", "2.14.10", 4)},
				ExpectedCount: 3,
				Streams:       []snapshot.Asset{levelAsset(stream("NEW", "n1", "n1", "n2", "n3"), 6)}},
			assume: []string{"n3=2.16.0"},
			status: findings.OK,
			appear: []string{},
			gone:   []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/NEW/)", "CLUSTER_MIXED_VERSIONS(,,//)"},
			depend: []string{},
			levels: map[string]int{"n3": 6},
		},
		{
			name: "back to 2.10: a TTL stream runs online and diverges",
			snap: snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
				Streams: []snapshot.Asset{levelAsset(stream("TTL", "n1", "n1", "n2", "n3"), 1)}},
			assume: []string{"n3=2.10.27"},
			status: findings.Critical,
			// Below 2.11.9, the floor of a downgrade from 2.12 or later.
			appear: []string{"SERVER_BELOW_FLOOR(n3,,//)", "ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/TTL/)", "DOWNGRADE_BELOW_FLOOR(n3,,//)",
				"CLUSTER_MIXED_VERSIONS(,,//)", "STREAM_LEADER_BELOW_FLOOR(n3,,APP/TTL/)", "UPGRADE_PATH_UNSUPPORTED(n3,,//)"},
			gone:    []string{"STREAM_LEADER_BELOW_FLOOR(n1,,APP/TTL/)"}[:0],
			depend:  []string{"stream/TTL/ n3"},
			levels:  map[string]int{"n3": 0},
			message: "runs the stream online, ignoring what it does not know, and its copy diverges",
		},
		{
			name: "the whole cluster, then one server back: the later assumption wins",
			snap: snapshot.Snapshot{Servers: mixed, ExpectedCount: 3,
				Meta: []snapshot.MetaGroup{{Cluster: "c1", Leader: "n1", Peers: []string{"n1", "n2", "n3"}, Size: 3}}},
			assume: []string{"cluster/c1=2.12.15", "n1=2.14.0"},
			status: findings.Critical,
			appear: []string{"SERVER_BELOW_FLOOR(n2,,//)", "META_LEADER_BELOW_FLOOR(n2,,//)", "UPGRADE_PATH_UNSUPPORTED(n2,,//)"},
			gone:   []string{"META_LEADER_BELOW_FLOOR(n3,,//)"}[:0],
			depend: []string{"meta// n2"},
			levels: map[string]int{"n1": 4, "n2": 3, "n3": 3},
		},
		{
			name:   "every server",
			snap:   snapshot.Snapshot{Servers: mixed, ExpectedCount: 3},
			assume: []string{"*=2.15.3"},
			// 2.15 wants 2.14.7 first, and none runs it.
			status: findings.Warning,
			appear: []string{"UPGRADE_PATH_UNSUPPORTED(n1,,//)", "UPGRADE_PATH_UNSUPPORTED(n2,,//)", "UPGRADE_PATH_UNSUPPORTED(n3,,//)"},
			gone:   []string{"SERVER_BELOW_FLOOR(n3,,//)", "CLUSTER_MIXED_VERSIONS(,,//)"},
			depend: []string{},
			levels: map[string]int{"n1": 5, "n2": 5, "n3": 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.snap)
			w := assume(t, &tt.snap, Policy{}, tt.assume...)
			if fmt.Sprint(tt.snap) != before {
				t.Error("Assume changed the snapshot it was given")
			}
			if w.After.Status != tt.status {
				t.Errorf("status %s, want %s; findings %q", w.After.Status, tt.status, briefs(w.After.Findings))
			}
			if got := briefs(w.Appear); !slices.Equal(got, tt.appear) {
				t.Errorf("appear\n  %q\nwant\n  %q", got, tt.appear)
			}
			if got := briefs(w.Gone); !slices.Equal(got, tt.gone) {
				t.Errorf("gone\n  %q\nwant\n  %q", got, tt.gone)
			}
			got := []string{}
			for _, d := range w.Depend {
				got = append(got, fmt.Sprintf("%s/%s/%s %s", d.Kind, d.Stream, d.Consumer, d.Leader))
				if len(d.Outcomes) < 2 || d.Message == "" {
					t.Errorf("%+v: a dependence needs two outcomes and a message", d)
				}
			}
			if !slices.Equal(got, tt.depend) {
				t.Errorf("depends on leader %q, want %q", got, tt.depend)
			}
			for _, s := range w.After.Servers {
				if want, ok := tt.levels[s.Name]; ok && s.APILevel != want {
					t.Errorf("%s: level %d, want %d", s.Name, s.APILevel, want)
				}
			}
			if tt.message != "" && !slices.ContainsFunc(w.After.Findings, func(f findings.Finding) bool { return strings.Contains(f.Message, tt.message) }) {
				t.Errorf("no finding says %q: %q", tt.message, briefs(w.After.Findings))
			}
			// The report as it is stays the gate's.
			if w.Before.Status != Evaluate(&tt.snap, Policy{Floor: version.DefaultFloor}).Status {
				t.Error("the report before the change is not Evaluate's")
			}
		})
	}
}

func TestAssumeLeaderDependence(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Consumers: []snapshot.Asset{consumer("S", "C", "n2", "n1", "n2", "n3")}}
	w := assume(t, &snap, Policy{}, "n2=2.12.15")
	if len(w.Depend) != 1 {
		t.Fatalf("depends %+v", w.Depend)
	}
	d := w.Depend[0]
	// n2 led it: after its restart n1 or n3 may lead and answer a RESET
	// that crashes n2, or n2 lead again and leave it unanswered.
	if d.Leader != "n1" || len(d.Outcomes) != 2 {
		t.Fatalf("assumed leader %s, outcomes %+v", d.Leader, d.Outcomes)
	}
	for _, o := range d.Outcomes {
		want := map[findings.ResetVerdict]string{findings.ResetCrashesFollower: "n1 n3", findings.ResetUnanswered: "n2"}[o.Reset]
		if strings.Join(o.Leaders, " ") != want || o.Severity != findings.Critical {
			t.Errorf("outcome %+v, want leaders %q", o, want)
		}
	}
	for _, want := range []string{"led by n1 or n3, a RESET it answers crashes a follower", "led by n2, RESET to it goes unanswered", "assumes n1, the worse"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("message %q does not say %q", d.Message, want)
		}
	}
	f := w.After.Findings[slices.IndexFunc(w.After.Findings, func(f findings.Finding) bool { return f.Code == findings.ConsumerReplicaBelowFloor })]
	if !strings.Contains(f.Message, "if n1 leads after the change") {
		t.Errorf("finding %q does not say it assumed a leader", f.Message)
	}
}

func TestAssumeFailsClosed(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedNames: map[string][]string{"n9": {"n1"}}}
	for _, a := range []Assumption{{"n9", version.Must("2.14.0")}, {"cluster/west", version.Must("2.14.0")}, {"typo", version.Must("2.14.0")}} {
		if _, err := Assume(Evaluate(&snap, Policy{Floor: version.DefaultFloor}), Policy{Floor: version.DefaultFloor}, []Assumption{a}); err == nil || !strings.Contains(err.Error(), "answered the audit") {
			t.Errorf("%s: err %v", a, err)
		}
	}
}

func TestAssumeKeepsLeaderlessGroups(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3, Consumers: []snapshot.Asset{consumer("S", "C", "", "n1", "n2", "n3")}}
	w := assume(t, &snap, Policy{}, "n2=2.12.15")
	if got := briefs(w.Appear); !slices.Contains(got, "CONSUMER_REPLICA_BELOW_FLOOR(n2,,APP/S/C)") || len(w.Depend) != 0 {
		t.Errorf("appear %q, depend %+v", got, w.Depend)
	}
}

func TestUnexplained(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams:   []snapshot.Asset{levelAsset(stream("FAST", "n1", "n1", "n2", "n3"), 4)},
		Consumers: []snapshot.Asset{consumer("FAST", "C", "n1", "n1", "n2", "n3")}}
	w := assume(t, &snap, Policy{}, "n3=2.12.15")

	// What the servers could do after the change: n3 runs 2.12.15 and C
	// is led by n2, or by n3.
	real := snap
	real.Servers = slices.Clone(snap.Servers)
	real.Servers[2] = srv("n3", "c1", "2.12.15", 3)
	for _, leader := range []string{"n2", "n3"} {
		real.Consumers = []snapshot.Asset{consumer("FAST", "C", leader, "n1", "n2", "n3")}
		missing, unpredicted := Unexplained(w.After, w.Depend, Evaluate(&real, Policy{Floor: version.DefaultFloor}))
		if len(missing) != 0 || len(unpredicted) != 0 {
			t.Errorf("C led by %s: missing %q, unpredicted %q", leader, briefs(missing), briefs(unpredicted))
		}
	}
	// A level finding does not depend on leaders: without it the
	// prediction fails, and so does a finding nobody predicted.
	real.Streams = []snapshot.Asset{stream("FAST", "n1", "n1", "n2", "n3")}
	real.Leafnodes = []snapshot.LeafLink{{Server: "n1", Peer: "x", Account: "APP"}}
	missing, unpredicted := Unexplained(w.After, w.Depend, Evaluate(&real, Policy{Floor: version.DefaultFloor}))
	if got := briefs(missing); !slices.Equal(got, []string{"ASSET_API_LEVEL_UNSUPPORTED(n3,,APP/FAST/)"}) {
		t.Errorf("missing %q", got)
	}
	if got := briefs(unpredicted); !slices.Equal(got, []string{"LEAFNODE_UNAUDITED(n1,x,APP//)"}) {
		t.Errorf("unpredicted %q", got)
	}
}

// TestAssumeDowngradeUnderAFeatureItCannotDecode: going back to 2.12.15
// under a flow-control consumer crashes the server, peer or not.
func TestAssumeDowngradeUnderAFeatureItCannotDecode(t *testing.T) {
	c := levelAsset(consumer("S", "FC", "n1", "n1"), 4)
	for i, f := range releases.Features {
		if f.Name == "ack_flow_control" {
			c.Features = 1 << i
		}
	}
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3, Consumers: []snapshot.Asset{c}}
	w := assume(t, &snap, Policy{}, "n3=2.12.15")
	if got := briefs(w.Appear); !slices.Contains(got, "ASSET_CRASHES_SERVER(n3,,APP/S/FC)") || w.After.Status != findings.Critical {
		t.Errorf("appear %q, status %s", got, w.After.Status)
	}
	// Upgraded instead, nothing crashes.
	if w := assume(t, &snap, Policy{}, "n3=2.14.10"); len(w.Appear) != 1 || w.Appear[0].Code != findings.ClusterMixedVersions {
		t.Errorf("an upgrade: appear %q", briefs(w.Appear))
	}
}

// --assume names a release in the floor's form: one number is no release.
func TestParseAssumptionWantsARelease(t *testing.T) {
	if _, err := ParseAssumption("n2=14"); err == nil {
		t.Error(`--assume n2=14 was taken as a version`)
	}
}

func TestLevelForPrefersWhatServersReport(t *testing.T) {
	snap := &snapshot.Snapshot{Servers: []snapshot.Server{
		srv("n1", "c1", "2.16.0", 6), // a release after the table
		srv("n2", "c1", "2.14.0", 4),
		{Name: "n3", Version: "2.15.3", Parsed: version.Must("2.15.3"), APILevel: 0}, // JetStream off: reports no level
	}}
	tests := []struct {
		version string
		want    int
	}{
		{"2.16.0", 6},
		{"v2.16.0", 6},
		{"2.14.0", 4},
		{"2.15.3", 5}, // from the table: n3 does not run JetStream
		{"2.16.1", releases.LevelUnknown},
	}
	for _, tt := range tests {
		if got, why := LevelFor(snap, parsed(tt.version)); got != tt.want {
			t.Errorf("LevelFor(%q) = %d (%s), want %d", tt.version, got, why, tt.want)
		}
	}
	// Servers that disagree: the table decides, and knows nothing of 2.16.
	snap.Servers = append(snap.Servers, srv("n4", "c1", "2.16.0", 7))
	if got, _ := LevelFor(snap, version.Must("2.16.0")); got != releases.LevelUnknown {
		t.Errorf("LevelFor with disagreeing servers = %d, want unknown", got)
	}
}

// TestAssumeChoosesUnderTheWholePolicy: the leader chooser judges each
// group renamed, so the policy's asset patterns are left out of its
// evaluations; a pattern that selects the real stream must not hide what
// its leadership decides. n2, led by n1, goes below the floor: led by n2
// it is STREAM_LEADER_BELOW_FLOOR, the worse. With the patterns kept, the
// renamed stream was deselected and no leader was worse than another.
func TestAssumeChoosesUnderTheWholePolicy(t *testing.T) {
	snap := snapshot.Snapshot{Servers: cluster(), ExpectedCount: 3,
		Streams: []snapshot.Asset{stream("ORDERS", "n1", "n1", "n2", "n3")}}
	for _, p := range []Policy{
		{Floor: version.DefaultFloor},
		{Floor: version.DefaultFloor, Streams: []string{"ORD*"}, ShardPolicy: ShardPolicy{UnpulledAfter: time.Hour}},
	} {
		w := assume(t, &snap, p, "n2=2.12.15")
		if len(w.Depend) != 1 || w.Depend[0].Leader != "n2" {
			t.Errorf("policy %+v: depends %+v; want n2 assumed, the worse leader", p, w.Depend)
		}
		if got := briefs(w.After.Findings); !slices.ContainsFunc(got, func(b string) bool { return strings.HasPrefix(b, "STREAM_LEADER_BELOW_FLOOR(n2") }) {
			t.Errorf("policy %+v: after %q", p, got)
		}
	}
}
