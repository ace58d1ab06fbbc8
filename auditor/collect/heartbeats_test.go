package collect

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
)

// beat is a STATSZ heartbeat as nats-server publishes it, built from its
// own types so that the projection reads what a server sends.
func beat(t *testing.T, name, id, version string, routes []string, gateways ...string) []byte {
	t.Helper()
	return beatIn(t, "", name, id, version, routes, gateways...)
}

// beatIn is beat from a server of cluster.
func beatIn(t *testing.T, cluster, name, id, version string, routes []string, gateways ...string) []byte {
	t.Helper()
	m := server.ServerStatsMsg{Server: server.ServerInfo{Name: name, ID: id, Version: version, Cluster: cluster, Time: time.Now()}}
	for _, r := range routes {
		m.Stats.Routes = append(m.Stats.Routes, &server.RouteStat{Name: r})
	}
	for _, g := range gateways {
		m.Stats.Gateways = append(m.Stats.Gateways, &server.GatewayStat{Name: g})
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func goingEvent(t *testing.T, name string) []byte {
	t.Helper()
	data, err := json.Marshal(server.ServerInfo{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHeartbeats feeds one tracker a sequence of events and checks, step by
// step, which ask for an audit and why.
func TestHeartbeats(t *testing.T) {
	n23 := []string{"n2", "n3"}
	type step struct {
		name string
		// one of
		statsz, shutdown, lameduck []byte
		want                       string // "" asks for nothing
	}
	tests := []struct {
		name  string
		last  *snapshot.Snapshot
		steps []step
	}{
		{"before any audit, servers heard of first are the first audit's", nil, []step{
			{name: "n1 first heard", statsz: beat(t, "n1", "A", "2.14.0", n23)},
			{name: "the same again", statsz: beat(t, "n1", "A", "2.14.0", n23)},
		}},
		{"held against the last audit", &snapshot.Snapshot{Servers: []snapshot.Server{{Name: "n1", ID: "A", Version: "2.14.0"}, {Name: "n2", ID: "B", Version: "2.12.0"}}}, []step{
			{name: "as audited", statsz: beat(t, "n1", "A", "2.14.0", n23)},
			{name: "another process than audited", statsz: beat(t, "n2", "B2", "2.14.0", nil),
				want: "server n2 runs 2.14.0 (id B2), the last audit saw 2.12.0 (id B)"},
			{name: "not audited", statsz: beat(t, "n3", "C", "2.14.0", nil), want: "server n3 (2.14.0) was not in the last audit"},
		}},
		{"first heard without a route the last audit had", &snapshot.Snapshot{Servers: []snapshot.Server{
			{Name: "n1", ID: "A", Version: "2.14.0", Cluster: "c1"}, {Name: "n2", ID: "B", Version: "2.14.0", Cluster: "c1"},
			{Name: "n3", ID: "C", Version: "2.14.0", Cluster: "c1"}, {Name: "x1", ID: "X", Version: "2.14.0", Cluster: "other"},
		}}, []step{
			{name: "n2 routed to all of c1, not to another cluster's x1", statsz: beatIn(t, "c1", "n2", "B", "2.14.0", []string{"n1", "n3"})},
			{name: "n1 no longer routed to n3 (killed: no SHUTDOWN)", statsz: beatIn(t, "c1", "n1", "A", "2.14.0", []string{"n2"}),
				want: "server n1 has no route to n3, which the last audit saw"},
			{name: "n3 shuts down", shutdown: goingEvent(t, "n3"), want: "server n3 shut down"},
		}},
		{"a route to a server that shut down is not asked for twice", &snapshot.Snapshot{Servers: []snapshot.Server{
			{Name: "n1", ID: "A", Version: "2.14.0", Cluster: "c1"}, {Name: "n3", ID: "C", Version: "2.14.0", Cluster: "c1"},
		}}, []step{
			{name: "n3 first heard", statsz: beatIn(t, "c1", "n3", "C", "2.14.0", []string{"n1"})},
			{name: "n3 shuts down", shutdown: goingEvent(t, "n3"), want: "server n3 shut down"},
			{name: "n1 first heard, without the route", statsz: beatIn(t, "c1", "n1", "A", "2.14.0", nil)},
		}},
		{"changes", &snapshot.Snapshot{}, []step{
			{name: "first heard", statsz: beat(t, "n1", "A", "2.12.0", n23, "c2"), want: "server n1 (2.12.0) was not in the last audit"},
			{name: "links in another order", statsz: beat(t, "n1", "A", "2.12.0", []string{"n3", "n2", "n2"}, "c2")},
			{name: "upgraded in place", statsz: beat(t, "n1", "A", "2.14.0", n23, "c2"), want: "server n1 runs 2.14.0, was 2.12.0"},
			{name: "restarted", statsz: beat(t, "n1", "A2", "2.14.0", n23, "c2"), want: "server n1 restarted (2.14.0, id A2, was A)"},
			{name: "route lost, gateway gained", statsz: beat(t, "n1", "A2", "2.14.0", []string{"n2"}, "c2", "c3"),
				want: "server n1's routes or gateways changed: lost route n3, gained gateway c3"},
		}},
		{"a shutdown and the comeback", &snapshot.Snapshot{}, []step{
			{name: "n1", statsz: beat(t, "n1", "A", "2.14.0", []string{"n2"}), want: "server n1 (2.14.0) was not in the last audit"},
			{name: "n2", statsz: beat(t, "n2", "B", "2.14.0", []string{"n1"}), want: "server n2 (2.14.0) was not in the last audit"},
			{name: "n2 shuts down", shutdown: goingEvent(t, "n2"), want: "server n2 shut down"},
			{name: "n1 loses the route to n2, already asked for", statsz: beat(t, "n1", "A", "2.14.0", nil)},
			{name: "n2's heartbeat from before its SHUTDOWN, handled after it", statsz: beat(t, "n2", "B", "2.14.0", []string{"n1"})},
			{name: "n2 back, a new process", statsz: beat(t, "n2", "B2", "2.14.0", []string{"n1"}), want: "server n2 is back (2.14.0, id B2)"},
			{name: "n1 regains the route", statsz: beat(t, "n1", "A", "2.14.0", []string{"n2"}), want: "server n1's routes or gateways changed: gained route n2"},
		}},
		{"a server that shut down before its first heartbeat came", &snapshot.Snapshot{}, []step{
			{name: "n1", statsz: beat(t, "n1", "A", "2.14.0", n23), want: "server n1 (2.14.0) was not in the last audit"},
			{name: "n3 shuts down, never heard", shutdown: goingEvent(t, "n3"), want: "server n3 shut down"},
			{name: "n1 loses the route to n3, already asked for", statsz: beat(t, "n1", "A", "2.14.0", []string{"n2"})},
			{name: "n3's heartbeat from before its SHUTDOWN, handled after it", statsz: beat(t, "n3", "NID", "2.14.0", []string{"n1"})},
			{name: "n3 back, a new process", statsz: beat(t, "n3", "C2", "2.14.0", []string{"n1"}), want: "server n3 is back (2.14.0, id C2)"},
		}},
		{"lame duck is not gone", &snapshot.Snapshot{}, []step{
			{name: "n1", statsz: beat(t, "n1", "A", "2.14.0", []string{"n2"}), want: "server n1 (2.14.0) was not in the last audit"},
			{name: "n2", statsz: beat(t, "n2", "B", "2.14.0", []string{"n1"}), want: "server n2 (2.14.0) was not in the last audit"},
			{name: "n2 in lame duck mode", lameduck: goingEvent(t, "n2"), want: "server n2 entered lame duck mode"},
			{name: "n1 loses the route to n2", statsz: beat(t, "n1", "A", "2.14.0", nil), want: "server n1's routes or gateways changed: lost route n2"},
			{name: "n2 heard again, unchanged", statsz: beat(t, "n2", "B", "2.14.0", []string{"n1"})},
		}},
		{"an event that names no server", &snapshot.Snapshot{}, []step{
			{name: "shutdown with an empty body", shutdown: []byte("{}"), want: "server id NID shut down"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHeartbeats(func() *snapshot.Snapshot { return tc.last })
			for _, s := range tc.steps {
				var got string
				switch {
				case s.statsz != nil:
					hb, err := ParseHeartbeat(s.statsz)
					if err != nil {
						t.Fatalf("%s: %v", s.name, err)
					}
					got = h.Statsz(hb)
				case s.shutdown != nil:
					got = h.Shutdown("$SYS.SERVER.NID.SHUTDOWN", s.shutdown)
				case s.lameduck != nil:
					got = h.LameDuck("$SYS.SERVER.NID.LAMEDUCK", s.lameduck)
				}
				if got != s.want {
					t.Errorf("%s: %q, want %q", s.name, got, s.want)
				}
			}
		})
	}
}

func TestHeartbeatsRejectUnreadable(t *testing.T) {
	for _, data := range []string{"", "{", `{"server":{"id":"A"}}`, `{"server":{"name":"n1"}}`} {
		if hb, err := ParseHeartbeat([]byte(data)); err == nil {
			t.Errorf("%q: read as a heartbeat (%+v)", data, hb.srv)
		}
	}
}

func TestLeafEvent(t *testing.T) {
	ev := func(kind string) []byte {
		data, err := json.Marshal(server.ConnectEventMsg{Server: server.ServerInfo{Name: "n1", ID: "A"},
			Client: server.ClientInfo{Kind: kind, Name: "l1", Account: "APP"}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tests := []struct {
		subject         string
		data            []byte
		want            string
		connected, leaf bool
	}{
		{"$SYS.ACCOUNT.APP.CONNECT", ev("Leafnode"), "leafnode l1 connected on server n1 (account APP)", true, true},
		{"$SYS.ACCOUNT.APP.DISCONNECT", ev("Leafnode"), "leafnode l1 disconnected on server n1 (account APP)", false, true},
		{"$SYS.ACCOUNT.APP.CONNECT", ev("Client"), "", false, false},
		{"$SYS.ACCOUNT.APP.CONNECT", []byte(`{"kind":"Leafnode"`), "", false, false},
	}
	for _, tc := range tests {
		reason, connected, leaf := LeafEvent(tc.subject, tc.data)
		if reason != tc.want || connected != tc.connected || leaf != tc.leaf {
			t.Errorf("%s %s: %q %v %v, want %q %v %v", tc.subject, tc.data, reason, connected, leaf, tc.want, tc.connected, tc.leaf)
		}
	}
}
