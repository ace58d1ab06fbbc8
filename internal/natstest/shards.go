package natstest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A sharded application makes each shard a durable pull consumer with a
// priority group and decides itself which process owns which shard. Each
// process pulls the shards it believes it owns with pinned pulls; while the
// processes disagree, some shards are pulled by nobody.

// ShardGroup is the priority group of every shard and of every owner's
// pulls.
const ShardGroup = "g"

// ShardPullExpiry is how long an owner's pull waits on a shard's leader. It
// is short so that a killed owner's pulls leave the leader's queue soon.
const ShardPullExpiry = 2 * time.Second

// AddShards creates n shards of stream: durable pinned_client consumers
// shard-0 .. shard-<n-1>, shard-i filtering subjectPrefix.i, of the given
// replicas, in group ShardGroup with priority_timeout pinTimeout (how
// long a pin outlives the last pull that carried it). It returns their
// names.
func AddShards(nc *nats.Conn, stream, subjectPrefix string, n, replicas int, pinTimeout time.Duration) ([]string, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = "shard-" + strconv.Itoa(i)
		cfg := server.ConsumerConfig{Durable: names[i], FilterSubject: subjectPrefix + "." + strconv.Itoa(i),
			AckPolicy: server.AckExplicit, Replicas: replicas, PriorityPolicy: server.PriorityPinnedClient,
			PriorityGroups: []string{ShardGroup}, PinnedTTL: pinTimeout}
		if err := AddConsumer(nc, stream, cfg); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// WorkStream is the stream AddWorkShards makes, of subjects work.>.
const WorkStream = "WORK"

// AddWorkShards creates WorkStream, file-backed, of the given replicas, and
// n shards of it as AddShards makes them (shard-i filtering work.i), and
// returns their names; an error fails t.
func AddWorkShards(t TB, nc *nats.Conn, n, replicas int, pinTimeout time.Duration) []string {
	t.Helper()
	if err := AddStream(nc, server.StreamConfig{Name: WorkStream, Subjects: []string{"work.>"}, Replicas: replicas, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	shards, err := AddShards(nc, WorkStream, "work", n, replicas, pinTimeout)
	if err != nil {
		t.Fatal(err)
	}
	return shards
}

// PinWorkShards publishes one job to each of the shards of WorkStream
// named (shard-i's subject is work.i), and waits until the leader of each
// reports a pin: a pinned pull takes the pin as a message is delivered. It
// returns nc's JetStream; an error fails t.
func PinWorkShards(t TB, nc *nats.Conn, shards ...string) jetstream.JetStream {
	t.Helper()
	for _, s := range shards {
		if _, err := Publish(nc, "work."+strings.TrimPrefix(s, "shard-"), []byte("job"), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitPinned(context.Background(), js, WorkStream, 30*time.Second, shards...); err != nil {
		t.Fatal(err)
	}
	return js
}

// ShardOwner is one process of a sharded application: its own connection,
// pulling the shards it owns with nats.go's jetstream Consume in
// ShardGroup, acking what it gets.
type ShardOwner struct {
	Name string
	Conn *nats.Conn
	js   jetstream.JetStream
	t    TB
	// sys and server are where the owner connects: Own waits there for
	// each shard's leader.
	sys    *System
	server string
}

// ShardOwner connects a new owner, name, to the named server as AppUser,
// with name as its connection name. Its inboxes start "_INBOX_<name>.":
// the owners of one test share one process, whose nats.go inboxes would
// otherwise share one NUID prefix, by which the auditor tells processes
// apart.
func (sys *System) ShardOwner(name, server string) *ShardOwner {
	sys.t.Helper()
	nc := sys.Connect(server, AppUser, AppPassword, nats.Name(name), nats.CustomInboxPrefix("_INBOX_"+name))
	js, err := jetstream.New(nc)
	if err != nil {
		sys.t.Fatal(err)
	}
	return &ShardOwner{Name: name, Conn: nc, js: js, t: sys.t, sys: sys, server: server}
}

// Own pulls shard of stream until the test ends or Kill. It first waits
// until the owner's server knows the shard's leader's interest in pulls
// (WaitPullable): a shard created a moment ago has a leader whose
// subscription may not have reached the owner's server yet, and a pull sent
// then is dropped with "no responders" and sent again only when the next
// heartbeat is missed.
func (o *ShardOwner) Own(stream, shard string) {
	o.t.Helper()
	if err := o.sys.WaitPullable(o.server, o.sys.AccountKey(AppUser), stream, shard, 30*time.Second); err != nil {
		o.t.Fatalf("%s owns %s: %v", o.Name, shard, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := o.js.Consumer(ctx, stream, shard)
	if err != nil {
		o.t.Fatalf("%s owns %s: %v", o.Name, shard, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack() },
		jetstream.PullPriorityGroup(ShardGroup), jetstream.PullExpiry(ShardPullExpiry))
	if err != nil {
		o.t.Fatalf("%s owns %s: %v", o.Name, shard, err)
	}
	o.t.Cleanup(cc.Stop)
}

// Kill closes the owner's connection, as when its process dies: its
// pulls stay queued on the leaders until they expire, its pins until
// priority_timeout passes.
func (o *ShardOwner) Kill() { o.Conn.Close() }

// PinOf is the pin holder a consumer's info reports for its first
// priority group, "" for none.
func PinOf(ci *jetstream.ConsumerInfo) string {
	if ci == nil || len(ci.PriorityGroups) == 0 {
		return ""
	}
	return ci.PriorityGroups[0].PinnedClientID
}

// PullSubjects are what a JetStream account exports, and the system
// account imports, for the auditor to see who pulls each consumer: the
// pull requests and the pin advisories.
var PullSubjects = []string{
	"$JS.API.CONSUMER.MSG.NEXT.>",
	"$JS.EVENT.ADVISORY.CONSUMER.PINNED.>",
	"$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.>",
}

// AssetSubjects are what a JetStream account exports, and the system
// account imports, for the auditor to hear its streams and consumers
// created, deleted and updated as they are.
var AssetSubjects = []string{
	"$JS.EVENT.ADVISORY.STREAM.CREATED.>",
	"$JS.EVENT.ADVISORY.STREAM.DELETED.>",
	"$JS.EVENT.ADVISORY.STREAM.UPDATED.>",
	"$JS.EVENT.ADVISORY.CONSUMER.CREATED.>",
	"$JS.EVENT.ADVISORY.CONSUMER.DELETED.>",
}

// ShowingPulls is s with ShowPulls set: the system account hears its
// accounts' pulls.
func ShowingPulls(s Spec) Spec {
	s.ShowPulls = true
	return s
}

// ShardInfo is the CONSUMER.INFO of shard of stream, as its leader answers.
func ShardInfo(ctx context.Context, js jetstream.JetStream, stream, shard string) (*jetstream.ConsumerInfo, error) {
	c, err := js.Consumer(ctx, stream, shard)
	if err != nil {
		return nil, err
	}
	return c.Info(ctx)
}

// WaitPinned waits until the leader of each shard of stream reports a pin.
func WaitPinned(ctx context.Context, js jetstream.JetStream, stream string, timeout time.Duration, shards ...string) error {
	return Eventually(timeout, func() error {
		for _, s := range shards {
			info, err := ShardInfo(ctx, js, stream, s)
			if err != nil {
				return err
			}
			if PinOf(info) == "" {
				return fmt.Errorf("%s: no pin yet", s)
			}
		}
		return nil
	})
}
