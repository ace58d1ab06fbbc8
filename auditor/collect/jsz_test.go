package collect_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestJSZProjectionMatchesServerTypes asks servers of every version for JSZ
// and checks that the audit's projection of the reply reads what
// nats-server's own JSInfo type reads: names, leaders, peers, replicas and
// required levels of every stream and consumer, in plain and in operator
// (JWT) mode, where an account is its public key with its JWT's name beside.
func TestJSZProjectionMatchesServerTypes(t *testing.T) {
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) { testJSZProjectionMatchesServerTypes(t, mode) })
	}
}

func testJSZProjectionMatchesServerTypes(t *testing.T, mode natstest.Mode) {
	sys := mode.Start(t,
		natstest.Node("n1", natstest.Floor, "c1"),
		natstest.Node("n2", natstest.New, "c1"),
		natstest.Node("n3", natstest.Old, "c1"),
	)
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	if err := natstest.MoveMetaLeader(sysConn, "n1"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	for _, cfg := range []server.StreamConfig{
		{Name: "R3", Subjects: []string{"r3"}, Replicas: 3, Storage: server.FileStorage, AllowMsgTTL: true},
		{Name: "R1", Subjects: []string{"r1"}, Replicas: 1, Storage: server.MemoryStorage, Placement: &server.Placement{Tags: []string{"node:n3"}}},
		{Name: "FAST", Subjects: []string{"fast"}, Replicas: 3, Storage: server.FileStorage, AllowBatchPublish: true},
	} {
		if err := natstest.AddStream(app, cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stream string
		cfg    server.ConsumerConfig
	}{
		{"R3", server.ConsumerConfig{Durable: "plain", AckPolicy: server.AckExplicit}},
		{"R3", server.ConsumerConfig{Durable: "pinned", AckPolicy: server.AckExplicit, PriorityPolicy: server.PriorityPinnedClient,
			PriorityGroups: []string{"g"}, PinnedTTL: time.Minute}},
		{"R1", server.ConsumerConfig{Durable: "one", AckPolicy: server.AckNone}},
	} {
		if err := natstest.AddConsumer(app, c.stream, c.cfg); err != nil {
			t.Fatal(err)
		}
	}

	snap, err := collect.Collect(t.Context(), sysConn, collect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(server.JszEventOptions{JSzOptions: server.JSzOptions{Accounts: true, Streams: true, Consumer: true, Config: true}})
	type view struct {
		name, accountName, leader string
		peers                     []string
		replicas                  int
		level                     string
	}
	want := map[string]view{}
	for _, s := range snap.Servers {
		msg, err := sysConn.Request(collect.ServerSubject(s.ID, "JSZ"), req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var full server.ServerAPIJszResponse
		if err := json.Unmarshal(msg.Data, &full); err != nil {
			t.Fatal(err)
		}
		for _, acc := range full.Data.AccountDetails {
			for _, sd := range acc.Streams {
				add := func(name string, ci *server.ClusterInfo, replicas int, md map[string]string) {
					v := want[name]
					v.name, v.level = name, md[server.JSRequiredLevelMetadataKey]
					if acc.Name != acc.Id {
						v.accountName = acc.Name
					}
					v.replicas = max(v.replicas, replicas)
					v.peers = append(v.peers, s.Name)
					for _, p := range ci.Replicas {
						v.peers = append(v.peers, p.Name)
					}
					if ci.Leader == s.Name {
						v.leader = ci.Leader
					}
					want[name] = v
				}
				add(acc.Id+"/"+sd.Name, sd.Cluster, sd.Config.Replicas, sd.Config.Metadata)
				for _, ci := range sd.Consumer {
					add(acc.Id+"/"+sd.Name+"/"+ci.Name, ci.Cluster, max(ci.Config.Replicas, sd.Config.Replicas), ci.Config.Metadata)
				}
			}
		}
	}
	got := 0
	for _, a := range append(snap.Streams, snap.Consumers...) {
		name := a.Account + "/" + a.Stream
		if a.Consumer != "" {
			name += "/" + a.Consumer
		}
		w, ok := want[name]
		if !ok {
			t.Errorf("the audit found %s, the server types did not", name)
			continue
		}
		got++
		slices.Sort(w.peers)
		w.peers = slices.Compact(w.peers)
		level := ""
		if a.RequiredLevel > 0 || w.level == "0" {
			level = itoa(a.RequiredLevel)
		}
		// The features the projection detects account for the level the
		// server itself recorded (jetstream_versioning.go).
		featureLevel := 0
		for _, f := range a.Features.Features() {
			featureLevel = max(featureLevel, f.Level)
		}
		if featureLevel != a.RequiredLevel {
			t.Errorf("%s: features %v need level %d, the server recorded %d", name, a.Features.Names(), featureLevel, a.RequiredLevel)
		}
		if a.Leader != w.leader || !slices.Equal(a.Peers, w.peers) || a.Replicas != w.replicas || level != w.level || a.AccountName != w.accountName {
			t.Errorf("%s: audit read leader %q peers %v R%d level %q account name %q; server types read leader %q peers %v R%d level %q account name %q",
				name, a.Leader, a.Peers, a.Replicas, level, a.AccountName, w.leader, w.peers, w.replicas, w.level, w.accountName)
		}
		if want := sys.AccountKey(natstest.AppUser); a.Account != want {
			t.Errorf("%s: account %q, want APP's id %q", name, a.Account, want)
		}
	}
	if got != len(want) || got != 6 {
		t.Errorf("audit found %d assets, the server types %d, want 6", got, len(want))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
