package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// The TestFact tests pin what real nats-server releases do where the
// product's words (finding messages, metric HELP, README, alerts) describe
// server behaviour, together with what check reports about it. Server
// source lines cited are in the nats-server module of that version.

// TestFactAPIGapsOfOldPeers runs one cluster of every harness version:
// n1 2.15.3, n2 2.14.0, n3 2.10.27 (no API levels), n4 2.12.15 (level 3).
// Streams tagged "ttl" land on n1, n2, n3; streams tagged "pin" on n1, n2, n4.
func TestFactAPIGapsOfOldPeers(t *testing.T) {
	t.Parallel()
	tagged := func(sp natstest.Spec, tags ...string) natstest.Spec {
		sp.Tags = append(sp.Tags, tags...)
		return sp
	}
	sys := natstest.Start(t,
		tagged(node("n1", natstest.New), "ttl", "pin"),
		tagged(node("n2", natstest.Floor), "ttl", "pin"),
		tagged(node("n3", natstest.NoLevels), "ttl"),
		tagged(node("n4", natstest.Old), "pin"),
	)
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	// Older meta leaders reject or drop config fields they do not know.
	if err := natstest.MoveMetaLeader(sysConn, "n1", "n2", "n3", "n4"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)

	t.Run("API levels", func(t *testing.T) {
		// jetstream_versioning.go JSApiLevel: 2.12.15 3, 2.14.0 4, 2.15.3 5;
		// 2.10.27's JetStreamAPIStats has no level field at all.
		want := map[string]string{"n1": "5", "n2": "4", "n3": "none", "n4": "3"}
		err := natstest.Eventually(10*time.Second, func() error {
			msgs, err := natstest.Gather(sysConn, "$SYS.REQ.SERVER.PING.JSZ", nil, 4, 2*time.Second)
			if err != nil {
				return err
			}
			got := map[string]string{}
			for _, m := range msgs {
				var resp struct {
					Server server.ServerInfo `json:"server"`
					Data   struct {
						API map[string]json.RawMessage `json:"api"`
					} `json:"data"`
				}
				if err := json.Unmarshal(m.Data, &resp); err != nil {
					return err
				}
				level, ok := resp.Data.API["level"]
				if !ok {
					level = []byte("none")
				}
				got[resp.Server.Name] = string(level)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("JSZ api.level by server %v, want %v", got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("UNPIN answered by a 2.12 leader, RESET not", func(t *testing.T) {
		err := natstest.AddStream(app, server.StreamConfig{Name: "PIN", Subjects: []string{"pin.>"}, Replicas: 3,
			Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"pin"}}})
		if err != nil {
			t.Fatal(err)
		}
		err = natstest.AddConsumer(app, "PIN", server.ConsumerConfig{Durable: "pinned", AckPolicy: server.AckExplicit, Replicas: 3,
			PriorityPolicy: server.PriorityPinnedClient, PriorityGroups: []string{"jobs"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := natstest.MoveConsumerLeader(app, "PIN", "pinned", "n4"); err != nil {
			t.Fatal(err)
		}
		// 2.12.15 jetstream_api.go:3794: in a cluster only the consumer's
		// leader answers UNPIN; :3866-3871 unpins and replies.
		msg, err := app.Request("$JS.API.CONSUMER.UNPIN.PIN.pinned", []byte(`{"group":"jobs"}`), 2*time.Second)
		if err != nil {
			t.Fatalf("UNPIN of a consumer led by 2.12.15: %v, want an answer", err)
		}
		t.Logf("UNPIN reply: %s", msg.Data)
		var unpin server.JSApiConsumerUnpinResponse
		if err := json.Unmarshal(msg.Data, &unpin); err != nil || unpin.Type != server.JSApiConsumerUnpinResponseType || unpin.Error != nil {
			t.Fatalf("UNPIN reply %s (%v), want a %s without error", msg.Data, err, server.JSApiConsumerUnpinResponseType)
		}
		if err := natstest.ResetConsumer(app, "PIN", "pinned", 2*time.Second); !errors.Is(err, nats.ErrTimeout) {
			t.Fatalf("RESET of a consumer led by 2.12.15 returned %v, want a timeout", err)
		}
		if ci, err := natstest.ConsumerInfo(app, "PIN", "pinned"); err != nil || ci.Cluster == nil || ci.Cluster.Leader != "n4" {
			t.Fatalf("the leader moved away from n4 during the test (%v): the replies prove nothing", err)
		}

		_, out := checkJSONOf(t, sys, "n1")
		var led []findings.Finding
		for _, f := range withCode(out.Findings, findings.ConsumerLeaderBelowFloor) {
			if f.Stream == "PIN" {
				led = append(led, f)
			}
		}
		if len(led) != 1 || led[0].Consumer != "pinned" || led[0].Server != "n4" || led[0].Version != "2.12.15" {
			t.Fatalf("CONSUMER_LEADER_BELOW_FLOOR for PIN %+v, want pinned led by n4 (2.12.15)%s", led, codes(out.Findings))
		}
		// The words follow what the servers did just above.
		if m := led[0].Message; !strings.Contains(m, "RESET (first in 2.14.0) to it goes unanswered") || strings.Contains(m, "UNPIN") {
			t.Errorf("message %q", m)
		}
	})

	t.Run("a 2.10 peer runs a TTL stream online and diverges", func(t *testing.T) {
		err := natstest.AddStream(app, server.StreamConfig{Name: "TTL", Subjects: []string{"ttl.>"}, Replicas: 3,
			Storage: server.FileStorage, AllowMsgTTL: true, Placement: &server.Placement{Tags: []string{"ttl"}}})
		if err != nil {
			t.Fatal(err)
		}
		// The 2.15 leader applies the TTL; a 2.10 leader would ignore it.
		if err := natstest.MoveStreamLeader(app, "TTL", "n1"); err != nil {
			t.Fatal(err)
		}
		pub := nats.NewMsg("ttl.a")
		pub.Header.Set("Nats-TTL", "1s")
		ack, err := natstest.PublishMsg(app, pub, 2*time.Second)
		if err != nil {
			t.Fatalf("publish with Nats-TTL: %v", err)
		}
		if ack.Sequence != 1 {
			t.Fatalf("publish with Nats-TTL: stored as message %d, want 1", ack.Sequence)
		}
		// Every replica stored message 1; the 2.11+ ones expire it after
		// its TTL, the 2.10 one keeps it.
		var state map[string]string
		err = natstest.Eventually(20*time.Second, func() error {
			hosts, err := streamOnServers(sysConn, "TTL")
			if err != nil {
				return err
			}
			state = map[string]string{}
			for name, sd := range hosts {
				state[name] = fmt.Sprintf("%d msgs, last seq %d", sd.State.Msgs, sd.State.LastSeq)
			}
			want := map[string]string{"n1": "0 msgs, last seq 1", "n2": "0 msgs, last seq 1", "n3": "1 msgs, last seq 1"}
			if fmt.Sprint(state) != fmt.Sprint(want) {
				return fmt.Errorf("TTL replicas %v, want %v", state, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("TTL replicas after the 1s TTL: %v", state)

		_, out := checkJSONOf(t, sys, "n1")
		got := streamFindings(out, findings.AssetAPILevelUnsupported, "TTL")
		if len(got) != 1 || got[0].Server != "n3" {
			t.Fatalf("ASSET_API_LEVEL_UNSUPPORTED for TTL %+v, want one for n3%s", got, codes(out.Findings))
		}
		if m := got[0].Message; !strings.Contains(m, "from before API levels: it runs the stream online") || !strings.Contains(m, "diverges") {
			t.Errorf("message %q", m)
		}
	})

	t.Run("a 2.12 peer runs a level-4 stream offline", func(t *testing.T) {
		// Fast batch publishing needs API level 4.
		err := natstest.AddStream(app, server.StreamConfig{Name: "FAST", Subjects: []string{"fast.>"}, Replicas: 3,
			Storage: server.FileStorage, AllowBatchPublish: true, Placement: &server.Placement{Tags: []string{"pin"}}})
		if err != nil {
			t.Fatal(err)
		}
		// 2.12.15 decodes assignments strictly (jetstream_cluster.go:9206-9219):
		// an unknown field makes the asset unsupported with a config error
		// (:236-239), before the required level (:242-245) is even looked at.
		// Every level-4 feature adds a field or value 2.12 does not know, so
		// this, not "required API level", is the reason 2.12 gives. It logs
		// it (:4874) and answers the cluster's stream info requests
		// ($JSC.SI.<account>.<stream>, system account) with it (:273-276).
		const reason = `unsupported - config error: unknown field "allow_batched"`
		err = natstest.Eventually(20*time.Second, func() error {
			if line := "Detected unsupported stream 'APP > FAST': " + reason; !strings.Contains(sys.Log("n4"), line) {
				return fmt.Errorf("n4 did not log %q", line)
			}
			msgs, err := natstest.Gather(sysConn, "$JSC.SI.APP.FAST", nil, 3, 2*time.Second)
			if err != nil {
				return err
			}
			var reasons []string
			for _, m := range msgs {
				var si struct {
					OfflineReason string `json:"offline_reason"`
				}
				if err := json.Unmarshal(m.Data, &si); err != nil {
					return err
				}
				reasons = append(reasons, si.OfflineReason)
			}
			if !slices.Contains(reasons, reason) {
				return fmt.Errorf("$JSC.SI.APP.FAST offline reasons %q, want one %q", reasons, reason)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Offline: n4 runs no stream for it, so its own JSZ does not list it.
		err = natstest.Eventually(10*time.Second, func() error {
			hosts, err := streamOnServers(sysConn, "FAST")
			if err != nil {
				return err
			}
			if names := slices.Sorted(maps.Keys(hosts)); strings.Join(names, ",") != "n1,n2" {
				return fmt.Errorf("FAST listed in the JSZ of %v, want n1 and n2 only", names)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		_, out := checkJSONOf(t, sys, "n1")
		got := streamFindings(out, findings.AssetAPILevelUnsupported, "FAST")
		if len(got) != 1 || got[0].Server != "n4" {
			t.Fatalf("ASSET_API_LEVEL_UNSUPPORTED for FAST %+v, want one for n4%s", got, codes(out.Findings))
		}
		if m := got[0].Message; !strings.Contains(m, "supports 3: it holds the stream offline") {
			t.Errorf("message %q", m)
		}
	})
}

// TestFactLameDuck puts one server at a time in lame duck mode: n2
// 2.12.15, n3 2.14.0, n4 2.15.3, next to n1 2.15.3 that check connects to.
func TestFactLameDuck(t *testing.T) {
	var specs []natstest.Spec
	for _, n := range []struct{ name, version string }{{"n1", natstest.New}, {"n2", natstest.Old}, {"n3", natstest.Floor}, {"n4", natstest.New}} {
		sp := node(n.name, n.version)
		// A grace period longer than any subtest: with a client connected
		// the server stays in lame duck mode that long before it exits.
		sp.LameDuckDuration, sp.LameDuckGracePeriod = 3*time.Minute, 2*time.Minute
		specs = append(specs, sp)
	}
	sys := natstest.Start(t, specs...)
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)

	ids := map[string]string{}
	err := natstest.Eventually(10*time.Second, func() error {
		stats, err := natstest.Statsz(sysConn, 4, 2*time.Second)
		if err != nil {
			return err
		}
		for _, sm := range stats {
			ids[sm.Server.Name] = sm.Server.ID
		}
		if len(ids) != 4 {
			return fmt.Errorf("servers answering STATSZ %v, want 4", ids)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	statsz := func(name string) error {
		_, err := sysConn.Request("$SYS.REQ.SERVER."+ids[name]+".STATSZ", nil, time.Second)
		return err
	}
	routedFromN1 := func(name string) bool {
		msg, err := sysConn.Request("$SYS.REQ.SERVER."+ids["n1"]+".ROUTEZ", nil, 2*time.Second)
		if err != nil {
			t.Fatalf("ROUTEZ of n1: %v", err)
		}
		var resp server.ServerAPIRoutezResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Data == nil {
			t.Fatalf("ROUTEZ of n1: %s (%v)", msg.Data, err)
		}
		for _, r := range resp.Data.Routes {
			if r.RemoteName == name {
				return true
			}
		}
		return false
	}
	enterLameDuck := func(t *testing.T, name string) {
		// With no client a server in lame duck mode exits at once.
		sys.Connect(name, natstest.AppUser, natstest.AppPassword)
		sys.LameDuck(name)
		// Logged once the server is in lame duck mode and has queued its
		// lame duck event (2.15.3 server.go:4528-4530, 2.12.15 :4469-4471).
		err := natstest.Eventually(20*time.Second, func() error {
			if !strings.Contains(sys.Log(name), "[INF] Entering lame duck mode") {
				return fmt.Errorf("%s has not entered lame duck mode yet", name)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	restore := func(t *testing.T, name string) {
		sys.Restart(name, "")
		err := natstest.Eventually(30*time.Second, func() error {
			_, out := checkJSONOf(t, sys, "n1", "--timeout", faultTimeout.String())
			if out.Audit.ServersResponded != 4 || len(withCode(out.Findings, findings.ServerMissing)) > 0 {
				return fmt.Errorf("%d of %d servers:%s", out.Audit.ServersResponded, out.Audit.ServersExpected, codes(out.Findings))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("after %s restarted: %v", name, err)
		}
	}

	for _, tc := range []struct{ name, version string }{{"n2", natstest.Old}, {"n3", natstest.Floor}} {
		t.Run(tc.version+" answers no $SYS request", func(t *testing.T) {
			enterLameDuck(t, tc.name)
			// 2.12.15 events.go:682 (2.14.0 :683) queues the lame duck event
			// as the last message of the internal send loop, which returns
			// after it (2.12.15 events.go:651-659): no $SYS reply follows.
			err := natstest.Eventually(20*time.Second, func() error {
				if err := statsz(tc.name); !errors.Is(err, nats.ErrTimeout) {
					return fmt.Errorf("STATSZ of %s in lame duck mode: %v, want a timeout", tc.name, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			out := checkDuringFault(t, sys, "n1")
			var missing []string
			for _, f := range withCode(out.Findings, findings.ServerMissing) {
				missing = append(missing, f.Server)
			}
			if !slices.Contains(missing, tc.name) {
				t.Errorf("SERVER_MISSING for %q, want %s named%s", missing, tc.name, codes(out.Findings))
			}
			want := findings.Unknown
			for _, f := range out.Findings {
				if f.Severity == findings.Critical {
					want = findings.Critical
				}
			}
			if out.Status != want {
				t.Errorf("status %s, want %s%s", out.Status, want, codes(out.Findings))
			}
			t.Logf("check: status %s, %d of %d servers:%s", out.Status, out.Audit.ServersResponded, out.Audit.ServersExpected, codes(out.Findings))
			if !sys.Running(tc.name) || !routedFromN1(tc.name) {
				t.Fatalf("%s left lame duck mode during the test (running %v): the audit saw a stopped server", tc.name, sys.Running(tc.name))
			}
			restore(t, tc.name)
		})
	}

	t.Run(natstest.New+" keeps answering", func(t *testing.T) {
		enterLameDuck(t, "n4")
		if err := statsz("n4"); err != nil {
			t.Fatalf("STATSZ of 2.15.3 in lame duck mode: %v", err)
		}
		// It answers everything, so the audit sees a healthy 2.15.3 server:
		// lame duck mode itself is nothing check reports.
		res, out := checkJSONOf(t, sys, "n1", "--timeout", faultTimeout.String())
		t.Logf("check: exit %d, status %s, %d of %d servers:%s", res.code, out.Status, out.Audit.ServersResponded, out.Audit.ServersExpected, codes(out.Findings))
		if out.Audit.ServersResponded != 4 || out.Audit.ServersExpected != 4 {
			t.Errorf("audit saw %d of %d servers, want 4 of 4", out.Audit.ServersResponded, out.Audit.ServersExpected)
		}
		for _, f := range out.Findings {
			if f.Server == "n4" || f.Code == findings.ServerMissing {
				t.Errorf("finding about the server in lame duck mode: %+v", f)
			}
		}
		// What is left is the baseline: n2 below the floor.
		if res.code != int(findings.Critical) || len(withCode(out.Findings, findings.ServerBelowFloor)) != 1 {
			t.Errorf("exit %d, want 2 for n2 below the floor only%s", res.code, codes(out.Findings))
		}
		if !sys.Running("n4") || !routedFromN1("n4") {
			t.Fatalf("n4 left lame duck mode during the test")
		}
		restore(t, "n4")
	})
}

// TestFactOperatorModeAccounts runs an operator-mode cluster (2.15.3,
// 2.14.0, 2.12.15; memory resolver) with two accounts whose JWTs are both
// named APP, each holding ORDERS > worker. Every version's JSZ names an
// account by its JWT name and gives its public key as id (2.12.15
// monitor.go:3081-3085, 2.15.3 likewise: id is the account's Name, which in
// operator mode is its public key; name is the JWT's name tag), so the
// two accounts are two entries with one name.
func TestFactOperatorModeAccounts(t *testing.T) {
	t.Parallel()
	sys := natstest.StartOperator(t, natstest.OperatorConfig{Twin: true},
		node("n1", natstest.New), node("n2", natstest.Floor), node("n3", natstest.Old))
	sysConn := sys.Connect("n1", natstest.SysUser, "")
	addStreamAndConsumer(t, sys.Connect("n1", natstest.AppUser, ""), "ORDERS", "worker", 3)
	addStreamAndConsumer(t, sys.Connect("n2", natstest.TwinUser, ""), "ORDERS", "worker", 3)
	app, twin := sys.AccountKey(natstest.AppUser), sys.AccountKey(natstest.TwinUser)
	if !strings.HasPrefix(app, "A") || !strings.HasPrefix(twin, "A") || app == twin {
		t.Fatalf("account keys %q and %q, want two public account keys", app, twin)
	}
	want := fmt.Sprintf("%s=APP:ORDERS/worker %s=APP:ORDERS/worker", min(app, twin), max(app, twin))
	err := natstest.Eventually(20*time.Second, func() error {
		replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true, Consumer: true}, 3, 2*time.Second)
		if err != nil {
			return err
		}
		for _, name := range []string{"n1", "n2", "n3"} {
			var got []string
			for _, acc := range replies[name].Data.AccountDetails {
				for _, sd := range acc.Streams {
					for _, c := range sd.Consumer {
						got = append(got, fmt.Sprintf("%s=%s:%s/%s", acc.Id, acc.Name, sd.Name, c.Name))
					}
				}
			}
			slices.Sort(got)
			if strings.Join(got, " ") != want {
				return fmt.Errorf("%s (%s) JSZ: %q, want %q", name, replies[name].Server.Version, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
