package auditor

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// metaReply is a server's JSZ reply with only meta_cluster, in the shapes
// the servers send: a leader before 2.15.0 lists its replicas and a
// follower none; from 2.15.0 every member lists the others it knows. The
// leaders, lists and sizes of the cases below are those the 2.14.0 and
// 2.15.3 servers of TestServerNotMetaPeerOnRealServers sent after the
// peer-remove.
func metaReply(t *testing.T, leader string, size int, replicas ...string) []byte {
	t.Helper()
	var list []string
	for _, r := range replicas {
		list = append(list, `{"name":"`+r+`","current":true,"active":1000,"peer":"`+snapshot.PeerID(r)+`"}`)
	}
	return []byte(`{"data":{"server_id":"X","meta_cluster":{"name":"c1","leader":"` + leader +
		`","peer":"` + snapshot.PeerID(leader) + `","replicas":[` + strings.Join(list, ",") + `],"cluster_size":` + strconv.Itoa(size) + `,"pending":0}}}`)
}

// metaSnapshot merges the replies, by reporter, into a snapshot of a
// cluster of three 2.14.0 servers.
func metaSnapshot(t *testing.T, pages map[string][]byte) *snapshot.Snapshot {
	t.Helper()
	snap := fromPages(t, pages)
	snap.Servers = cluster()
	return snap
}

// fromPages folds the JSZ replies, in the order of their reporters' names,
// into a snapshot without servers.
func fromPages(t *testing.T, pages map[string][]byte) *snapshot.Snapshot {
	t.Helper()
	var replies []collect.JSZReply
	for _, name := range slices.Sorted(maps.Keys(pages)) {
		replies = append(replies, collect.JSZReply{Server: name, Body: pages[name]})
	}
	snap, err := collect.FromJSZ(replies...)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestServerNotMetaPeer(t *testing.T) {
	unknownN3 := snapshot.UnknownPeerPrefix + snapshot.PeerID("n3") + ")"
	tests := []struct {
		name  string
		pages func(t *testing.T) map[string][]byte
		want  []string
	}{
		{"2.14: the leader lists every follower", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 3, "n2", "n3"), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)}
		}, nil},
		{"2.14: n3 follows n1, which lists only n2", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"2.15: n3's own view lists n1 and n2; only the leader's counts", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2, "n1"), "n3": metaReply(t, "n1", 2, "n1", "n2")}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"a peer the leader cannot name yet is listed by its id", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 3, "n2", unknownN3), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)}
		}, nil},
		{"without the leader's reply nothing is judged", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)}
		}, nil},
		{"a server that follows no leader yet, or another, is not judged by this one's list", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "", 2)}
		}, nil},
		{"two meta groups in one domain (a leafnode's own JetStream): each follower by its own leader's list", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2),
				"x1": metaReply(t, "x1", 1)}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"a follower still naming an old leader is not judged by the new one's list", func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n2", 2)}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(metaSnapshot(t, tt.pages(t)), Policy{Floor: version.DefaultFloor})
			var got []string
			for _, f := range r.Findings {
				if f.Code == findings.ServerNotMetaPeer {
					got = append(got, brief(f))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			if len(got) == 0 {
				return
			}
			f := findingOf(r, findings.ServerNotMetaPeer)
			if r.Status != findings.Critical || r.Owner(f) != "n3" || f.Version != "2.14.0" ||
				!strings.Contains(f.Message, "server n3 (2.14.0) follows JetStream meta leader n1, which does not list it as a peer (it lists n1, n2; cluster size 2)") {
				t.Errorf("status %s, owner %q, finding %+v", r.Status, r.Owner(f), f)
			}
		})
	}
}

// TestServerNotMetaPeerWhatIf: a what-if that moves the meta leader (n2
// downgraded below the floor is the worse leader) keeps the finding, now
// naming n2: membership is the group's replicated state, which no version
// change rewrites, and n3 follows whoever leads. It is the same finding,
// neither gone nor new; and a what-if of one leader's group (the leader
// chooser's own evaluations) invents none.
func TestServerNotMetaPeerWhatIf(t *testing.T) {
	snap := metaSnapshot(t, map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)})
	w := assume(t, snap, Policy{Floor: version.Must("2.14.0")}, "n2=2.12.15")
	if w.After.Snapshot.Meta[0].Leader != "n2" {
		t.Fatalf("the what-if left the meta leader at %s; want n2, the worse", w.After.Snapshot.Meta[0].Leader)
	}
	var got []string
	for _, f := range w.After.Findings {
		if f.Code == findings.ServerNotMetaPeer {
			got = append(got, brief(f))
			if !strings.Contains(f.Message, "follows JetStream meta leader n2, which does not list it as a peer (it lists n2, n1; cluster size 2)") {
				t.Errorf("after the what-if: %s", f.Message)
			}
		}
	}
	if !slices.Equal(got, []string{"SERVER_NOT_META_PEER(n3,n2,//)"}) {
		t.Errorf("after the what-if: %v", got)
	}
	for _, f := range append(w.Appear, w.Gone...) {
		if f.Code == findings.ServerNotMetaPeer {
			t.Errorf("the what-if changed %s", brief(f))
		}
	}
	if snap.Meta[0].Leader != "n1" || snap.Meta[0].Follows["n3"] != "n1" || snap.Meta[0].Listed["n1"] == nil {
		t.Errorf("the what-if changed the audit's own snapshot: %+v", snap.Meta[0])
	}
}

func findingOf(r *findings.Report, c findings.Code) findings.Finding {
	for _, f := range r.Findings {
		if f.Code == c {
			return f
		}
	}
	return findings.Finding{}
}

// TestPlanCountsOnlyMetaMembers: a server that follows the meta leader but
// is not in its list is no member of the meta group. Restarting the leader
// of a group of two leaves one of two up, below its quorum; counting the
// outsider would call it a bare quorum, two of three. Restarting the
// outsider touches no meta quorum. A replica the leader cannot name yet is
// found by its RAFT peer id.
func TestPlanCountsOnlyMetaMembers(t *testing.T) {
	snap := metaSnapshot(t, map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 3)})
	meta := func(gs []GroupImpact) *GroupImpact {
		for i := range gs {
			if gs[i].Kind == "meta" {
				return &gs[i]
			}
		}
		return nil
	}
	down, bare := restartImpact(snap, Policy{}, "n1")
	if g := meta(down); g == nil || g.Peers != 2 || g.Up != 1 || g.Quorum != 2 {
		t.Errorf("restarting n1: meta group down %+v, bare %+v; want down, 1 of 2 up, quorum 2", g, meta(bare))
	}
	down, bare = restartImpact(snap, Policy{}, "n3")
	if g, b := meta(down), meta(bare); g != nil || b != nil {
		t.Errorf("restarting n3, no member: meta group down %+v, bare %+v; want neither", g, b)
	}

	// Each step of a plan is a what-if that may move the meta leader (to
	// n2, once it runs 2.11.12, below the floor: the worse leader); the
	// group's members stay the two.
	for _, to := range []string{"2.15.3", "2.11.12"} {
		plan, err := MakePlan(Evaluate(snap, Policy{Floor: version.Must("2.12.0")}), Policy{Floor: version.Must("2.12.0")}, version.Must(to), PlanScope{})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range plan.Steps {
			g := meta(append(slices.Clone(st.Unavailable), st.BareQuorum...))
			if (st.Server == "n3") != (g == nil) || (g != nil && (g.Peers != 2 || g.Up != 1)) {
				t.Errorf("plan to %s, step %d (%s): meta group %+v; want none for n3, else 1 of 2 up", to, st.Step, st.Server, g)
			}
		}
	}

	snap = metaSnapshot(t, map[string][]byte{"n1": metaReply(t, "n1", 3, "n2", snapshot.UnknownPeerPrefix+snapshot.PeerID("n3")+")"), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)})
	if peers, size := metaPeers(snap, snap.Meta[0]); !slices.Equal(peers, []string{"n1", "n2", "n3"}) || size != 3 {
		t.Errorf("members %v of %d; want n1, n2, n3 of 3", peers, size)
	}
	down, bare = restartImpact(snap, Policy{}, "n1")
	if g, b := meta(down), meta(bare); g != nil || b == nil || b.Peers != 3 || b.Up != 2 {
		t.Errorf("restarting n1 of three: meta group down %+v, bare %+v; want a bare quorum, 2 of 3", g, b)
	}
}

// TestServerNotMetaPeerVotes: the members whose release counts any
// server's vote (before nats-server #8353), or that know fewer peers than
// their cluster size, are named in the finding (but the leader, whose loss
// it speaks of) and in a plan's reason for a group below its quorum, where
// the outsiders' votes make up that quorum; members that count only each
// other's are not.
func TestServerNotMetaPeerVotes(t *testing.T) {
	const cite = ", as a candidate of a release before 2.12.14, or of 2.14.0 to 2.14.3, does, or of any release while it knows fewer peers than its cluster size (nats-server #8353)"
	twoOfThree := func(t *testing.T) map[string][]byte {
		return map[string][]byte{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)}
	}
	for _, tt := range []struct {
		name             string
		versions         [3]string
		pages            func(t *testing.T) map[string][]byte
		restart          string
		finding, outcome string
	}{
		{"2.14.0 members count n3's vote", [3]string{"2.14.0", "2.14.0", "2.15.3"}, twoOfThree, "n1",
			"; n2 (2.14.0) counts its vote" + cite + ": once the meta leader is lost, a leader can be elected with it, n3 itself included",
			"1 of 2 peers up while n1 restarts, below the quorum of 2: unavailable; but n2 (2.14.0) counts the vote of n3, no member" + cite + ": with it a leader can be elected"},
		{"a 2.14.3 member beside a 2.14.4 leader", [3]string{"2.14.4", "2.14.3", "2.14.0"}, twoOfThree, "n1",
			"; n2 (2.14.3) counts its vote, as",
			"1 of 2 peers up while n1 restarts, below the quorum of 2: unavailable; but n2 (2.14.3) counts the vote of n3, no member, as"},
		{"the leader alone counts it: the finding speaks of its loss", [3]string{"2.14.0", "2.15.3", "2.14.0"}, twoOfThree, "n2",
			"",
			"1 of 2 peers up while n2 restarts, below the quorum of 2: unavailable; but n1 (2.14.0) counts the vote of n3, no member, as"},
		{"members of 2.12.14 and 2.15.3 count only each other's", [3]string{"2.12.14", "2.15.3", "2.10.27"}, twoOfThree, "n1",
			"", "1 of 2 peers up while n1 restarts, below the quorum of 2: unavailable"},
		{"2.15.3 members that know fewer peers than their size count it", [3]string{"2.15.3", "2.15.3", "2.15.3"}, func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 3, "n2"), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)}
		}, "n1",
			"; n2 (2.15.3) counts its vote, as",
			"1 of 3 peers up while n1 restarts, below the quorum of 2: unavailable; but n2 (2.15.3) counts the vote of n3, no member, as"},
		{"one outsider's vote does not make up a quorum of three", [3]string{"2.14.0", "2.14.0", "2.14.0"}, func(t *testing.T) map[string][]byte {
			return map[string][]byte{"n1": metaReply(t, "n1", 5, "n2", "x", "y", "z"), "n2": metaReply(t, "n1", 5), "n3": metaReply(t, "n1", 5)}
		}, "n2",
			"; n2 (2.14.0) counts its vote, as",
			"1 of 5 peers up while n2 restarts, below the quorum of 3: unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			snap := metaSnapshot(t, tt.pages(t))
			for i, v := range tt.versions {
				snap.Servers[i].SetVersion(v)
			}
			f := findingOf(Evaluate(snap, Policy{}), findings.ServerNotMetaPeer)
			_, tail, _ := strings.Cut(f.Message, "no stream or consumer can be placed on n3")
			if f.Code == "" || (tt.finding == "" && tail != "") || !strings.HasPrefix(tail, tt.finding) {
				t.Errorf("finding %q; want it to end %q", f.Message, tt.finding)
			}
			down, _ := restartImpact(snap, Policy{}, tt.restart)
			var reason string
			for _, g := range down {
				if g.Kind == "meta" {
					reason = g.Reason
				}
			}
			if !strings.HasPrefix(reason, tt.outcome) || (!strings.Contains(tt.outcome, "; but") && reason != tt.outcome) {
				t.Errorf("restarting %s: %q; want %q", tt.restart, reason, tt.outcome)
			}
		})
	}
}

// TestPlanJudgesEachMetaGroupOfADomain: a leafnode's own JetStream beside
// its hub's, in one domain, is a meta group of its own: a restart in
// either is judged against its own leader's list, and a server that
// follows the other group's leader is no outsider of this one.
func TestPlanJudgesEachMetaGroupOfADomain(t *testing.T) {
	pages := map[string][]byte{
		"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2),
		"l1": metaReply(t, "l1", 3, "l2", "l3"), "l2": metaReply(t, "l1", 3), "l3": metaReply(t, "l1", 3),
	}
	snap := fromPages(t, pages)
	snap.Servers = append(cluster(), srv("l1", "leaf", "2.14.0", 4), srv("l2", "leaf", "2.14.0", 4), srv("l3", "leaf", "2.14.0", 4))
	if len(snap.Meta) != 1 || len(snap.Meta[0].Groups()) != 2 {
		t.Fatalf("meta groups %+v; want one domain of two groups", snap.Meta)
	}
	for server, want := range map[string]string{
		"n2": "led by n1, 1 of 2 peers up while n2 restarts, below the quorum of 2: unavailable; but n1 (2.14.0) counts the vote of n3, no member, as",
		"l2": "led by l1, 2 of 3 peers up while l2 restarts: a bare quorum, one more failure takes it down",
		"n3": "",
	} {
		down, bare := restartImpact(snap, Policy{}, server)
		var reasons []string
		for _, g := range append(down, bare...) {
			if g.Kind == "meta" {
				reasons = append(reasons, g.Reason)
			}
		}
		if (want == "") != (len(reasons) == 0) || (want != "" && (len(reasons) != 1 || !strings.HasPrefix(reasons[0], want))) {
			t.Errorf("restarting %s: %q; want %q", server, reasons, want)
		}
	}
}
