package auditor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// The tests in this file hold rows of the op table (releases.ReplicatedOps)
// against real servers: the table judges the cluster before the trigger,
// and the old follower's process, log and JSZ are the oracle afterwards.

// TestOpDeleteRangeFromAMirrorLeader: cluster 2.15.3, 2.15.3, 2.12.15 (or
// 2.14.0, 2.14.0, 2.12.15), an R1 origin O on n1 and an R3 mirror M of O
// filtered to o.a, led by n2. A message on another subject leaves a gap in
// what M mirrors. With js_raft_delete_range on (2.15's default, or set on a
// 2.14 server) the leader proposes the gap as one deleteRangeOp, on which
// the 2.12.15 follower panics; with the flag off it proposes empty
// messages, which the follower applies.
func TestOpDeleteRangeFromAMirrorLeader(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version string
		flags   map[string]bool
		crash   bool
	}{
		{"2.15 defaults crash the 2.12 follower", natstest.New, nil, true},
		{"2.15 opted out, the 2.12 follower applies the gap", natstest.New, map[string]bool{releases.FlagRaftDeleteRange: false}, false},
		{"2.14 opted in crashes the 2.12 follower", natstest.Floor, map[string]bool{releases.FlagRaftDeleteRange: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n1, n2 := natstest.Node("n1", tt.version, "c1"), natstest.Node("n2", tt.version, "c1")
			n1.FeatureFlags, n2.FeatureFlags = tt.flags, tt.flags
			sys, sysConn, app := threeNodes(t, n1, n2, natstest.Node("n3", natstest.Old, "c1"))
			filteredMirror(t, app, "n2")

			// The table's judgement, from what an audit reads, before the trigger.
			byName, m, cfg := auditStream(t, sysConn, "M")
			row, _ := releases.OpByValue(releases.OpDeleteRange)
			var peers []snapshot.Server
			for _, p := range m.Peers {
				peers = append(peers, byName[p])
			}
			how, why := auditor.Proposes(row, byName[m.Leader], cfg, m.Replicas, false)
			proposers, _ := auditor.Proposers(row, peers, cfg, m.Replicas, false)
			follower, because := row.FollowerOutcome(byName["n3"].Parsed, m.Features)
			t.Logf("leader %s: %s (%s); proposers %v; n3: %s (%s)", m.Leader, how, why, proposers, follower, because)
			if m.Leader != "n2" || follower != releases.CrashesOnApply {
				t.Fatalf("M led by %s; the table says n3 does %s with a delete range, want led by n2 and %s", m.Leader, follower, releases.CrashesOnApply)
			}
			if tt.crash != (how == releases.ProposedByItself) || tt.crash != (len(proposers) == 2) {
				t.Fatalf("the table says the leader %s it, and %v would; want a proposal: %t", how, proposers, tt.crash)
			}

			// The gate, at a floor the 2.12.15 server meets, before the trigger.
			r, found := gate(t, sysConn, "2.12.0", findings.AssetOpCrashesFollower)
			if !tt.crash {
				if len(found) > 0 || r.Status == findings.Critical {
					t.Fatalf("status %s, findings %v; want no crash to report", r.Status, found)
				}
			} else {
				wantFinding(t, r, found, "n3", "n2", "delete_range", "stream APP > M: follower n3 ("+byName["n3"].Version+") panics on deleteRangeOp", "which n2 ("+byName["n2"].Version+") proposes as the mirror's leader")
			}

			// The trigger: a message M does not mirror, then one it does.
			publish(t, app, "o.b")
			publish(t, app, "o.a")
			if tt.crash {
				if err := sys.WaitExit("n3", 60*time.Second); err != nil {
					t.Fatalf("the 2.12.15 follower survived the delete range: %v", err)
				}
				if !strings.Contains(sys.Log("n3"), "Unknown group entry op type: 15") {
					t.Fatalf("n3 exited, but not with the delete-range panic:\n%s", sys.LogTail("n3", 20))
				}
				t.Logf("n3 logged: %s", panicLine(sys.Log("n3")))
				for _, name := range []string{"n1", "n2"} {
					if !sys.Running(name) {
						t.Errorf("%s exited", name)
					}
				}
				return
			}
			// n3 has applied the gap and the message after it, and runs on.
			err := natstest.Eventually(30*time.Second, func() error {
				if !sys.Running("n3") {
					return fmt.Errorf("n3 exited:\n%s", sys.LogTail("n3", 20))
				}
				if last := lastSeqOn(sysConn, "n3", "M"); last != 3 {
					return fmt.Errorf("n3 has M up to %d, want 3", last)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOpDeleteRangeWaitsForANewLeader: the mirror of
// TestOpDeleteRangeFromAMirrorLeader, led by the 2.12.15 server, which
// proposes a gap as empty messages. The gate says the crash waits for a
// 2.15.3 leader, and it does: the 2.12.15 server applies a gap while it
// leads, and panics on the first after n2 takes over.
func TestOpDeleteRangeWaitsForANewLeader(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.New, "c1"), natstest.Node("n2", natstest.New, "c1"),
		natstest.Node("n3", natstest.Old, "c1"))
	filteredMirror(t, app, "n3")

	r, found := gate(t, sysConn, "2.12.0", findings.AssetOpCrashesFollower)
	wantFinding(t, r, found, "n3", "", "delete_range",
		"stream APP > M: if n1 or n2 becomes its leader, n3 (2.12.15) as its follower panics on deleteRangeOp (Unknown group entry op type: 15)")

	// While n3 leads, a gap is no delete range.
	publish(t, app, "o.b")
	publish(t, app, "o.a")
	waitMirrored(t, app, "M", 2)
	err := natstest.Eventually(30*time.Second, func() error {
		if last := lastSeqOn(sysConn, "n3", "M"); last != 3 {
			return fmt.Errorf("n3 has M up to %d, want 3", last)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sys.Running("n3") {
		t.Fatalf("n3 exited while it led M:\n%s", sys.LogTail("n3", 20))
	}

	// n2 takes over; the next gap crashes n3.
	if err := natstest.MoveStreamLeader(app, "M", "n2"); err != nil {
		t.Fatal(err)
	}
	publish(t, app, "o.b")
	publish(t, app, "o.a")
	if err := sys.WaitExit("n3", 60*time.Second); err != nil {
		t.Fatalf("the 2.12.15 follower survived the delete range of its new leader: %v", err)
	}
	if !strings.Contains(sys.Log("n3"), "Unknown group entry op type: 15") {
		t.Fatalf("n3 exited, but not with the delete-range panic:\n%s", sys.LogTail("n3", 20))
	}
	t.Logf("n3 logged: %s", panicLine(sys.Log("n3")))
}

// filteredMirror makes an R1 origin O of o.> on n1 and an R3 mirror M of
// O filtered to o.a, led by leader, and mirrors one message.
func filteredMirror(t *testing.T, app *nats.Conn, leader string) {
	t.Helper()
	err := natstest.AddStream(app, server.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Replicas: 1,
		Storage: server.FileStorage, Placement: &server.Placement{Tags: []string{"node:n1"}}})
	if err != nil {
		t.Fatal(err)
	}
	err = natstest.AddStream(app, server.StreamConfig{Name: "M", Replicas: 3, Storage: server.FileStorage,
		Mirror: &server.StreamSource{Name: "O", FilterSubject: "o.a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "M", leader); err != nil {
		t.Fatal(err)
	}
	publish(t, app, "o.a")
	waitMirrored(t, app, "M", 1)
}

// publish publishes one message to a stream and waits for its ack.
func publish(t *testing.T, nc *nats.Conn, subject string) {
	t.Helper()
	if _, err := natstest.Publish(nc, subject, []byte("x"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// waitMirrored waits until the stream's leader holds msgs messages.
func waitMirrored(t *testing.T, nc *nats.Conn, stream string, msgs uint64) {
	t.Helper()
	err := natstest.Eventually(30*time.Second, func() error {
		msg, err := nc.Request("$JS.API.STREAM.INFO."+stream, nil, 2*time.Second)
		if err != nil {
			return err
		}
		var info server.JSApiStreamInfoResponse
		if err := json.Unmarshal(msg.Data, &info); err != nil || info.StreamInfo == nil {
			return fmt.Errorf("stream info %s: %v %s", stream, err, msg.Data)
		}
		if info.State.Msgs != msgs {
			return fmt.Errorf("%s holds %d messages, want %d", stream, info.State.Msgs, msgs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// threeNodes starts the servers n1, n2 and n3 of specs with n1 as the meta
// leader, and connects to n1 as the system and as the application user.
func threeNodes(t *testing.T, specs ...natstest.Spec) (sys *natstest.System, sysConn, app *nats.Conn) {
	t.Helper()
	sys = natstest.Start(t, specs...)
	sysConn = sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	if err := natstest.MoveMetaLeader(sysConn, "n1", "n1", "n2", "n3"); err != nil {
		t.Fatal(err)
	}
	return sys, sysConn, sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
}

// audit collects an audit of three servers and returns it with its servers
// by name.
func audit(t *testing.T, sysConn *nats.Conn) (*snapshot.Snapshot, map[string]snapshot.Server) {
	t.Helper()
	snap, err := collect.Collect(context.Background(), sysConn, collect.Options{Expect: 3})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]snapshot.Server{}
	for _, s := range snap.Servers {
		byName[s.Name] = s
	}
	return snap, byName
}

// auditStream audits the system and returns its servers by name, the
// stream as the audit saw it and its config as JSZ reports it, read into
// the table's AssetConfig.
func auditStream(t *testing.T, sysConn *nats.Conn, name string) (map[string]snapshot.Server, snapshot.Asset, releases.OpSet) {
	t.Helper()
	snap, byName := audit(t, sysConn)
	for _, a := range snap.Streams {
		if a.Stream == name {
			return byName, a, releases.DetectOps(releases.KindStream, streamConfigOf(t, sysConn, a.Leader, name))
		}
	}
	t.Fatalf("the audit saw no stream %s", name)
	return nil, snapshot.Asset{}, 0
}

// streamDetails are every server's JSZ stream details with their configs,
// by server and stream name.
func streamDetails(sysConn *nats.Conn) map[string]map[string]server.StreamDetail {
	out := map[string]map[string]server.StreamDetail{}
	replies, _ := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true, Config: true}, 3, 2*time.Second)
	for name, r := range replies {
		out[name] = map[string]server.StreamDetail{}
		if r.Data == nil {
			continue
		}
		for _, acc := range r.Data.AccountDetails {
			for _, s := range acc.Streams {
				out[name][s.Name] = s
			}
		}
	}
	return out
}

// streamConfigOf is the stream's config as the named server's JSZ reports
// it, read into the table's AssetConfig. An old peer reports its own copy,
// without the fields it dropped.
func streamConfigOf(t *testing.T, sysConn *nats.Conn, serverName, stream string) *releases.AssetConfig {
	t.Helper()
	s, ok := streamDetails(sysConn)[serverName][stream]
	if !ok || s.Config == nil {
		t.Fatalf("%s does not report the config of %s", serverName, stream)
	}
	raw, err := json.Marshal(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	var c releases.AssetConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// lastSeqOn is the last sequence of the stream on the named server, 0 when
// it does not answer or does not list the stream.
func lastSeqOn(sysConn *nats.Conn, serverName, stream string) uint64 {
	return streamDetails(sysConn)[serverName][stream].State.LastSeq
}

// TestOpAtomicBatchOnALenientFollower: cluster 2.14.0, 2.14.0, 2.10.27 and
// an R3 stream with allow_atomic, led by 2.14.0. 2.10.27 decodes the
// stream's config leniently and runs its replica without the field
// (Features: atomic_batch, ignored_online), so it receives the batch's
// entries and panics on the first (op 16). A 2.11.9 or later follower
// holds such a stream offline instead and receives none (TestOpFollowerOutcome).
func TestOpAtomicBatchOnALenientFollower(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.NoLevels, "c1"))
	err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3,
		Storage: server.FileStorage, AllowAtomicPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "S", "n1"); err != nil {
		t.Fatal(err)
	}
	publish(t, app, "s.plain")

	byName, s, cfg := auditStream(t, sysConn, "S")
	row, _ := releases.OpByValue(releases.OpBatchMsg)
	how, why := auditor.Proposes(row, byName[s.Leader], cfg, s.Replicas, false)
	follower, because := row.FollowerOutcome(byName["n3"].Parsed, s.Features)
	t.Logf("leader %s: %s (%s); n3: %s (%s)", s.Leader, how, why, follower, because)
	if s.Leader != "n1" || how != releases.ProposedOnRequest || follower != releases.CrashesOnApply {
		t.Fatalf("S led by %s, which the table says proposes op 16 %s, and n3 does %s with it; want n1, %s, %s",
			s.Leader, how, follower, releases.ProposedOnRequest, releases.CrashesOnApply)
	}
	r, found := gate(t, sysConn, "2.10.0", findings.AssetOpCrashesFollower)
	wantFinding(t, r, found, "n3", "n1", "atomic_batch_msg", "stream APP > S: follower n3 (2.10.27) panics on batchMsgOp", "which n1 (2.14.0) proposes as the stream's leader when a client publishes an atomic batch")

	// The trigger: an atomic batch of two messages.
	first := nats.NewMsg("s.a")
	first.Header.Set("Nats-Batch-Id", "b1")
	first.Header.Set("Nats-Batch-Sequence", "1")
	if err := app.PublishMsg(first); err != nil {
		t.Fatal(err)
	}
	commit := nats.NewMsg("s.a")
	commit.Header.Set("Nats-Batch-Id", "b1")
	commit.Header.Set("Nats-Batch-Sequence", "2")
	commit.Header.Set("Nats-Batch-Commit", "1")
	ack, err := app.RequestMsg(commit, 5*time.Second)
	if err != nil || !strings.Contains(string(ack.Data), `"batch":"b1"`) {
		t.Fatalf("the batch's commit: %v %s", err, ack.Data)
	}
	if err := sys.WaitExit("n3", 60*time.Second); err != nil {
		t.Fatalf("the 2.10.27 follower survived the atomic batch: %v", err)
	}
	if !strings.Contains(sys.Log("n3"), "Unknown group entry op type: 16") {
		t.Fatalf("n3 exited, but not with the batch-op panic:\n%s", sys.LogTail("n3", 20))
	}
	t.Logf("n3 logged: %s", panicLine(sys.Log("n3")))
}

// TestPrioritizedConsumerNotLoadedByAnOldPeer: cluster 2.14.0, 2.14.0,
// 2.11.12 and an R3 pull consumer with the prioritized priority policy
// (2.12). The first axis says 2.11.12 does not load it, so the consumer
// runs on two of its three peers; the 2.11.12 server's JSZ, log and process
// agree.
func TestPrioritizedConsumerNotLoadedByAnOldPeer(t *testing.T) {
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"),
		natstest.Node("n3", natstest.FirstLevels, "c1"))
	err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	// 2.11.12 answers the create with an error it cannot decode, and the
	// 2.14.0 meta leader creates the consumer anyway (Features:
	// priority_prioritized, create_refused): the info is what counts.
	_ = natstest.AddConsumer(app, "S", server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit, Replicas: 3,
		PriorityGroups: []string{"g"}, PriorityPolicy: server.PriorityPrioritized})
	err = natstest.Eventually(30*time.Second, func() error {
		_, err := natstest.ConsumerInfo(app, "S", "C")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	snap, byName := audit(t, sysConn)
	var c *snapshot.Asset
	for i := range snap.Consumers {
		if snap.Consumers[i].Consumer == "C" {
			c = &snap.Consumers[i]
		}
	}
	if c == nil {
		t.Fatal("the audit saw no consumer C")
	}
	running := map[string]bool{}
	for _, p := range c.Peers {
		running[p] = true
		for _, f := range c.Features.Features() {
			if h := f.HandlingBy(byName[p].Parsed); !releases.RunsReplica(h.Asset) {
				running[p] = false
				t.Logf("%s (%s): %s %s (%s)", p, byName[p].Version, f.Name, h.Asset, h.Evidence)
			}
		}
	}
	if len(c.Peers) != 3 || !running["n1"] || !running["n2"] || running["n3"] {
		t.Fatalf("peers %v, running per the table %v; want n1, n2 running and n3 not", c.Peers, running)
	}
	r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.11.0")})
	wantFinding(t, r, codeFindings(r, findings.AssetPeerNotRunning), "n3", "", "",
		"consumer APP > S > C runs on 2 of its 3 peers; one more peer down and it stops: n3 (2.11.12) does not load it (prioritized priority policy")

	// The oracle: n3 runs on, logs the decode failure and lists no C.
	err = natstest.Eventually(30*time.Second, func() error {
		replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true, Consumer: true}, 3, 2*time.Second)
		if err != nil {
			return err
		}
		for name, r := range replies {
			has := false
			if r.Data != nil {
				for _, acc := range r.Data.AccountDetails {
					for _, s := range acc.Streams {
						for _, ci := range s.Consumer {
							has = has || ci.Name == "C"
						}
					}
				}
			}
			if has != running[name] {
				return fmt.Errorf("%s lists C: %t; the table says it runs it: %t", name, has, running[name])
			}
		}
		if !strings.Contains(sys.Log("n3"), "failed to decode") {
			return fmt.Errorf("n3 logs no decode failure yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sys.Running("n3") {
		t.Fatal("n3 exited")
	}
}

// gate collects an audit of three servers, evaluates it at the floor and
// returns the report with its findings of code.
func gate(t *testing.T, sysConn *nats.Conn, floor string, code findings.Code) (*findings.Report, []findings.Finding) {
	t.Helper()
	snap, _ := audit(t, sysConn)
	r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, floor)})
	return r, codeFindings(r, code)
}

func codeFindings(r *findings.Report, code findings.Code) []findings.Finding {
	var out []findings.Finding
	for _, f := range r.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

func mustParse(t *testing.T, v string) version.Version {
	t.Helper()
	parsed, err := version.ParseVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// wantFinding holds found to one CRITICAL finding about follower or peer
// server, with the asset's leader peer and the op (each when not empty),
// whose message says every one of says, in a CRITICAL report.
func wantFinding(t *testing.T, r *findings.Report, found []findings.Finding, server, peer, op string, says ...string) {
	t.Helper()
	if len(found) != 1 {
		t.Fatalf("findings %+v; want one about %s", found, server)
	}
	f := found[0]
	t.Logf("%s %s: %s", f.Severity, f.Code, f.Message)
	if f.Server != server || (peer != "" && f.Peer != peer) || f.Op != op || f.Severity != findings.Critical || r.Status != findings.Critical {
		t.Errorf("finding %+v in a %s report; want server %s, peer %s, op %s, CRITICAL", f, r.Status, server, peer, op)
	}
	for _, s := range says {
		if !strings.Contains(f.Message, s) {
			t.Errorf("the finding does not say %q", s)
		}
	}
}

// panicLine is the first line of a server's log that says it panicked.
func panicLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "panic") || strings.Contains(l, "Unknown group entry op type") {
			return l
		}
	}
	return ""
}
