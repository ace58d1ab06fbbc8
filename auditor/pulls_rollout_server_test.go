package auditor

import (
	"context"
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

	// The watch listens from before the fleet starts, as serve would.
	watch, err := collect.WatchPulls(t.Context(), sysConn, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()

	// The fleet, played up to the middle of its rollout (natstest.Fleet):
	// the shards are the union of the units of both topologies, unit
	// (p, v) is shard-<p*newV+v> on subject work.<p*newV+v>.
	fleet := natstest.NewFleet(pods, partitions, oldV, newV, rolled)
	played := sys.PlayFleet(fleet, app, servers, "WORK", "work", pinTimeout)
	shards := played.Shards

	// The simulation's count: the processes that believe they own each
	// shard.
	simulated := map[string][]string{}
	for i, shard := range shards {
		simulated[shard] = fleet.Owners(i)
	}
	nobody, two := fleet.Counted()
	names := func(is []int) []string {
		var out []string
		for _, i := range is {
			out = append(out, shards[i])
		}
		return out
	}
	wantNobody, wantTwo := names(nobody), names(two)
	if len(wantNobody) == 0 || len(wantTwo) == 0 {
		t.Fatalf("the simulation gives %d shards pulled by nobody and %d pulled by two: the scenario tests nothing", len(wantNobody), len(wantTwo))
	}

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
	kept := func(is []int) int {
		n := 0
		for _, i := range is {
			if fleet.InBoth(i) {
				n++
			}
		}
		return n
	}
	t.Logf("mid-rollout, %d of %d pods on V %d (N %d, V %d → %d, pin timeout %s, pull expiry %s, horizon %s): the audit agreed after %s; "+
		"the simulation: %d pulled by nobody %v (%d of units both topologies hold), %d pulled by two %v (%d of units both topologies hold)",
		rolled, pods, newV, partitions, oldV, newV, pinTimeout, natstest.ShardPullExpiry, horizon, time.Since(start).Round(time.Millisecond),
		len(wantNobody), wantNobody, kept(nobody), len(wantTwo), wantTwo, kept(two))

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tunit\told V owner → new V owner\tsimulated owners\taudit's pullers (* holds the pin)\tleader\tserver's pin\tnum_waiting\tpending\tfinding")
	for i, shard := range shards {
		u := fleet.Unit(i)
		oldOwner := fleet.OldAssign[u]
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
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", shard, u, oldOwner, fleet.NewAssign[u],
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
