package auditor_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestServerNotMetaPeerOnRealServers: in a cluster of three, n3 is removed
// from the meta group ($JS.API.SERVER.REMOVE) while it runs; it disables
// JetStream, and is restarted on its own store, as an operator who took the
// removal back would. It follows the meta leader again (n1, or n2 if the
// removal moved the leadership), but the leader keeps it out of its peer set (a removed peer is not re-added for
// peerRemoveTimeout, 5 minutes: raft.go trackPeer in 2.14.0 and 2.15.3).
// The gate finds SERVER_NOT_META_PEER first; then the server is the
// oracle: a stream placed on n3 by its tag, and an R3 stream, are refused,
// while one placed on n2 is created.
func TestServerNotMetaPeerOnRealServers(t *testing.T) {
	for _, version := range []string{natstest.Floor, natstest.New} {
		t.Run(version, func(t *testing.T) {
			sys, sysConn, app := threeNodes(t, natstest.Node("n1", version, "c1"), natstest.Node("n2", version, "c1"), natstest.Node("n3", version, "c1"))
			if _, found := gate(t, sysConn, "2.12.0", auditor.ServerNotMetaPeer); len(found) > 0 {
				t.Fatalf("before the removal: %v", found)
			}

			start := time.Now()
			var removed server.JSApiMetaServerRemoveResponse
			msg, err := sysConn.Request("$JS.API.SERVER.REMOVE", []byte(`{"peer":"n3"}`), 5*time.Second)
			if err != nil || json.Unmarshal(msg.Data, &removed) != nil || !removed.Success {
				t.Fatalf("peer-remove n3: %v %s", err, msgData(msg))
			}
			if err := natstest.Eventually(30*time.Second, func() error {
				if !strings.Contains(sys.Log("n3"), "our server was removed from the cluster") {
					return fmt.Errorf("n3 has not logged its removal")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			sys.Restart("n3", "")
			restarted := time.Since(start)

			// The finding, once n3 follows the meta leader again. The
			// removal can move the leadership from n1 to n2 (seen in CI),
			// so the leader is the one the servers name before and after
			// the audit.
			var r *auditor.Report
			var found []auditor.Finding
			var leader string
			audits := 0
			if err := natstest.Eventually(30*time.Second, func() error {
				audits++
				before, err := natstest.MetaLeader(sysConn)
				if err != nil {
					return err
				}
				r, found = gate(t, sysConn, "2.12.0", auditor.ServerNotMetaPeer)
				if len(found) == 0 {
					return fmt.Errorf("no %s yet; findings %v", auditor.ServerNotMetaPeer, r.Findings)
				}
				after, err := natstest.MetaLeader(sysConn)
				if err != nil {
					return err
				}
				if before != after {
					return fmt.Errorf("the meta leader moved from %s to %s during the audit", before, after)
				}
				leader = after
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("removed and restarted n3 in %s; found %s after %s, by audit %d; meta leader %s", restarted.Round(time.Millisecond), auditor.ServerNotMetaPeer, time.Since(start).Round(time.Millisecond), audits, leader)
			other := map[string]string{"n1": "n2", "n2": "n1"}[leader]
			if other == "" {
				t.Fatalf("the meta leader is %s; want n1 or n2, the two members left", leader)
			}
			wantFinding(t, r, found, "n3", leader, "", "server n3 ("+strings.TrimPrefix(version, "v")+") follows JetStream meta leader "+leader+", which does not list it as a peer (it lists "+leader+", "+other+"; cluster size 2)")
			if !sys.Running("n3") {
				t.Fatal("n3 is not running")
			}

			// The oracle: the meta leader places nothing on n3.
			for _, cfg := range []server.StreamConfig{
				{Name: "ON_N3", Subjects: []string{"on.n3"}, Replicas: 1, Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n3"}}},
				{Name: "R3", Subjects: []string{"r3"}, Replicas: 3, Storage: server.FileStorage},
			} {
				body, _ := json.Marshal(cfg)
				msg, err := app.Request("$JS.API.STREAM.CREATE."+cfg.Name, body, 5*time.Second)
				var resp server.JSApiStreamCreateResponse
				if err != nil || json.Unmarshal(msg.Data, &resp) != nil || resp.Error == nil ||
					!strings.Contains(resp.Error.Description, "no suitable peers for placement") {
					t.Fatalf("stream %s: %v %s; want it refused, no suitable peers for placement", cfg.Name, err, msgData(msg))
				}
				t.Logf("stream %s refused: %s", cfg.Name, resp.Error.Description)
			}
			if err := natstest.AddStream(app, server.StreamConfig{Name: "ON_N2", Subjects: []string{"on.n2"}, Replicas: 1,
				Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n2"}}}); err != nil {
				t.Fatalf("stream placed on n2: %v", err)
			}
		})
	}
}

func msgData(m *nats.Msg) []byte {
	if m == nil {
		return nil
	}
	return m.Data
}
