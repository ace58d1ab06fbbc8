package collect

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestReplyProjectionsMatchServerTypes asks servers of every version for
// STATSZ and LEAFZ, decodes each reply into nats-server's own types and into
// the audit's projections, and compares what the audit reads.
func TestReplyProjectionsMatchServerTypes(t *testing.T) {
	spec := func(name, version string) natstest.Spec {
		s := natstest.Node(name, version, "c1")
		s.LeafListen = true
		return s
	}
	sys := natstest.Start(t, spec("n1", natstest.Floor), spec("n2", natstest.New), spec("n3", natstest.Old),
		natstest.Spec{Name: "l1", Version: natstest.Old, LeafRemotes: []natstest.Remote{{Hub: "n1", Accounts: []string{"APP"}}}},
		natstest.Spec{Name: "l2", Version: natstest.New, LeafRemotes: []natstest.Remote{{Hub: "n3", Accounts: []string{"APP", "SYS"}}}},
	)
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	// Start waits for the servers, not for every leafnode link.
	err := natstest.Eventually(30*time.Second, func() error {
		replies, err := natstest.Gather(nc, PingEndpointSubject("LEAFZ"), []byte("{}"), 4, 10*time.Second)
		if err != nil {
			return err
		}
		links := 0
		for _, m := range replies {
			var leafz server.ServerAPILeafzResponse
			if err := json.Unmarshal(m.Data, &leafz); err == nil && leafz.Data != nil {
				links += len(leafz.Data.Leafs)
			}
		}
		if links < 5 { // l1-n1 in APP; l2-n3 in APP and SYS, seen from both ends
			return fmt.Errorf("%d leafnode links up", links)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	replies, err := natstest.Gather(nc, PingSubject, []byte("{}"), 4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	leafLinks := 0
	for _, m := range replies {
		data := m.Data
		var full server.ServerStatsMsg
		if err := json.Unmarshal(data, &full); err != nil {
			t.Fatal(err)
		}
		_, srv, err := parseStatsz(data)
		if err != nil {
			t.Fatal(err)
		}
		si := full.Server
		want := snapshot.Server{ID: si.ID, Name: si.Name, Host: si.Host, Cluster: si.Cluster, Domain: si.Domain, Version: si.Version,
			Tags: si.Tags, JetStream: si.JetStreamEnabled(), ActiveServers: full.Stats.ActiveServers, Uptime: si.Time.Sub(full.Stats.Start),
			FeatureFlags: si.FeatureFlags}
		if js := full.Stats.JetStream; js != nil && js.Stats != nil {
			want.APILevel = js.Stats.API.Level
		}
		if srv.Name != want.Name || srv.ID != want.ID || srv.Host != want.Host || srv.Cluster != want.Cluster || srv.Domain != want.Domain ||
			srv.Version != want.Version || srv.Parsed.IsZero() || srv.Parsed != version.Must(si.Version) || !slices.Equal(srv.Tags, want.Tags) || srv.JetStream != want.JetStream ||
			srv.ActiveServers != want.ActiveServers || srv.Uptime != want.Uptime || srv.APILevel != want.APILevel ||
			!maps.Equal(srv.FeatureFlags, want.FeatureFlags) {
			t.Errorf("STATSZ of %s: projection %+v, server types %+v", si.Name, srv, want)
		}
		var proj statszReply
		_ = json.Unmarshal(data, &proj)
		var routes, wantRoutes, gateways, wantGateways []string
		for _, r := range proj.Stats.Routes {
			routes = append(routes, r.Name)
		}
		for _, r := range full.Stats.Routes {
			wantRoutes = append(wantRoutes, r.Name)
		}
		for _, g := range proj.Stats.Gateways {
			gateways = append(gateways, g.Name)
		}
		for _, g := range full.Stats.Gateways {
			wantGateways = append(wantGateways, g.Name)
		}
		if !slices.Equal(routes, wantRoutes) || !slices.Equal(gateways, wantGateways) || (si.Cluster == "c1" && len(routes) == 0) {
			t.Errorf("STATSZ of %s: routes %v gateways %v, server types %v %v", si.Name, routes, gateways, wantRoutes, wantGateways)
		}

		msg, err := nc.Request(ServerSubject(si.ID, "LEAFZ"), []byte("{}"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var fullLeafz server.ServerAPILeafzResponse
		var leafz leafzReply
		if err := json.Unmarshal(msg.Data, &fullLeafz); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(msg.Data, &leafz); err != nil || leafz.Data == nil || len(leafz.Data.Leafs) != len(fullLeafz.Data.Leafs) {
			t.Fatalf("LEAFZ of %s: %v %+v", si.Name, err, leafz)
		}
		for i, l := range fullLeafz.Data.Leafs {
			if got := leafz.Data.Leafs[i]; got.Name != l.Name || got.Account != l.Account {
				t.Errorf("LEAFZ of %s: projection %+v, server types %+v", si.Name, got, l)
			}
			leafLinks++
		}
	}
	if leafLinks < 3 { // l1 in APP to n1; l2 in APP and SYS to n3
		t.Errorf("%d leafnode links read, want at least 3", leafLinks)
	}

	// A reply's error reads as the server's own.
	data := []byte(`{"error":{"code":400,"err_code":10003,"description":"bad request"}}`)
	var full server.ServerAPILeafzResponse
	var proj leafzReply
	if json.Unmarshal(data, &full) != nil || json.Unmarshal(data, &proj) != nil || proj.Error.Error() != full.Error.Error() {
		t.Errorf("error %q, server's %q", proj.Error, full.Error)
	}
}
