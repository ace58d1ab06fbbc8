package auditor

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestPullersDuringARolloutOnRealServers plays the seed's fleet (issue 34,
// "Shown against an independent count"): processes that each hash the
// shards over their own unit set with a capped rendezvous hash and pull
// what they own with nats.go's pinned Consume, and a rollout of V, 8 → 16,
// done pod by pod. Mid-rollout, the old pods hash over the old units and
// the new pods over the new ones, so some shards are owned by nobody and
// some by two processes, among them shards of units both topologies hold.
// The test computes the owners of each shard from its own assignment and
// polls the audit until, shard by shard, the processes it names pulling
// are the owners, CONSUMER_PULLED_BY_TWO marks exactly the shards with two
// owners and CONSUMER_PULLED_BY_NOBODY exactly those with none; each
// consumer's CONSUMER.INFO backs the counts.
func TestPullersDuringARolloutOnRealServers(t *testing.T) {
	const (
		partitions = 1
		oldV, newV = 8, 16
		pods       = 5
		rolled     = 2 // pods p0 .. p<rolled-1> run the new V
		pinTimeout = 3 * time.Second
		// horizon is a little above the owners' pull expiry: a live owner
		// pulls again at least that often, a killed one drops out.
		horizon = natstest.ShardPullExpiry + 1500*time.Millisecond
	)
	servers := []string{"n1", "n2", "n3"}
	spec := func(name, v string) natstest.Spec { return natstest.ShowingPulls(natstest.Node(name, v, "c1")) }
	sys := natstest.Start(t, spec("n1", natstest.Floor), spec("n2", natstest.New), spec("n3", natstest.New))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}

	// The shards are the union of the units of both topologies: unit
	// (p, v) is shard-<p*newV+v>, on subject work.<p*newV+v>.
	oldUnits, newUnits := rolloutUnits(partitions, oldV), rolloutUnits(partitions, newV)
	shards, err := natstest.AddShards(app, "WORK", "work", len(newUnits), 3, pinTimeout)
	if err != nil {
		t.Fatal(err)
	}
	shardOf := func(u rolloutUnit) int { return u.p*newV + u.v }
	unitOf := map[string]rolloutUnit{}
	for _, u := range newUnits {
		unitOf[shards[shardOf(u)]] = u
	}
	publishAll := func() {
		for i := range shards {
			if _, err := natstest.Publish(app, "work."+strconv.Itoa(i), []byte("job"), 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}

	watch, err := collect.WatchPulls(t.Context(), sysConn, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()

	// Every pod sees the same membership; a restarted pod keeps its
	// member name (the hash key) and is a new process.
	members := make([]string, pods)
	for i := range members {
		members[i] = "p" + strconv.Itoa(i)
	}
	oldAssign, newAssign := assignUnits(oldUnits, members), assignUnits(newUnits, members)
	serverOf := func(pod int) string { return servers[pod%len(servers)] }

	// Before the rollout: every pod runs the old V and pulls what it owns.
	owners := make([]*natstest.ShardOwner, pods)
	for i, m := range members {
		owners[i] = sys.ShardOwner(m, serverOf(i))
		for _, u := range oldUnits {
			if oldAssign[u] == m {
				owners[i].Own("WORK", shards[shardOf(u)])
			}
		}
	}
	publishAll()
	var oldShards []string
	for _, u := range oldUnits {
		oldShards = append(oldShards, shards[shardOf(u)])
	}
	if err := natstest.WaitPinned(t.Context(), js, "WORK", 30*time.Second, oldShards...); err != nil {
		t.Fatal(err)
	}

	// Roll pod by pod, stopping mid-rollout: a restart kills the old
	// process and starts a new one that owns what it computes over the
	// new units.
	isNew := map[string]bool{}
	for i := range rolled {
		owners[i].Kill()
		// The new process lands on another server than the old.
		owners[i] = sys.ShardOwner(members[i]+"-v2", serverOf(i+1))
		isNew[members[i]] = true
		for _, u := range newUnits {
			if newAssign[u] == members[i] {
				owners[i].Own("WORK", shards[shardOf(u)])
			}
		}
	}
	processOf := func(member string) string {
		if isNew[member] {
			return member + "-v2"
		}
		return member
	}

	// The simulation's count: the processes that believe they own each
	// shard.
	simulated := map[string][]string{}
	var wantNobody, wantTwo []string
	for _, u := range newUnits {
		shard := shards[shardOf(u)]
		var who []string
		if m, ok := oldAssign[u]; ok && !isNew[m] {
			who = append(who, processOf(m))
		}
		if m := newAssign[u]; isNew[m] {
			who = append(who, processOf(m))
		}
		slices.Sort(who)
		simulated[shard] = who
		switch {
		case len(who) == 0:
			wantNobody = append(wantNobody, shard)
		case len(who) > 1:
			wantTwo = append(wantTwo, shard)
		}
	}
	if len(wantNobody) == 0 || len(wantTwo) == 0 {
		t.Fatalf("the simulation gives %d shards pulled by nobody and %d pulled by two: the scenario tests nothing", len(wantNobody), len(wantTwo))
	}

	// A message on every shard: pins form where someone pulls, a backlog
	// waits where nobody does.
	publishAll()

	policy := Policy{Floor: version.DefaultFloor, ShardPolicy: ShardPolicy{UnpulledAfter: time.Second}}
	var (
		snap  *snapshot.Snapshot
		infos map[string]*jetstream.ConsumerInfo
		found map[string]findings.Finding
	)
	start := time.Now()
	err = natstest.Eventually(60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var err error
		if snap, err = collect.Collect(ctx, sysConn, collect.Options{}); err != nil {
			return err
		}
		watch.Fill(ctx, snap, horizon)
		if snap.Pulls == nil || !snap.Pulls.Visible[sys.AccountKey(natstest.AppUser)] {
			return fmt.Errorf("pulls of APP not visible: %+v", snap.Pulls)
		}
		found = map[string]findings.Finding{}
		for _, f := range Evaluate(snap, policy).Findings {
			switch f.Code {
			case findings.ConsumerPulledByTwo, findings.ConsumerPulledByNobody, findings.ConsumerStalePin:
				if _, dup := found[f.Consumer]; dup {
					return fmt.Errorf("%s: two shard findings, %s and %s", f.Consumer, found[f.Consumer].Code, f.Code)
				}
				found[f.Consumer] = f
			}
		}
		infos = map[string]*jetstream.ConsumerInfo{}
		seen := 0
		for i := range snap.Consumers {
			a := &snap.Consumers[i]
			if a.Stream != "WORK" {
				continue
			}
			seen++
			who, ok := simulated[a.Consumer]
			if !ok {
				return fmt.Errorf("%s: a consumer the simulation does not know", a.Consumer)
			}
			p := a.Pull
			if p == nil || !p.FromLeader {
				return fmt.Errorf("%s: no leader's record: %+v", a.Consumer, p)
			}
			info, err := natstest.ShardInfo(ctx, js, "WORK", a.Consumer)
			if err != nil {
				return err
			}
			infos[a.Consumer] = info
			pin := natstest.PinOf(info)

			// The processes the audit names are the simulation's owners.
			var heard []string
			for _, pl := range p.Pullers {
				if pl.Name == "" {
					return fmt.Errorf("%s: a puller no connection was found for: %+v", a.Consumer, pl)
				}
				heard = append(heard, pl.Name)
			}
			slices.Sort(heard)
			if !slices.Equal(heard, who) {
				return fmt.Errorf("%s: the audit heard %v pulling, the simulation's owners are %v", a.Consumer, heard, who)
			}

			// The findings are the simulation's counts.
			want := findings.Code("")
			switch {
			case len(who) == 0:
				want = findings.ConsumerPulledByNobody
			case len(who) > 1:
				want = findings.ConsumerPulledByTwo
			}
			if got := found[a.Consumer].Code; got != want {
				return fmt.Errorf("%s (owners %v): finding %q, want %q", a.Consumer, who, got, want)
			}

			// The servers back it: the leader's own CONSUMER.INFO.
			switch {
			case a.Leader != info.Cluster.Leader || p.PinnedID != pin:
				return fmt.Errorf("%s: the audit read leader %s pin %q, CONSUMER.INFO leader %s pin %q",
					a.Consumer, a.Leader, p.PinnedID, info.Cluster.Leader, pin)
			case len(who) == 0 && (info.NumWaiting != 0 || info.NumPending+uint64(info.NumAckPending) == 0):
				return fmt.Errorf("%s: owned by nobody, yet CONSUMER.INFO has %d waiting, %d pending, %d unacked",
					a.Consumer, info.NumWaiting, info.NumPending, info.NumAckPending)
			case len(who) > 0 && (pin == "" || info.NumPending != 0):
				return fmt.Errorf("%s: owned by %v, CONSUMER.INFO pin %q, %d pending", a.Consumer, who, pin, info.NumPending)
			case len(who) > 1 && info.NumWaiting < len(who)-1:
				return fmt.Errorf("%s: owned by %v, CONSUMER.INFO has %d waiting", a.Consumer, who, info.NumWaiting)
			case len(who) > 0 && (len(p.Pullers) == 0 || !p.Pullers[0].Holder || p.Pullers[0].PinID != pin):
				return fmt.Errorf("%s: owned by %v, the leader's pin %q, the audit's pullers %+v", a.Consumer, who, pin, p.Pullers)
			}
		}
		if seen != len(shards) {
			return fmt.Errorf("%d shards audited, want %d", seen, len(shards))
		}
		// The findings, counted apart from the shards: exactly the
		// simulation's.
		byCode := map[findings.Code][]string{}
		for c, f := range found {
			byCode[f.Code] = append(byCode[f.Code], c)
		}
		for code, want := range map[findings.Code][]string{findings.ConsumerPulledByTwo: wantTwo, findings.ConsumerPulledByNobody: wantNobody} {
			got := byCode[code]
			slices.SortFunc(got, byShardNumber)
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s for %v, the simulation's %v", code, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("mid-rollout (%d of %d pods on V %d): %v", rolled, pods, newV, err)
	}
	kept := func(ss []string) int {
		n := 0
		for _, s := range ss {
			if _, ok := oldAssign[unitOf[s]]; ok {
				n++
			}
		}
		return n
	}
	t.Logf("mid-rollout, %d of %d pods on V %d (N %d, V %d → %d, pin timeout %s, pull expiry %s, horizon %s): the audit agreed after %s; "+
		"the simulation: %d pulled by nobody %v (%d of units both topologies hold), %d pulled by two %v (%d of units both topologies hold)",
		rolled, pods, newV, partitions, oldV, newV, pinTimeout, natstest.ShardPullExpiry, horizon, time.Since(start).Round(time.Millisecond),
		len(wantNobody), wantNobody, kept(wantNobody), len(wantTwo), wantTwo, kept(wantTwo))

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tunit\told V owner → new V owner\tsimulated owners\taudit's pullers (* holds the pin)\tleader\tserver's pin\tnum_waiting\tpending\tfinding")
	for _, shard := range shards {
		u := unitOf[shard]
		oldOwner := oldAssign[u]
		if oldOwner == "" {
			oldOwner = "(added)"
		}
		var a *snapshot.Asset
		for i := range snap.Consumers {
			if snap.Consumers[i].Consumer == shard {
				a = &snap.Consumers[i]
			}
		}
		var heard []string
		for _, pl := range a.Pull.Pullers {
			name := pl.Name + "@" + pl.Server
			if pl.Holder {
				name += "*"
			}
			heard = append(heard, name)
		}
		info := infos[shard]
		pin := natstest.PinOf(info)
		if pin == "" {
			pin = "-"
		}
		code := string(found[shard].Code)
		if code == "" {
			code = "-"
		}
		fmt.Fprintf(tw, "%s\t%d.%d\t%s → %s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", shard, u.p, u.v, oldOwner, newAssign[u],
			listOrNone(simulated[shard]), listOrNone(heard), info.Cluster.Leader, pin, info.NumWaiting, info.NumPending, code)
	}
	_ = tw.Flush()
	t.Logf("shard by shard:\n%s", b.String())
	for _, shard := range wantTwo {
		t.Logf("%s: %s", found[shard].Code, found[shard].Message)
	}
	if len(wantNobody) > 0 {
		t.Logf("%s: %s", found[wantNobody[0]].Code, found[wantNobody[0]].Message)
	}
}

// rolloutUnit is one unit of work of the seed's application: partition p,
// shard v of it.
type rolloutUnit struct{ p, v int }

func (u rolloutUnit) String() string { return fmt.Sprintf("%d.%d", u.p, u.v) }

// rolloutUnits is the unit set of n partitions of v shards, in order.
func rolloutUnits(n, v int) []rolloutUnit {
	var us []rolloutUnit
	for p := range n {
		for s := range v {
			us = append(us, rolloutUnit{p, s})
		}
	}
	return us
}

// assignUnits is the seed's capped rendezvous hash: each unit, in order,
// goes to the member with the highest score for it, a hash of (member,
// unit), skipping members that already hold cap = ceil(units/members).
func assignUnits(units []rolloutUnit, members []string) map[rolloutUnit]string {
	score := func(m string, u rolloutUnit) uint64 {
		h := sha256.Sum256([]byte(m + "/" + u.String()))
		return binary.BigEndian.Uint64(h[:8])
	}
	capacity := (len(units) + len(members) - 1) / len(members)
	load := map[string]int{}
	out := map[rolloutUnit]string{}
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

// byShardNumber orders shard-<i> names by i.
func byShardNumber(a, b string) int {
	na, _ := strconv.Atoi(strings.TrimPrefix(a, "shard-"))
	nb, _ := strconv.Atoi(strings.TrimPrefix(b, "shard-"))
	return na - nb
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "nobody"
	}
	return strings.Join(ss, ", ")
}
