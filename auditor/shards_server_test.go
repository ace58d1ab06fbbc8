package auditor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

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
	shards, err := natstest.AddShards(app, "WORK", "work", 8, 3, pinTimeout)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(shard, n int) {
		for range n {
			if _, err := natstest.Publish(app, "work."+strconv.Itoa(shard), []byte("job"), 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Old and new processes hash over different shard sets: a owns 0-3,
	// b owns 4 and 5, and nobody owns 6 and 7.
	a, b := sys.ShardOwner("a", "n1"), sys.ShardOwner("b", "n2")
	for _, s := range shards[:4] {
		a.Own("WORK", s)
	}
	for _, s := range shards[4:6] {
		b.Own("WORK", s)
	}
	for i := range shards {
		publish(i, 5)
	}
	policy := ShardPolicy{UnpulledAfter: time.Second}
	stage1 := shardStage(t, sysConn, js, policy, "some shards pulled, some by nobody",
		map[string]findings.Code{"shard-6": findings.ConsumerPulledByNobody, "shard-7": findings.ConsumerPulledByNobody},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			for _, s := range shards[:6] {
				if natstest.PinOf(infos[s]) == "" || infos[s].NumPending != 0 || infos[s].NumAckPending != 0 {
					return fmt.Errorf("%s: not yet drained and pinned", s)
				}
			}
			return nil
		})

	followersKnowNoPulls(t, sysConn, stage1)

	// b dies; c takes over shard 4, and shard 6 that nobody owned. b's
	// pin on shard 4 lapses after priority_timeout, and c's pulls, which
	// waited behind it, take it.
	oldPin := natstest.PinOf(stage1["shard-4"])
	b.Kill()
	c := sys.ShardOwner("c", "n3")
	c.Own("WORK", "shard-4")
	c.Own("WORK", "shard-6")
	publish(4, 3)
	publish(5, 3)
	shardStage(t, sysConn, js, policy, "an owner killed, another takes over",
		map[string]findings.Code{"shard-5": findings.ConsumerPulledByNobody, "shard-7": findings.ConsumerPulledByNobody},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			if pin := natstest.PinOf(infos["shard-4"]); pin == "" || pin == oldPin || infos["shard-4"].NumPending != 0 {
				return fmt.Errorf("shard-4: pin %q (b's was %q), %d pending", pin, oldPin, infos["shard-4"].NumPending)
			}
			if natstest.PinOf(infos["shard-6"]) == "" || infos["shard-6"].NumPending != 0 {
				return errors.New("shard-6: not yet taken over")
			}
			return nil
		})

	// A holder that renews its pin and takes nothing: z takes shard 7's
	// pin with one pull, then keeps pulling with the pin's id to a reply
	// subject nobody listens on. d's pulls, without the pin, wait behind
	// it.
	z := sys.ShardOwner("z", "n2")
	zombie := holdPin(t, z.Conn, "shard-7", pinTimeout/6)
	d := sys.ShardOwner("d", "n3")
	d.Own("WORK", "shard-7")
	shardStage(t, sysConn, js, policy, "a holder renews its pin and takes nothing",
		map[string]findings.Code{"shard-5": findings.ConsumerPulledByNobody, "shard-7": findings.ConsumerStalePin},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			if i := infos["shard-7"]; natstest.PinOf(i) != zombie.pin || i.NumPending == 0 || i.NumWaiting == 0 {
				return fmt.Errorf("shard-7: pin %q (z's %q), %d pending, %d waiting", natstest.PinOf(i), zombie.pin, i.NumPending, i.NumWaiting)
			}
			return nil
		})

	// z stops: its pin lapses after priority_timeout, d takes it and
	// drains the shard.
	zombie.stop()
	shardStage(t, sysConn, js, policy, "the stale pin lapses",
		map[string]findings.Code{"shard-5": findings.ConsumerPulledByNobody},
		func(infos map[string]*jetstream.ConsumerInfo) error {
			if i := infos["shard-7"]; natstest.PinOf(i) == "" || natstest.PinOf(i) == zombie.pin || i.NumPending != 0 {
				return fmt.Errorf("shard-7: pin %q (z's was %q), %d pending", natstest.PinOf(i), zombie.pin, i.NumPending)
			}
			return nil
		})
}

// pinHolder is a client that holds a consumer's pin without taking
// messages.
type pinHolder struct {
	pin  string
	stop func()
}

// holdPin takes the pin of shard's group g with a pull of one message,
// which it does not ack, then renews the pin every interval with pulls
// whose replies nobody receives.
func holdPin(t *testing.T, nc *nats.Conn, shard string, interval time.Duration) *pinHolder {
	t.Helper()
	subject := "$JS.API.CONSUMER.MSG.NEXT.WORK." + shard
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	pull := func(id, reply string) {
		req := fmt.Sprintf(`{"batch":1,"expires":%d,"group":"g","id":%q}`, interval.Nanoseconds(), id)
		if err := nc.PublishRequest(subject, reply, []byte(req)); err != nil {
			t.Error(err)
		}
	}
	pull("", inbox)
	m, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.Unsubscribe()
	h := &pinHolder{pin: m.Header.Get("Nats-Pin-Id")}
	if h.pin == "" {
		t.Fatalf("%s: the pull was not given a pin: %v", shard, m.Header)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			pull(h.pin, nc.NewRespInbox())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	h.stop = sync.OnceFunc(func() { close(done); <-stopped })
	t.Cleanup(h.stop)
	return h
}

// followersKnowNoPulls holds the followers' own JSZ records of the pulled
// shards to what the merge assumes of them: no pull waiting and no pin,
// while their leaders hold both (as CONSUMER.INFO said).
func followersKnowNoPulls(t *testing.T, sysConn *nats.Conn, infos map[string]*jetstream.ConsumerInfo) {
	t.Helper()
	replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true, Consumer: true}, 3, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, r := range replies {
		for _, acc := range r.Data.AccountDetails {
			for _, sd := range acc.Streams {
				for _, ci := range sd.Consumer {
					if ci.Cluster == nil || ci.Cluster.Leader == name || natstest.PinOf(infos[ci.Name]) == "" {
						continue
					}
					n++
					if ci.NumWaiting != 0 || (len(ci.PriorityGroups) > 0 && ci.PriorityGroups[0].PinnedClientID != "") {
						t.Errorf("%s, a follower of %s (%s), reports %d waiting and %+v", name, ci.Name, r.Server.Version, ci.NumWaiting, ci.PriorityGroups)
					}
				}
			}
		}
	}
	if n != 12 {
		t.Errorf("%d follower records of the 6 pulled shards, want 12", n)
	}
}

// shardStage polls until an audit's findings about the shards are want
// and what it read of each agrees with the leader's CONSUMER.INFO, and
// ready holds of those infos; it logs the stage and returns the infos.
func shardStage(t *testing.T, sysConn *nats.Conn, js jetstream.JetStream, policy ShardPolicy, stage string,
	want map[string]findings.Code, ready func(map[string]*jetstream.ConsumerInfo) error) map[string]*jetstream.ConsumerInfo {
	t.Helper()
	var infos map[string]*jetstream.ConsumerInfo
	var found map[string]findings.Finding
	var snap *snapshot.Snapshot
	err := natstest.Eventually(90*time.Second, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var err error
		if snap, err = collect.Collect(ctx, sysConn, collect.Options{}); err != nil {
			return err
		}
		found = map[string]findings.Finding{}
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
			case p.PinnedID != natstest.PinOf(info):
				return fmt.Errorf("%s: the audit read pin %q, CONSUMER.INFO %q", a.Consumer, p.PinnedID, natstest.PinOf(info))
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
			a.Consumer, info.Cluster.Leader, info.NumPending, info.NumAckPending, info.NumWaiting, natstest.PinOf(info),
			p.Pending, p.Waiting, p.PinnedID, p.PinAge().Round(time.Millisecond))
		if f, ok := found[a.Consumer]; ok {
			fmt.Fprintf(&b, "\n    %s: %s", f.Code, f.Message)
		}
	}
	t.Logf("stage %q:%s", stage, b.String())
	return infos
}

// judgeShards is what Evaluate finds about who pulls the snapshot's
// consumers: its findings of the shard codes.
func judgeShards(snap *snapshot.Snapshot, p ShardPolicy) []findings.Finding {
	var out []findings.Finding
	for _, f := range Evaluate(snap, Policy{Floor: version.DefaultFloor, ShardPolicy: p}).Findings {
		if f.Code == findings.ConsumerPulledByNobody || f.Code == findings.ConsumerStalePin {
			out = append(out, f)
		}
	}
	return out
}
