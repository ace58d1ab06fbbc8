package auditor_test

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestOpSnapshotWithSourcesToAnOldFollower holds the snapshot_sources row
// of the op table to real servers: cluster 2.15.3 with js_snapshot_sources
// on (n1), 2.15.3 (n2) and an older n3 (2.14.10, 2.12.15 or 2.10.27); an
// R1 origin O on n1 and an R3 stream S that sources from it. Once S has
// sourced a message, n1's snapshots of S carry its sourcing state (stream
// state encoding 2). n3 stops; enough is published to S that n1 snapshots
// and compacts its log; n3 comes back and n1 catches it up from that
// snapshot, which n3 cannot decode. 2.14.10 logs a critical write error
// and stops applying; 2.12.15 and 2.10.27 log a warning and apply on
// without it, and at the next message, whose sequence does not follow
// their own, reset the replica and are caught up from the same snapshot
// again, in a loop. Either way n3's copy stays at the one message it had.
// The audit says so before n3 stops: with n1 leading, or with n2 leading
// (if n1 becomes its leader). Once 2.14.10's replica has halted, what the
// servers show says it too: n1 no longer hears from it (ASSET_PEER_BEHIND).
func TestOpSnapshotWithSourcesToAnOldFollower(t *testing.T) {
	for _, tt := range []struct {
		old, leader string
		outcome     releases.Outcome
		says        string
		evidence    []string
	}{
		{natstest.Lenient, "n1", releases.HaltsReplica,
			"stream APP > S: follower n3 (2.14.10) cannot apply the stream snapshot with sourcing state (stream state encoding 2, streamStateVersionSources), which n1 (2.15.3) sends as the stream's leader whenever it catches up a follower from its snapshot",
			[]string{"JetStream stream 'APP > S' critical write error: invalid character '*'"}},
		{natstest.Old, "n2", releases.ResetsReplica,
			"stream APP > S: if n1 becomes its leader, n3 (2.12.15) as its follower cannot apply the stream snapshot with sourcing state",
			[]string{"Error applying entries to 'APP > S': invalid character '*'", "Resetting stream cluster state for 'APP > S'"}},
		{natstest.NoLevels, "n2", releases.ResetsReplica,
			"stream APP > S: if n1 becomes its leader, n3 (2.10.27) as its follower cannot apply the stream snapshot with sourcing state",
			[]string{"Error applying entries to 'APP > S': invalid character '*'", "Resetting stream cluster state for 'APP > S'"}},
	} {
		t.Run(tt.old, func(t *testing.T) {
			n1 := natstest.Node("n1", natstest.New, "c1")
			n1.FeatureFlags = map[string]bool{releases.FlagSnapshotSources: true}
			sys, sysConn, app := threeNodes(t, n1, natstest.Node("n2", natstest.New, "c1"), natstest.Node("n3", tt.old, "c1"))
			err := natstest.AddStream(app, server.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Replicas: 1,
				Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n1"}}})
			if err != nil {
				t.Fatal(err)
			}
			err = natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3,
				Storage: server.FileStorage, Sources: []*server.StreamSource{{Name: "O"}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := natstest.MoveStreamLeader(app, "S", tt.leader); err != nil {
				t.Fatal(err)
			}
			publish(t, app, "o.a")
			waitMirrored(t, app, "S", 1)

			// The table's judgement, from what an audit reads, before the trigger.
			byName, s, ops := auditStream(t, sysConn, "S")
			row := snapshotRow(t)
			var peers []snapshot.Server
			for _, p := range s.Peers {
				peers = append(peers, byName[p])
			}
			proposers, how := auditor.Proposers(row, peers, ops, s.Replicas, false)
			follower, because := row.FollowerOutcome(byName["n3"].Parsed, s.Features)
			t.Logf("S led by %s; senders %v (%s); n3: %s (%s)", s.Leader, proposers, how, follower, because)
			if s.Leader != tt.leader || follower != tt.outcome || how != releases.ProposedByItself || len(proposers) != 1 || proposers[0] != "n1" {
				t.Fatalf("S led by %s, sent by %v (%s), n3 does %s; want led by %s, sent by n1 by itself, n3 %s",
					s.Leader, proposers, how, follower, tt.leader, tt.outcome)
			}
			r, found := gate(t, sysConn, "2.10.0", findings.AssetOpHaltsReplica)
			wantFinding(t, r, found, "n3", tt.leader, "snapshot_sources", tt.says, "js_snapshot_sources: true as the server reports it")

			// The trigger: n1 leads, n3 falls behind n1's compacted log.
			if err := natstest.MoveStreamLeader(app, "S", "n1"); err != nil {
				t.Fatal(err)
			}
			before := streamSnapshotFile(sys, "n1", "S")
			if err := sys.Stop("n3", 30*time.Second); err != nil {
				t.Fatal(err)
			}
			// Incompressible, so the log's size passes the leader's
			// compaction threshold (8 MB, compactSizeMin in monitorStream).
			big := make([]byte, 1000*1000)
			_, _ = rand.Read(big)
			for range 9 {
				if _, err := app.Request("s.big", big, 10*time.Second); err != nil {
					t.Fatalf("publish to S: %v", err)
				}
			}
			err = natstest.Eventually(60*time.Second, func() error {
				if now := streamSnapshotFile(sys, "n1", "S"); now == "" || now == before {
					return fmt.Errorf("n1 has not snapshotted S since %q", before)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sys.Restart("n3", "")
			rejected := "invalid character '*'"
			err = natstest.Eventually(60*time.Second, func() error {
				if !strings.Contains(sys.Log("n3"), rejected) {
					return fmt.Errorf("n3 has not rejected the snapshot yet")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%v:\n%s", err, sys.LogTail("n3", 20))
			}
			// One message more: an entry after the snapshot, which the
			// 2.12.15 follower, still without the snapshot's messages,
			// cannot line up with its own.
			publish(t, app, "s.after")

			// The oracle: n3 logs the rejection, runs on, and its copy
			// stays at the one message it had.
			err = natstest.Eventually(60*time.Second, func() error {
				log := sys.Log("n3")
				for _, e := range tt.evidence {
					if !strings.Contains(log, e) {
						return fmt.Errorf("n3 has not logged %q yet", e)
					}
				}
				if tt.outcome == releases.ResetsReplica && strings.Count(log, "Resetting stream cluster state for 'APP > S'") < 2 {
					return fmt.Errorf("n3 has reset S once, not yet in a loop")
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%v:\n%s", err, sys.LogTail("n3", 20))
			}
			for _, l := range strings.Split(sys.Log("n3"), "\n") {
				if strings.Contains(l, rejected) || strings.Contains(l, "Resetting stream cluster state") {
					t.Logf("n3 logged: %s", l)
				}
				if strings.Count(l, "Resetting") > 0 {
					break
				}
			}
			// A replica being reset is missing from its server's JSZ for a
			// moment: the copy is read again until it is listed.
			var got, want uint64
			err = natstest.Eventually(30*time.Second, func() error {
				got, want = lastSeqOn(sysConn, "n3", "S"), lastSeqOn(sysConn, "n1", "S")
				if got == 0 || want != 11 {
					return fmt.Errorf("S is at %d on n3 and %d on n1", got, want)
				}
				return nil
			})
			if err != nil || got != 1 {
				t.Errorf("S is at %d on n3 and %d on n1 (%v); want 1 and 11", got, want, err)
			}
			if !sys.Running("n3") {
				t.Errorf("n3 exited:\n%s", sys.LogTail("n3", 20))
			}
			if tt.outcome == releases.HaltsReplica {
				behindOnRealServers(t, sysConn, "S", "n3")
			}
		})
	}
}

// snapshotRow is the op table's row of the stream snapshot that carries
// sourcing state.
func snapshotRow(t *testing.T) releases.ReplicatedOp {
	t.Helper()
	for _, o := range releases.ReplicatedOps {
		if o.Snapshot == releases.StateWithSources {
			return o
		}
	}
	t.Fatal("the op table has no row of the stream snapshot with sourcing state")
	return releases.ReplicatedOp{}
}

// streamSnapshotFile is the name of the last RAFT snapshot the named
// server installed for the stream's group, "" when none. A snapshot being
// written (.tmp) does not count.
func streamSnapshotFile(sys *natstest.System, name, stream string) string {
	files, _ := filepath.Glob(filepath.Join(sys.StoreDir(name), "jetstream", "*", "_js_", stream+"-R*", "snapshots", "snap.*"))
	last := ""
	for _, f := range files {
		if !strings.HasSuffix(f, ".tmp") {
			last = filepath.Base(f)
		}
	}
	return last
}

// behindOnRealServers waits until the audit, from what the servers show,
// finds peer of stream behind: its leader no longer hears from its
// halted replica (ASSET_PEER_BEHIND), which runs on in its JSZ.
func behindOnRealServers(t *testing.T, sysConn *nats.Conn, stream, peer string) {
	t.Helper()
	halted := time.Now()
	var found []findings.Finding
	err := natstest.Eventually(auditor.CatchUpAllowance+60*time.Second, func() error {
		snap, _ := audit(t, sysConn)
		r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.10.0")})
		found = codeFindings(r, findings.AssetPeerBehind)
		if len(found) == 0 {
			return fmt.Errorf("no %s yet", findings.AssetPeerBehind)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s after the halt: %s %s", time.Since(halted).Round(time.Second), found[0].Severity, found[0].Message)
	if len(found) != 1 || found[0].Server != peer || found[0].Stream != stream {
		t.Errorf("findings %+v; want one about %s", found, peer)
	}
}
