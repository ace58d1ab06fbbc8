package natstest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The seed's sharded application (issue 34, origin issue part 1): each
// process computes by itself which units of work it owns, hashing the
// configured unit set over the live membership with a capped rendezvous
// hash, and pulls the shards of those units with pinned pulls. A rolling
// change of V (shards per partition) leaves the pods already restarted
// hashing over the new unit set and the others over the old one, so they
// disagree: some shards are owned by nobody, some by two processes. The
// simulation here says which; the real-server test and the demo play it
// on servers and hold the auditor to it.

// Unit is one unit of work of the seed's application: shard V of
// partition P.
type Unit struct{ P, V int }

// String is the unit as "P.V", the text its hash is taken over.
func (u Unit) String() string { return fmt.Sprintf("%d.%d", u.P, u.V) }

// Units is the unit set of n partitions of v shards each, partition by
// partition.
func Units(n, v int) []Unit {
	var us []Unit
	for p := range n {
		for s := range v {
			us = append(us, Unit{p, s})
		}
	}
	return us
}

// AssignUnits is the seed's capped rendezvous hash: each unit, in order,
// goes to the member with the highest score for it, a hash of (member,
// unit), skipping members that already hold cap = ceil(units/members).
// The cap is why a unit both topologies hold can still change owner: the
// members fill up in another order when the unit set differs.
func AssignUnits(units []Unit, members []string) map[Unit]string {
	score := func(m string, u Unit) uint64 {
		h := sha256.Sum256([]byte(m + "/" + u.String()))
		return binary.BigEndian.Uint64(h[:8])
	}
	capacity := (len(units) + len(members) - 1) / len(members)
	load := map[string]int{}
	out := map[Unit]string{}
	for _, u := range units {
		ranked := slices.Clone(members)
		slices.SortFunc(ranked, func(a, b string) int {
			sa, sb := score(a, u), score(b, u)
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, m := range ranked {
			if load[m] < capacity {
				out[u] = m
				load[m]++
				break
			}
		}
	}
	return out
}

// Fleet is the seed's application stopped mid-rollout of V, OldV → NewV,
// done pod by pod: pods p0 .. p<n-1> all see the same membership (their
// member names, the hash keys), and the first Rolled of them, restarted,
// run NewV while the others still run OldV.
type Fleet struct {
	Partitions int
	OldV, NewV int
	// Rolled is how many pods, p0 first, run NewV.
	Rolled int
	// Members are the pods' member names. A restarted pod keeps its own:
	// it is the same member, a new process.
	Members []string
	// OldUnits and NewUnits are the two topologies' unit sets, OldAssign
	// and NewAssign the member that AssignUnits gives each of their units.
	OldUnits, NewUnits   []Unit
	OldAssign, NewAssign map[Unit]string
}

// NewFleet is pods pods of partitions partitions, rolled pods of them
// restarted from oldV to newV.
func NewFleet(pods, partitions, oldV, newV, rolled int) *Fleet {
	f := &Fleet{Partitions: partitions, OldV: oldV, NewV: newV, Rolled: rolled,
		OldUnits: Units(partitions, oldV), NewUnits: Units(partitions, newV)}
	for i := range pods {
		f.Members = append(f.Members, "p"+strconv.Itoa(i))
	}
	f.OldAssign, f.NewAssign = AssignUnits(f.OldUnits, f.Members), AssignUnits(f.NewUnits, f.Members)
	return f
}

// Shards is how many shards the fleet's stream holds: one per unit of
// either topology.
func (f *Fleet) Shards() int { return f.Partitions * max(f.OldV, f.NewV) }

// Shard is the number of u's shard. A unit has the same shard in both
// topologies, so a unit both hold is a shard that did not move.
func (f *Fleet) Shard(u Unit) int { return u.P*max(f.OldV, f.NewV) + u.V }

// Unit is the unit of shard i.
func (f *Fleet) Unit(i int) Unit {
	v := max(f.OldV, f.NewV)
	return Unit{i / v, i % v}
}

// InBoth reports whether both topologies hold shard i's unit: the shard
// did not move.
func (f *Fleet) InBoth(i int) bool {
	_, inOld := f.OldAssign[f.Unit(i)]
	_, inNew := f.NewAssign[f.Unit(i)]
	return inOld && inNew
}

// OldProcess names pod i's process before its restart, NewProcess after:
// each process's connection name, by which the auditor reports it.
func (f *Fleet) OldProcess(i int) string { return f.Members[i] }

// NewProcess names pod i's process after its restart (see OldProcess).
func (f *Fleet) NewProcess(i int) string { return f.Members[i] + "-v2" }

// IsRolled reports whether pod i runs NewV mid-rollout.
func (f *Fleet) IsRolled(i int) bool { return i < f.Rolled }

// OldOwned is the shards pod i's process owns on OldV, NewOwned on NewV:
// what it computes over its own unit set.
func (f *Fleet) OldOwned(i int) []int { return f.owned(f.OldUnits, f.OldAssign, i) }

// NewOwned is the shards pod i's process owns on NewV (see OldOwned).
func (f *Fleet) NewOwned(i int) []int { return f.owned(f.NewUnits, f.NewAssign, i) }

func (f *Fleet) owned(units []Unit, assign map[Unit]string, i int) []int {
	var out []int
	for _, u := range units {
		if assign[u] == f.Members[i] {
			out = append(out, f.Shard(u))
		}
	}
	return out
}

// Owners are the processes that believe they own shard i mid-rollout,
// sorted: the pod OldAssign gives its unit to if that pod still runs
// OldV, and the pod NewAssign gives it to if that pod runs NewV. Each
// pulls the shard; none knows of the other.
func (f *Fleet) Owners(i int) []string {
	u := f.Unit(i)
	var who []string
	for p, m := range f.Members {
		switch {
		case !f.IsRolled(p) && f.OldAssign[u] == m:
			who = append(who, f.OldProcess(p))
		case f.IsRolled(p) && f.NewAssign[u] == m:
			who = append(who, f.NewProcess(p))
		}
	}
	slices.Sort(who)
	return who
}

// Counted are the shards owned by nobody and those owned by more than one
// process mid-rollout, in shard order: the simulation's count.
func (f *Fleet) Counted() (nobody, two []int) {
	for i := range f.Shards() {
		switch n := len(f.Owners(i)); {
		case n == 0:
			nobody = append(nobody, i)
		case n > 1:
			two = append(two, i)
		}
	}
	return nobody, two
}

// PlayedFleet is a Fleet played on servers: its stream and its shards'
// consumer names, shard i at Shards[i].
type PlayedFleet struct {
	*Fleet
	Stream string
	Shards []string
}

// PlayFleet plays f on sys through app, a connection of AppUser, up to the
// middle of its rollout. It creates stream (subjects <subjectPrefix>.>,
// R3 on file) and one shard per unit, shard-i on <subjectPrefix>.i, with
// AddShards and pinTimeout. Pod i's processes connect to servers[i] and
// servers[i+1] (modulo), so that a restart lands on another server, as a
// rescheduled pod would. Every pod first runs OldV and pulls what it owns;
// with a message on every shard, PlayFleet waits until each shard of OldV
// is pinned, then restarts the first f.Rolled pods, each a new process
// pulling what it owns over NewUnits, and publishes to every shard again:
// pins form where someone pulls, a backlog waits where nobody does. The
// killed processes' pins and pulls linger on the leaders a moment (see
// Settled).
func (sys *System) PlayFleet(f *Fleet, app *nats.Conn, servers []string, stream, subjectPrefix string, pinTimeout time.Duration) *PlayedFleet {
	sys.t.Helper()
	if err := AddStream(app, server.StreamConfig{Name: stream, Subjects: []string{subjectPrefix + ".>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		sys.t.Fatal(err)
	}
	shards, err := AddShards(app, stream, subjectPrefix, f.Shards(), 3, pinTimeout)
	if err != nil {
		sys.t.Fatal(err)
	}
	pf := &PlayedFleet{Fleet: f, Stream: stream, Shards: shards}
	publishAll := func() {
		for i := range shards {
			if _, err := Publish(app, subjectPrefix+"."+strconv.Itoa(i), []byte("job"), 10*time.Second); err != nil {
				sys.t.Fatal(err)
			}
		}
	}
	serverOf := func(i int) string { return servers[i%len(servers)] }

	// Before the rollout: every pod runs OldV and pulls what it owns.
	procs := make([]*ShardOwner, len(f.Members))
	for i := range f.Members {
		procs[i] = sys.ShardOwner(f.OldProcess(i), serverOf(i))
		for _, s := range f.OldOwned(i) {
			procs[i].Own(stream, shards[s])
		}
	}
	publishAll()
	var oldShards []string
	for _, u := range f.OldUnits {
		oldShards = append(oldShards, shards[f.Shard(u)])
	}
	js, err := jetstream.New(app)
	if err != nil {
		sys.t.Fatal(err)
	}
	// The old processes hold their pins before the rollout starts, as a
	// fleet that ran a while does: the rollout then meets pins to outlive.
	if err := WaitPinned(context.Background(), js, stream, 30*time.Second, oldShards...); err != nil {
		sys.t.Fatal(err)
	}

	// Roll pod by pod, stopping mid-rollout: a restart kills the old
	// process and starts a new one that owns what it computes over NewUnits.
	for i := range f.Rolled {
		procs[i].Kill()
		procs[i] = sys.ShardOwner(f.NewProcess(i), serverOf(i+1))
		for _, s := range f.NewOwned(i) {
			procs[i].Own(stream, shards[s])
		}
	}
	publishAll()
	return pf
}

// Settled says, from each shard's leader (its CONSUMER.INFO), whether the
// servers show the fleet's ownership mid-rollout and nothing of the killed
// processes; nil when they do. A shard someone owns has a pin and nothing
// pending (a live owner took the message published after the rollout,
// which a killed process's pin would hold back until it lapsed), and at
// least one pull waiting per owner besides the pin's holder. A shard owned
// by nobody has a backlog, no pin and no pull waiting (a killed process's
// pin lapses after priority_timeout, its pulls at their expiry). Until
// then an audit can still see a killed process's pin or pulls.
func (pf *PlayedFleet) Settled(ctx context.Context, js jetstream.JetStream) error {
	for i, shard := range pf.Shards {
		info, err := ShardInfo(ctx, js, pf.Stream, shard)
		if err != nil {
			return err
		}
		who, pin := pf.Owners(i), PinOf(info)
		switch {
		case len(who) == 0 && (pin != "" || info.NumWaiting != 0 || info.NumPending+uint64(info.NumAckPending) == 0):
			return fmt.Errorf("%s: owned by nobody, its leader has pin %q, %d waiting, %d pending, %d unacked",
				shard, pin, info.NumWaiting, info.NumPending, info.NumAckPending)
		case len(who) > 0 && (pin == "" || info.NumPending != 0 || info.NumWaiting < len(who)-1):
			return fmt.Errorf("%s: owned by %v, its leader has pin %q, %d waiting, %d pending", shard, who, pin, info.NumWaiting, info.NumPending)
		}
	}
	return nil
}
