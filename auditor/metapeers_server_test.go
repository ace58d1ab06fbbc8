package auditor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"

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
// while one placed on n2 is created. A plan counts only the two members:
// a member's restart leaves the group below its quorum. Killing the
// leader shows what that means: on 2.15.3 the other member has no meta
// leader; on 2.14.0, before nats-server #8353, it counts n3's vote and the
// two elect one, as the finding and the plan say.
func TestServerNotMetaPeerOnRealServers(t *testing.T) {
	for _, version := range []string{natstest.Floor, natstest.New} {
		t.Run(version, func(t *testing.T) {
			sys, sysConn, app := threeNodes(t, natstest.Node("n1", version, "c1"), natstest.Node("n2", version, "c1"), natstest.Node("n3", version, "c1"))
			if _, found := gate(t, sysConn, "2.12.0", findings.ServerNotMetaPeer); len(found) > 0 {
				t.Fatalf("before the removal: %v", found)
			}

			start := time.Now()
			var removed server.JSApiMetaServerRemoveResponse
			msg, err := sysConn.Request("$JS.API.SERVER.REMOVE", []byte(`{"peer":"n3"}`), 5*time.Second)
			if err != nil || json.Unmarshal(msg.Data, &removed) != nil || !removed.Success {
				t.Fatalf("peer-remove n3: %v %s", err, msgData(msg))
			}
			const removedLine = "our server was removed from the cluster"
			if err := natstest.Eventually(30*time.Second, func() error {
				if !strings.Contains(sys.Log("n3"), removedLine) {
					return fmt.Errorf("n3 has not logged its removal")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// A restarted n3 can be removed again (seen in CI on 2.14.0):
			// its store may hold nothing of the meta group (its snapshot
			// after the removal can lose the race with disabling
			// JetStream, "store is closed"), so it bootstraps and catches
			// up from the leader, through the removal entry when the
			// leader has not compacted it away yet. It is restarted until
			// one life keeps JetStream.
			restarts, logFrom, snapshotsRemoved := 0, 0, 0
			restartN3 := func() {
				logFrom = len(sys.Log("n3"))
				// 2.14.0 can also cut its meta snapshot short as it
				// disables JetStream (seen in CI: the restarted n3 exited
				// with "Can't start JetStream: raft: snapshot corrupt").
				// An operator removes the snapshot and starts it again;
				// so does the test.
				for attempt := 1; ; attempt++ {
					err := sys.TryRestart("n3", "")
					if err == nil {
						break
					}
					if attempt == 3 || !strings.Contains(sys.Log("n3")[logFrom:], "raft: snapshot corrupt") {
						t.Fatalf("n3 not ready: %v\n%s", err, sys.LogTail("n3", 20))
					}
					snaps, _ := filepath.Glob(filepath.Join(sys.StoreDir("n3"), "jetstream", "*", "_js_", "_meta_", "snapshots"))
					if len(snaps) == 0 {
						t.Fatalf("n3's meta snapshot is corrupt, and no snapshots directory was found:\n%s", sys.LogTail("n3", 20))
					}
					for _, d := range snaps {
						if err := os.RemoveAll(d); err != nil {
							t.Fatal(err)
						}
					}
					snapshotsRemoved++
					t.Logf("n3 did not start on a corrupt meta snapshot; removed %v and started it again", snaps)
				}
				restarts++
			}
			restartN3()
			restarted := time.Since(start)

			// The finding, once n3 follows the meta leader again. The
			// removal can move the leadership from n1 to n2 (seen in CI),
			// so the leader is the one the servers name before and after
			// the audit.
			var r *findings.Report
			var found []findings.Finding
			var leader string
			audits := 0
			// Each restart of n3 waits for it to be ready, and a CI machine
			// that runs other packages' servers beside these took more
			// than a minute to bring it back as a follower (the bound is
			// how long the test may wait, not how long it does).
			if err := natstest.Eventually(3*time.Minute, func() error {
				if strings.Contains(sys.Log("n3")[logFrom:], removedLine) {
					restartN3()
					return fmt.Errorf("n3 was removed again after restart %d", restarts-1)
				}
				audits++
				before, err := natstest.MetaLeader(sysConn)
				if err != nil {
					return err
				}
				r, found = gate(t, sysConn, "2.12.0", findings.ServerNotMetaPeer)
				if len(found) == 0 {
					// What n3 did is in its log, which a stress run does not
					// keep: the error carries its last lines.
					return fmt.Errorf("no %s yet (n3 restarted %d times, its meta snapshots removed %d times; n3's last lines:\n%s); findings %v",
						findings.ServerNotMetaPeer, restarts, snapshotsRemoved, sys.LogTail("n3", 6), r.Findings)
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
			t.Logf("removed and restarted n3 in %s; found %s after %s, by audit %d, after %d restarts of n3; meta leader %s", restarted.Round(time.Millisecond), findings.ServerNotMetaPeer, time.Since(start).Round(time.Millisecond), audits, restarts, leader)
			other := map[string]string{"n1": "n2", "n2": "n1"}[leader]
			if other == "" {
				t.Fatalf("the meta leader is %s; want n1 or n2, the two members left", leader)
			}
			v := strings.TrimPrefix(version, "v")
			wantFinding(t, r, found, "n3", leader, "", "server n3 ("+v+") follows JetStream meta leader "+leader+", which does not list it as a peer (it lists "+leader+", "+other+"; cluster size 2)")
			// A member before nats-server #8353 counts n3's vote; the
			// finding names the one left when the leader is lost.
			outsiderVotes := !releases.MemberVotesOnly(mustParse(t, v))
			if says := strings.Contains(found[0].Message, "; "+other+" ("+v+") counts its vote, as a candidate of a release before 2.12.14, or of 2.14.0 to 2.14.3, does"); says != outsiderVotes {
				t.Errorf("the finding says the members count n3's vote: %v; want %v", says, outsiderVotes)
			}
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

			// The plan counts only the members: a member's restart leaves
			// one of two up, below the quorum; where the other member counts
			// n3's vote, the reason says so.
			to := map[string]string{natstest.Floor: natstest.New, natstest.New: natstest.Floor}[version]
			plan, err := auditor.MakePlan(auditor.Evaluate(r.Snapshot, auditor.Policy{Floor: mustParse(t, "2.12.0")}), auditor.Policy{Floor: mustParse(t, "2.12.0")}, mustParse(t, strings.TrimPrefix(to, "v")), auditor.PlanScope{})
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range plan.Steps {
				var meta *auditor.GroupImpact
				for _, g := range append(slices.Clone(st.Unavailable), st.BareQuorum...) {
					if g.Kind == "meta" {
						meta = &g
					}
				}
				if (st.Server == "n3") != (meta == nil) || (meta != nil && (meta.Peers != 2 || meta.Up != 1 || !slices.Contains(st.Unavailable, *meta))) {
					t.Fatalf("plan to %s, step %d (%s): meta group %+v; want none for n3, else unavailable with 1 of 2 up", to, st.Step, st.Server, meta)
				}
				if meta != nil {
					t.Logf("plan to %s, step %d (%s): %s", to, st.Step, st.Server, meta.Reason)
				}
				if st.Step == 1 && meta != nil {
					if says := strings.Contains(meta.Reason, "("+v+") counts the vote of n3, no member"); says != outsiderVotes {
						t.Errorf("the first step's reason says the other member counts n3's vote: %v; want %v", says, outsiderVotes)
					}
				}
			}

			// Then the server is the oracle: the meta leader is killed. Not
			// stopped: a leader that stops hands its leadership to the
			// other member, which holds it until it misses its quorum.
			sysOther, appOther := sys.Connect(other, natstest.SysUser, natstest.SysPassword), sys.Connect(other, natstest.AppUser, natstest.AppPassword)
			sys.Kill(leader)
			killed := time.Now()
			// What other names as meta leader; n3's reply, late on a busy
			// machine, is not needed.
			metaLeader := func() (string, error) {
				replies, err := natstest.JSZ(sysOther, server.JSzOptions{}, 2, 2*time.Second)
				reply := replies[other]
				if reply == nil {
					return "", fmt.Errorf("%s did not answer JSZ: %v", other, err)
				}
				if reply.Data == nil || reply.Data.Meta == nil {
					return "", fmt.Errorf("%s sent no meta_cluster", other)
				}
				return reply.Data.Meta.Leader, nil
			}
			if outsiderVotes {
				// The other member cannot win alone: a new leader means
				// n3's vote counted (seen: n3 itself elected, and n2).
				var elected string
				if err := natstest.Eventually(60*time.Second, func() error {
					var err error
					if elected, err = metaLeader(); err != nil {
						return err
					}
					if elected == "" || elected == leader {
						return fmt.Errorf("%s names meta leader %q", other, elected)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s killed: %s and n3 elected %s as meta leader after %s", leader, other, elected, time.Since(killed).Round(time.Millisecond))
				return
			}
			// The other member has no meta leader and refuses the
			// JetStream API beyond the longest election timeout
			// (maxElectionTimeoutDefault, 9 s: raft.go:329 in 2.15.3), in
			// which n3's counted vote would have elected one.
			if err := natstest.Eventually(30*time.Second, func() error {
				if l, err := metaLeader(); err != nil || l != "" {
					return fmt.Errorf("%s names meta leader %q: %v", other, l, err)
				}
				msg, err := appOther.Request("$JS.API.STREAM.CREATE.AFTER", []byte(`{"name":"AFTER","subjects":["after"],"num_replicas":1}`), 5*time.Second)
				var resp server.JSApiStreamCreateResponse
				if err != nil || json.Unmarshal(msg.Data, &resp) != nil || resp.Error == nil || resp.Error.ErrCode != uint16(server.JSClusterNotAvailErr) {
					return fmt.Errorf("stream create on %s: %v %s; want JetStream system temporarily unavailable", other, err, msgData(msg))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			answers, silent := 0, 0
			for hold := time.Now().Add(12 * time.Second); time.Now().Before(hold); <-tick.C {
				l, err := metaLeader()
				if err != nil {
					silent++
					continue
				}
				answers++
				if l != "" {
					t.Fatalf("%s after %s was killed: %s names meta leader %q", time.Since(killed).Round(time.Millisecond), leader, other, l)
				}
			}
			if answers == 0 {
				t.Fatalf("%s did not answer JSZ while it was held for 12 s (%d times)", other, silent)
			}
			t.Logf("%s killed: %s had no meta leader for %s (%d answers, %d silent) and refused the JetStream API", leader, other, time.Since(killed).Round(time.Millisecond), answers, silent)
		})
	}
}

func msgData(m *nats.Msg) []byte {
	if m == nil {
		return nil
	}
	return m.Data
}
