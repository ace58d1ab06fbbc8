package auditor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// shardOwner is one process of a sharded application: its own connection,
// pulling the shards it believes it owns with pinned pulls.
type shardOwner struct {
	name string
	nc   *nats.Conn
	js   jetstream.JetStream
}

func (o *shardOwner) own(t *testing.T, shard string) {
	t.Helper()
	cons, err := o.js.Consumer(t.Context(), "WORK", shard)
	if err != nil {
		t.Fatal(err)
	}
	// A short expiry: a killed owner's pulls leave the leader's queue soon.
	cc, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack() },
		jetstream.PullPriorityGroup("g"), jetstream.PullExpiry(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
}

// TestShardOwnershipMove runs the seed's rollout at small scale against a
// 3-node cluster: 8 shards (R3 pinned_client consumers of one stream),
// owned by processes pulling with nats.go's jetstream package. Some
// shards are pulled, some by nobody; then an owner is killed and another
// process takes over one of its shards and an unowned one. At every stage
// the findings and the pins the audit reads follow what each consumer's
// leader answers to CONSUMER.INFO.
func TestShardOwnershipMove(t *testing.T) {
	sys := natstest.Start(t,
		natstest.Node("n1", natstest.Floor, "c1"),
		natstest.Node("n2", natstest.New, "c1"),
		natstest.Node("n3", natstest.New, "c1"),
	)
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	const pinTimeout = 3 * time.Second
	shards := make([]string, 8)
	for i := range shards {
		shards[i] = "shard-" + strconv.Itoa(i)
		if _, err := js.CreateOrUpdateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: shards[i], FilterSubject: "work." + strconv.Itoa(i),
			AckPolicy: jetstream.AckExplicitPolicy, Replicas: 3, PriorityPolicy: jetstream.PriorityPolicyPinned,
			PriorityGroups: []string{"g"}, PinnedTTL: pinTimeout}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(shard, n int) {
		for range n {
			if _, err := js.Publish(ctx, "work."+strconv.Itoa(shard), []byte("job")); err != nil {
				t.Fatal(err)
			}
		}
	}
	owner := func(name, server string) *shardOwner {
		nc := sys.Connect(server, natstest.AppUser, natstest.AppPassword)
		ojs, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return &shardOwner{name: name, nc: nc, js: ojs}
	}

	// Old and new processes hash over different shard sets: a owns 0-3,
	// b owns 4 and 5, and nobody owns 6 and 7.
	a, b := owner("a", "n1"), owner("b", "n2")
	for _, s := range shards[:4] {
		a.own(t, s)
	}
	for _, s := range shards[4:6] {
		b.own(t, s)
	}
	for i := range shards {
		publish(i, 5)
	}
	policy := ShardPolicy{UnpulledAfter: time.Second}
	stage1 := shardStage(t, sysConn, js, policy, "some shards pulled, some by nobody",
		map[string]Code{"shard-6": ConsumerPulledByNobody, "shard-7": ConsumerPulledByNobody},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			for _, s := range shards[:6] {
				if pinOf(infos[s]) == "" || infos[s].NumPending != 0 || infos[s].NumAckPending != 0 {
					return fmt.Errorf("%s: not yet drained and pinned", s)
				}
			}
			return nil
		})

	// b dies; c takes over shard 4, and shard 6 that nobody owned. b's
	// pin on shard 4 lapses after priority_timeout, and c's pulls, which
	// waited behind it, take it.
	oldPin := pinOf(stage1["shard-4"])
	b.nc.Close()
	c := owner("c", "n3")
	c.own(t, "shard-4")
	c.own(t, "shard-6")
	publish(4, 3)
	publish(5, 3)
	shardStage(t, sysConn, js, policy, "an owner killed, another takes over",
		map[string]Code{"shard-5": ConsumerPulledByNobody, "shard-7": ConsumerPulledByNobody},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			if pin := pinOf(infos["shard-4"]); pin == "" || pin == oldPin || infos["shard-4"].NumPending != 0 {
				return fmt.Errorf("shard-4: pin %q (b's was %q), %d pending", pin, oldPin, infos["shard-4"].NumPending)
			}
			if pinOf(infos["shard-6"]) == "" || infos["shard-6"].NumPending != 0 {
				return errors.New("shard-6: not yet taken over")
			}
			return nil
		})
}

func pinOf(ci *jetstream.ConsumerInfo) string {
	if ci == nil || len(ci.PriorityGroups) == 0 {
		return ""
	}
	return ci.PriorityGroups[0].PinnedClientID
}

// shardStage polls until an audit's findings about the shards are want
// and what it read of each agrees with the leader's CONSUMER.INFO, and
// ready holds of those infos; it logs the stage and returns the infos.
func shardStage(t *testing.T, sysConn *nats.Conn, js jetstream.JetStream, policy ShardPolicy, stage string,
	want map[string]Code, ready func(map[string]*jetstream.ConsumerInfo) error) map[string]*jetstream.ConsumerInfo {
	t.Helper()
	var infos map[string]*jetstream.ConsumerInfo
	var found map[string]Finding
	var snap *Snapshot
	err := natstest.Eventually(90*time.Second, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var err error
		if snap, err = Collect(ctx, sysConn, Options{}); err != nil {
			return err
		}
		found = map[string]Finding{}
		for _, f := range judgeShards(snap, policy) {
			found[f.Consumer] = f
		}
		infos = map[string]*jetstream.ConsumerInfo{}
		for _, a := range snap.Consumers {
			cons, err := js.Consumer(ctx, a.Stream, a.Consumer)
			if err != nil {
				return err
			}
			info, err := cons.Info(ctx)
			if err != nil {
				return err
			}
			infos[a.Consumer] = info
			p := a.Pull
			switch {
			case p == nil || !p.FromLeader:
				return fmt.Errorf("%s: no leader's record: %+v", a.Consumer, p)
			case a.Leader != info.Cluster.Leader:
				return fmt.Errorf("%s: the audit saw leader %s, CONSUMER.INFO %s", a.Consumer, a.Leader, info.Cluster.Leader)
			case p.Pending != info.NumPending || p.AckPending != info.NumAckPending:
				return fmt.Errorf("%s: the audit read %d pending, %d unacked; CONSUMER.INFO %d, %d",
					a.Consumer, p.Pending, p.AckPending, info.NumPending, info.NumAckPending)
			case p.PinnedID != pinOf(info):
				return fmt.Errorf("%s: the audit read pin %q, CONSUMER.INFO %q", a.Consumer, p.PinnedID, pinOf(info))
			case p.Timeout != info.Config.PinnedTTL || p.Group != "g":
				return fmt.Errorf("%s: priority_timeout %s group %q", a.Consumer, p.Timeout, p.Group)
			}
		}
		if len(infos) != 8 {
			return fmt.Errorf("%d consumers audited", len(infos))
		}
		if err := ready(infos); err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(infos)) {
			if found[name].Code != want[name] {
				return fmt.Errorf("%s: finding %q, want %q", name, found[name].Code, want[name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", stage, err)
	}
	var b strings.Builder
	for _, a := range snap.Consumers {
		info, p := infos[a.Consumer], a.Pull
		fmt.Fprintf(&b, "\n  %s: CONSUMER.INFO of %s: %d pending, %d unacked, %d waiting, pin %q | audit: %d pending, %d waiting, pin %q age %s",
			a.Consumer, info.Cluster.Leader, info.NumPending, info.NumAckPending, info.NumWaiting, pinOf(info),
			p.Pending, p.Waiting, p.PinnedID, p.PinAge().Round(time.Millisecond))
		if f, ok := found[a.Consumer]; ok {
			fmt.Fprintf(&b, "\n    %s: %s", f.Code, f.Message)
		}
	}
	t.Logf("stage %q:%s", stage, b.String())
	return infos
}

// judgeShards is the evaluation's shard rule alone on a snapshot.
func judgeShards(snap *Snapshot, p ShardPolicy) []Finding {
	e := evaluation{byName: map[string]*ServerReport{}}
	for _, s := range snap.Servers {
		e.byName[s.Name] = &ServerReport{Server: s}
	}
	e.shards(snap, p)
	var out []Finding
	for _, chunk := range e.findings {
		out = append(out, chunk...)
	}
	return out
}
