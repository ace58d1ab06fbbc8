package auditor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestAckV2LostToAnOldLeader answers issue 32's question about
// js_ack_fc_v2 on real servers: a 2.14.0 consumer leader with the flag on
// hands out acks in the v2 format ($JS.ACK.<domain>.<account hash>.…,
// 2.14.0 consumer.go:1395-1398, :5441-5444); a 2.12.15 server that takes
// the consumer over subscribes to the v1 format only ($JS.ACK.<stream>.
// <consumer>.*.*.*.*.*, 2.12.15 consumer.go:1288). The acks of the messages
// in flight then reach nobody: they stay pending and are redelivered after
// AckWait. With the flag off the same acks land. The audit says so
// before the takeover (CONSUMER_ACKS_LOST_ON_TAKEOVER), and says nothing
// with the flag off.
func TestAckV2LostToAnOldLeader(t *testing.T) {
	for _, flag := range []bool{true, false} {
		t.Run(fmt.Sprintf("js_ack_fc_v2=%t", flag), func(t *testing.T) {
			n1 := natstest.Node("n1", natstest.Floor, "c1")
			n1.FeatureFlags = map[string]bool{"js_ack_fc_v2": flag}
			sys, sysConn, app := threeNodes(t, n1, natstest.Node("n2", natstest.Old, "c1"), natstest.Node("n3", natstest.Old, "c1"))
			if err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
				t.Fatal(err)
			}
			const ackWait = 4 * time.Second
			if err := natstest.AddConsumer(app, "S", server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit, Replicas: 3, AckWait: ackWait}); err != nil {
				t.Fatal(err)
			}
			if err := natstest.MoveConsumerLeader(app, "S", "C", "n1"); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := natstest.Publish(app, "s.x", []byte{byte(i)}, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			// Before: the audit, with a floor the mixed versions pass.
			snap, _ := audit(t, sysConn)
			r := auditor.Evaluate(snap, auditor.Policy{Floor: mustParse(t, "2.12.0")})
			found := codeFindings(r, findings.ConsumerAcksLostOnTakeover)
			if !flag {
				if len(found) > 0 {
					t.Fatalf("with the flag off: %+v", found)
				}
			} else {
				if len(found) != 2 || found[0].Server != "n2" || found[1].Server != "n3" || found[0].Peer != "n1" {
					t.Fatalf("findings %+v; want n2's and n3's, led by n1", found)
				}
				t.Logf("%s %s: %s", found[0].Severity, found[0].Code, found[0].Message)
				if want := "consumer APP > S > C: n1 (2.14.0) hands out acks in the v2 format (js_ack_fc_v2 on) while leading it, and n2 (2.12.15), before 2.14.0, subscribes only the v1 format as its leader"; !strings.Contains(found[0].Message, want) {
					t.Errorf("the finding does not say %q", want)
				}
			}
			js, err := app.JetStream()
			if err != nil {
				t.Fatal(err)
			}
			sub, err := js.PullSubscribe("s.x", "C", nats.Bind("S", "C"))
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := sub.Fetch(3, nats.MaxWait(5*time.Second))
			if err != nil || len(msgs) != 3 {
				t.Fatalf("fetched %d: %v", len(msgs), err)
			}
			v2 := strings.Count(msgs[0].Reply, ".") > 8
			t.Logf("n1 (2.14.0) handed out %s", msgs[0].Reply)
			if v2 != flag {
				t.Fatalf("ack subject %s with the flag %t", msgs[0].Reply, flag)
			}
			// The takeover, then the acks of the messages in flight.
			if err := natstest.MoveConsumerLeader(app, "S", "C", "n2"); err != nil {
				t.Fatal(err)
			}
			// The new leader subscribes the v1 acks; an ack sent through n1
			// before n1 knows that reaches nobody, whatever its format.
			// Both runs wait for it, so the one with the flag on loses its
			// acks to the format alone.
			if err := sys.WaitInterest("n1", "APP", "$JS.ACK.S.C.1.1.1.1.0", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if err := m.Ack(); err != nil {
					t.Fatal(err)
				}
			}
			if err := app.Flush(); err != nil {
				t.Fatal(err)
			}
			// The oracle: the new leader's record, and what it delivers
			// once AckWait has passed.
			var ci *server.ConsumerInfo
			err = natstest.Eventually(10*time.Second, func() error {
				ci, err = natstest.ConsumerInfo(app, "S", "C")
				if err != nil {
					return err
				}
				if !flag && ci.NumAckPending != 0 {
					return fmt.Errorf("%d acks pending", ci.NumAckPending)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// Redeliveries come as each message's ack_wait ends: fetched
			// until all three came, or twice ack_wait passed.
			var redelivered []*nats.Msg
			for deadline := time.Now().Add(2*ackWait + 2*time.Second); len(redelivered) < 3 && time.Now().Before(deadline); {
				got, _ := sub.Fetch(3-len(redelivered), nats.MaxWait(time.Until(deadline)))
				redelivered = append(redelivered, got...)
			}
			t.Logf("led by %s: %d acks pending after the acks; %d redelivered after AckWait", ci.Cluster.Leader, ci.NumAckPending, len(redelivered))
			if flag && (ci.NumAckPending != 3 || len(redelivered) != 3) {
				t.Errorf("with the flag on: %d acks pending, %d redelivered; want 3 and 3: the v2 acks reached the old leader", ci.NumAckPending, len(redelivered))
			}
			if !flag && len(redelivered) != 0 {
				t.Errorf("with the flag off: %d redelivered; want none", len(redelivered))
			}
			for _, m := range redelivered {
				if md, err := m.Metadata(); err == nil && md.NumDelivered != 2 {
					t.Errorf("redelivered %d times", md.NumDelivered)
				}
			}
		})
	}
}
