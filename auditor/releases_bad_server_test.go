package auditor_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestKnownBadReleaseLosesAStream holds the first row of
// releases.BadReleases against real servers. Cluster n1, n2, n3 on 2.14.4,
// an R1 stream ORDERS on n3 with five messages. n3 stops; the application
// sends ORDERS's create again, the same config, which 2.14.4 proposes with
// a new Created (jetstream_cluster.go:8300). A new meta leader snapshots
// the meta log as it takes over (doSnapshot in monitorCluster), so the
// restarted n3 catches up from that snapshot rather than from the entries
// it missed, takes the new Created for a recreated stream, and deletes its
// copy (:2054-2057). Nothing else holds one: the messages are gone. The
// same steps on 2.14.5, the release the finding names, keep them.
func TestKnownBadReleaseLosesAStream(t *testing.T) {
	for _, tt := range []struct {
		name, version, fix string
		lost               bool
	}{
		{"2.14.4 deletes the stream", natstest.BadIdempotentCreate, "2.14.5", true},
		{"2.14.5 keeps it", natstest.IdempotentCreateFixed, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sys, sysConn, app := threeNodes(t, natstest.Node("n1", tt.version, "c1"), natstest.Node("n2", tt.version, "c1"),
				natstest.Node("n3", tt.version, "c1"))

			// The audit's finding, before anything is lost.
			r, found := gate(t, sysConn, version.DefaultFloor.String(), findings.KnownBadRelease)
			if tt.fix == "" {
				if len(found) > 0 {
					t.Fatalf("%s is not a bad release: %s", tt.version, codesOf(found))
				}
			} else {
				if r.Status != findings.Critical || len(found) != 3 {
					t.Fatalf("status %s, findings %s; want KNOWN_BAD_RELEASE on each of three servers", r.Status, codesOf(r.Findings))
				}
				for _, f := range found {
					if f.Release != tt.fix || f.Severity != findings.Critical {
						t.Errorf("%s: fix %q, severity %s; want %s, CRITICAL", f.Message, f.Release, f.Severity, tt.fix)
					}
				}
				t.Logf("the audit: %s", found[0].Message)
			}

			cfg := server.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 1, Storage: server.FileStorage,
				Placement: &server.Placement{Tags: []string{"node:n3"}}}
			if err := natstest.AddStream(app, cfg); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				publishOnce(t, app, "orders.new", fmt.Sprint(i))
			}
			created := streamCreated(t, app, "ORDERS")

			if err := sys.Stop("n3", 30*time.Second); err != nil {
				t.Fatal(err)
			}
			// The create an application sends at its start. ORDERS's only
			// peer is down, so nobody answers it; the meta leader proposes
			// it all the same.
			body, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if msg, err := app.Request("$JS.API.STREAM.CREATE.ORDERS", body, 2*time.Second); err == nil {
				t.Logf("the second create of ORDERS: %s", msg.Data)
			} else {
				t.Logf("the second create of ORDERS: %v", err)
			}
			// A stream created on n1 after it: its answer means n1, the meta
			// leader, has applied the create before it.
			if err := natstest.AddStream(app, server.StreamConfig{Name: "AFTER", Subjects: []string{"after.>"}, Replicas: 1,
				Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n1"}}}); err != nil {
				t.Fatal(err)
			}

			// n2 snapshots the meta log as it takes over; n3, behind that
			// snapshot, is sent it when it returns.
			before := metaSnapshotIndex(t, sys, "n2")
			if err := natstest.MoveMetaLeader(sysConn, "n2", "n1", "n2"); err != nil {
				t.Fatal(err)
			}
			var snap uint64
			err = natstest.Eventually(90*time.Second, func() error {
				if snap = metaSnapshotIndex(t, sys, "n2"); snap <= before {
					return fmt.Errorf("n2 leads the meta group but has not snapshotted since index %d", before)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sys.Restart("n3", "")
			// A stream created on n3 after the restart: its answer means n3
			// has applied what the meta log held before it, the snapshot too.
			if err := natstest.AddStream(app, server.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}, Replicas: 1,
				Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n3"}}}); err != nil {
				t.Fatal(err)
			}
			got := metaSnapshotIndex(t, sys, "n3")
			if got < snap {
				t.Fatalf("n3 holds a meta snapshot up to index %d, not n2's (%d): it caught up from entries", got, snap)
			}
			t.Logf("n2 snapshotted the meta log at index %d as it took over (before: %d); n3 holds a snapshot at %d", snap, before, got)

			var msgs uint64
			err = natstest.Eventually(60*time.Second, func() error {
				sd, ok := streamDetails(sysConn)["n3"]["ORDERS"]
				if !ok {
					return fmt.Errorf("n3 does not list ORDERS")
				}
				msgs = sd.State.Msgs
				if tt.lost && msgs != 0 {
					return fmt.Errorf("n3 holds ORDERS with %d messages", msgs)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%v\n%s", err, sys.LogTail("n3", 20))
			}
			again := streamCreated(t, app, "ORDERS")
			for _, line := range strings.Split(sys.Log("n3"), "\n") {
				if strings.Contains(line, "ORDERS") {
					t.Logf("n3: %s", line)
				}
			}
			t.Logf("ORDERS on n3: %d messages, created %s; before n3 stopped, created %s",
				msgs, again.Format(time.RFC3339Nano), created.Format(time.RFC3339Nano))
			// n3 had its copy back from its store before the snapshot reached it.
			if restored := "Restored 5 messages for stream 'APP > ORDERS'"; !strings.Contains(sys.Log("n3"), restored) {
				t.Errorf("n3 did not log %q after its restart", restored)
			}
			if tt.lost == again.Equal(created) {
				t.Errorf("ORDERS was created %s, and now %s; want a new creation time: %t", created, again, tt.lost)
			}
			if want := uint64(5); !tt.lost && msgs != want {
				t.Errorf("n3 holds ORDERS with %d messages, want %d", msgs, want)
			}
		})
	}
}

// publishOnce publishes to a stream with a message id, again until the
// stream acknowledges it: a stream just created on another server may not
// yet have its subjects' interest here ("no responders"), and the id keeps
// a message published twice one message.
func publishOnce(t *testing.T, nc *nats.Conn, subject, id string) {
	t.Helper()
	msg := nats.NewMsg(subject)
	msg.Header.Set(nats.MsgIdHdr, id)
	msg.Data = []byte("x")
	err := natstest.Eventually(30*time.Second, func() error {
		_, err := natstest.PublishMsg(nc, msg, 2*time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// streamCreated is the stream's creation time as its leader reports it.
func streamCreated(t *testing.T, nc *nats.Conn, stream string) time.Time {
	t.Helper()
	var created time.Time
	err := natstest.Eventually(30*time.Second, func() error {
		msg, err := nc.Request("$JS.API.STREAM.INFO."+stream, nil, 2*time.Second)
		if err != nil {
			return err
		}
		var info server.JSApiStreamInfoResponse
		if err := json.Unmarshal(msg.Data, &info); err != nil || info.StreamInfo == nil {
			return fmt.Errorf("stream info %s: %v %s", stream, err, msg.Data)
		}
		created = info.Created
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// metaSnapshotIndex is the log index of the newest meta snapshot in the
// named server's store (snap.<term>.<index>, raft.go), 0 for none.
func metaSnapshotIndex(t *testing.T, sys *natstest.System, name string) uint64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sys.StoreDir(name), "jetstream", "*", "_js_", "_meta_", "snapshots", "snap.*"))
	if err != nil {
		t.Fatal(err)
	}
	var newest uint64
	for _, f := range files {
		var term, index uint64
		if n, _ := fmt.Sscanf(filepath.Base(f), "snap.%d.%d", &term, &index); n == 2 && index > newest {
			newest = index
		}
	}
	return newest
}
