package auditor

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// metaReply is a server's JSZ reply with only meta_cluster, in the shapes
// the servers send: a leader before 2.15.0 lists its replicas and a
// follower none; from 2.15.0 every member lists the others it knows. The
// leaders, lists and sizes of the cases below are those the 2.14.0 and
// 2.15.3 servers of TestServerNotMetaPeerOnRealServers sent after the
// peer-remove.
func metaReply(t *testing.T, leader string, size int, replicas ...string) *jszData {
	t.Helper()
	var list []string
	for _, r := range replicas {
		list = append(list, `{"name":"`+r+`","current":true,"active":1000,"peer":"`+peerID(r)+`"}`)
	}
	r, err := decodeJSZReply([]byte(`{"data":{"server_id":"X","meta_cluster":{"name":"c1","leader":"` + leader +
		`","peer":"` + peerID(leader) + `","replicas":[` + strings.Join(list, ",") + `],"cluster_size":` + strconv.Itoa(size) + `,"pending":0}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return r.Data
}

// metaSnapshot merges the replies, by reporter, into a snapshot of a
// cluster of three 2.14.0 servers.
func metaSnapshot(pages map[string]*jszData) *Snapshot {
	m := newMerger()
	for _, name := range sortedKeys(pages) {
		m.add(name, "", pages[name])
	}
	return &Snapshot{Servers: cluster(), Meta: m.metaGroups()}
}

func TestServerNotMetaPeer(t *testing.T) {
	unknownN3 := unknownPeerPrefix + peerID("n3") + ")"
	tests := []struct {
		name  string
		pages func(t *testing.T) map[string]*jszData
		want  []string
	}{
		{"2.14: the leader lists every follower", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 3, "n2", "n3"), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)}
		}, nil},
		{"2.14: n3 follows n1, which lists only n2", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"2.15: n3's own view lists n1 and n2; only the leader's counts", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2, "n1"), "n3": metaReply(t, "n1", 2, "n1", "n2")}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"a peer the leader cannot name yet is listed by its id", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 3, "n2", unknownN3), "n2": metaReply(t, "n1", 3), "n3": metaReply(t, "n1", 3)}
		}, nil},
		{"without the leader's reply nothing is judged", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)}
		}, nil},
		{"a server that follows no leader yet, or another, is not judged by this one's list", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "", 2)}
		}, nil},
		{"two meta groups in one domain (a leafnode's own JetStream): each follower by its own leader's list", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2),
				"x1": metaReply(t, "x1", 1)}
		}, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}},
		{"a follower still naming an old leader is not judged by the new one's list", func(t *testing.T) map[string]*jszData {
			return map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n2", 2)}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(metaSnapshot(tt.pages(t)), Policy{Floor: DefaultFloor})
			var got []string
			for _, f := range r.Findings {
				if f.Code == ServerNotMetaPeer {
					got = append(got, brief(f))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			if len(got) == 0 {
				return
			}
			f := findingOf(r, ServerNotMetaPeer)
			if r.Status != Critical || r.Owner(f) != "n3" || f.Version != "2.14.0" ||
				!strings.Contains(f.Message, "server n3 (2.14.0) follows JetStream meta leader n1, which does not list it as a peer (it lists n1, n2; cluster size 2)") {
				t.Errorf("status %s, owner %q, finding %+v", r.Status, r.Owner(f), f)
			}
		})
	}
}

// TestServerNotMetaPeerWhatIf: a what-if that moves the meta leader (n1
// downgraded below the floor) keeps the finding: membership is the group's
// replicated state, which no version change rewrites; and a what-if of
// one leader's group (the leader chooser's own evaluations) invents none.
func TestServerNotMetaPeerWhatIf(t *testing.T) {
	snap := metaSnapshot(map[string]*jszData{"n1": metaReply(t, "n1", 2, "n2"), "n2": metaReply(t, "n1", 2), "n3": metaReply(t, "n1", 2)})
	w := assume(t, snap, Policy{}, "n1=2.12.15")
	var got []string
	for _, f := range w.After.Findings {
		if f.Code == ServerNotMetaPeer {
			got = append(got, brief(f))
		}
	}
	if !slices.Equal(got, []string{"SERVER_NOT_META_PEER(n3,n1,//)"}) {
		t.Errorf("after the what-if: %v", got)
	}
	for _, f := range append(w.Appear, w.Gone...) {
		if f.Code == ServerNotMetaPeer {
			t.Errorf("the what-if changed %s", brief(f))
		}
	}
}

func findingOf(r *Report, c Code) Finding {
	for _, f := range r.Findings {
		if f.Code == c {
			return f
		}
	}
	return Finding{}
}
