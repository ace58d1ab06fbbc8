// Command demo shows the blind spot the auditor exists for, on real servers:
// a mixed 2.14/2.14/2.12 cluster on loopback where the client's own server
// says 2.14 while a consumer is led by 2.12. Then, on the same cluster, it
// plays a sharded application mid-rollout (issue 34) and holds the
// auditor's view of who pulls each shard to what the application's own
// assignment says. It is run by `make demo`, and exits non-zero when the
// two differ.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	auditorBin := flag.String("auditor", "bin/nats-version-auditor", "the auditor binary to run")
	flag.Parse()
	h := &natstest.Program{}
	code := h.Run(func() int { return demo(h, *auditorBin) })
	h.RunCleanups()
	os.Exit(code)
}

// nodes is the cluster the demo starts: two servers at the floor and one
// below it. `make demo` builds the versions they run, and only those (a
// test holds its recipe to them). The system account hears the pulls
// (ShowingPulls), for the fleet; pinned consumers need 2.11, which all
// three run.
var nodes = []natstest.Spec{
	natstest.ShowingPulls(natstest.Node("n1", natstest.Floor, "demo")),
	natstest.ShowingPulls(natstest.Node("n2", natstest.Floor, "demo")),
	natstest.ShowingPulls(natstest.Node("n3", natstest.Old, "demo")),
}

func demo(h *natstest.Program, auditorBin string) int {
	started := time.Now()
	fmt.Printf("Building (once) and starting nats-server %s, %s and %s on loopback...\n", nodes[0].Version, nodes[1].Version, nodes[2].Version)
	sys := natstest.Start(h, nodes...)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	must(h, natstest.AddStream(app, server.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3, Storage: server.FileStorage}))
	must(h, natstest.AddConsumer(app, "ORDERS", server.ConsumerConfig{Durable: "worker", AckPolicy: server.AckExplicit, Replicas: 3}))
	must(h, natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n3"))

	fmt.Printf("\nWhat the application sees, connected to n1:\n")
	fmt.Printf("  nc.ConnectedServerVersion() = %s   (looks fine for CONSUMER.RESET)\n", app.ConnectedServerVersion())
	err := natstest.ResetConsumer(app, "ORDERS", "worker", 2*time.Second)
	switch {
	case errors.Is(err, nats.ErrTimeout):
		fmt.Printf("  $JS.API.CONSUMER.RESET.ORDERS.worker -> timed out after 2s: its leader n3 runs %s\n", strings.TrimPrefix(natstest.Old, "v"))
	default:
		fmt.Printf("  $JS.API.CONSUMER.RESET.ORDERS.worker -> %v\n", err)
	}

	fmt.Printf("\nWhat the auditor sees (nats-version-auditor check -s %s --user sys ...):\n\n", sys.URL("n1"))
	cmd := exec.Command(auditorBin, append([]string{"check"}, sys.SysArgs("n1")...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		fmt.Printf("\ncheck exited %d (2 = CRITICAL): a pre-rollout gate would stop here.\n", exit.ExitCode())
	} else if err != nil {
		h.Fatal(err)
	}

	matched := playFleet(h, sys, app, auditorBin)
	fmt.Printf("\nStopping the servers. The demo took %s.\n", time.Since(started).Round(100*time.Millisecond))
	if !matched {
		fmt.Fprintln(os.Stderr, "demo: the auditor's view of who pulls the shards differs from the simulation (see the rows marked DIFFERS)")
		return 1
	}
	return 0
}

func must(h *natstest.Program, err error) {
	if err != nil {
		h.Fatal(err)
	}
}

// The fleet: the seed's application (natstest.Fleet), stopped mid-rollout
// of V, as the real-server test TestPullersDuringARolloutOnRealServers
// plays it.
const (
	fleetPods            = 5
	fleetPartitions      = 1
	fleetOldV, fleetNewV = 8, 16
	fleetRolled          = 2
	// fleetPinTimeout is the shards' priority_timeout. The servers'
	// default is 2 minutes; a short one lets the killed processes' pins
	// lapse within the demo.
	fleetPinTimeout = 3 * time.Second
	// pullWatch is how long the auditor listens to the pulls. Each owner's
	// Consume pulls again at every natstest.ShardPullExpiry, so two
	// expiries and a margin hear every live owner at least once, even past
	// one late reply. (The auditor's default, 35s, is made for nats.go's
	// default expiry of 30s.)
	pullWatch = 2*natstest.ShardPullExpiry + time.Second
	// unpulledAfter is --unpulled-after: a backlog with no pull waiting
	// for longer than one pull expiry is pulled by nobody, as any owner
	// would have pulled again by then. (The default, 2 minutes, is the
	// servers' default priority_timeout.)
	unpulledAfter = natstest.ShardPullExpiry
	// fleetStream holds the fleet's shards; subjects fleetSubject.<shard>.
	fleetStream, fleetSubject = "WORK", "work"
)

// playFleet plays the fleet on sys up to the middle of its rollout, runs
// the auditor and prints, shard by shard, what the simulation computed
// beside what the auditor said. It reports whether the two agree.
func playFleet(h *natstest.Program, sys *natstest.System, app *nats.Conn, auditorBin string) bool {
	started := time.Now()
	f := natstest.NewFleet(fleetPods, fleetPartitions, fleetOldV, fleetNewV, fleetRolled)
	var rolled, staying []string
	for i, m := range f.Members {
		if f.IsRolled(i) {
			rolled = append(rolled, m)
		} else {
			staying = append(staying, m)
		}
	}
	fmt.Printf("\nA sharded application mid-rollout, on the same cluster (issue 34):\n")
	fmt.Printf("  %d pods each hash the units (%d partition × V shards) over the same members with a capped\n", fleetPods, fleetPartitions)
	fmt.Printf("  rendezvous hash, and pull the shards they own with pinned pulls. V goes %d → %d, pod by pod;\n", fleetOldV, fleetNewV)
	fmt.Printf("  stopped with %s on V %d and %s still on V %d. A restarted pod is a new process, <pod>-v2.\n",
		strings.Join(rolled, ", "), fleetNewV, strings.Join(staying, ", "), fleetOldV)
	fmt.Printf("Starting the fleet: stream %s, %d shards (R3, priority_timeout %s)...\n", fleetStream, f.Shards(), fleetPinTimeout)
	pf := sys.PlayFleet(f, app, []string{"n1", "n2", "n3"}, fleetStream, fleetSubject, fleetPinTimeout)

	// The restarted pods' old processes leave their pins and pulls on the
	// leaders for a moment; an audit before they lapse would see them.
	fmt.Printf("Waiting until the leaders no longer hold the killed processes' pins and pulls...\n")
	js, err := jetstream.New(app)
	must(h, err)
	must(h, natstest.Eventually(30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return pf.Settled(ctx, js)
	}))

	args := append([]string{"report", "--format", "json", "--pull-watch", pullWatch.String(), "--unpulled-after", unpulledAfter.String()}, sys.SysArgs("n1")...)
	fmt.Printf("\nWhat the auditor hears (nats-version-auditor report --format json --pull-watch %s --unpulled-after %s -s %s --user sys ...):\n\n",
		pullWatch, unpulledAfter, sys.URL("n1"))
	rep, err := runReport(auditorBin, args)
	must(h, err)
	rows, diffs := compareFleet(pf, sys.AccountKey(natstest.AppUser), rep)

	// The servers' own view of each shard, asked of its leader after the
	// audit: whether it holds a pin, the pulls waiting on it and the
	// messages no one has taken.
	shown := map[string]string{}
	for _, r := range rows {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := natstest.ShardInfo(ctx, js, fleetStream, r.shard)
		cancel()
		must(h, err)
		pin := "no pin"
		if natstest.PinOf(info) != "" {
			pin = "pinned"
		}
		shown[r.shard] = fmt.Sprintf("%s, %d waiting, %d pending", pin, info.NumWaiting, info.NumPending)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  shard\tunit\towner on V %d → V %d\tsimulation: owned by\tservers: CONSUMER.INFO\tauditor: pulled by (* holds the pin)\tauditor's finding\n", fleetOldV, fleetNewV)
	for _, r := range rows {
		// The last cell ends the line, not a tab: tabwriter pads only
		// tab-terminated cells, so no row ends in spaces.
		last := orDash(r.finding)
		if !r.ok {
			last += "   <- DIFFERS"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s → %s\t%s\t%s\t%s\t%s\n", r.shard, r.unit, r.oldOwner, r.newOwner, listOrNobody(r.simulated), shown[r.shard], listOrNobody(r.heard), last)
	}
	_ = tw.Flush()

	nobody, two := f.Counted()
	// Shards whose unit both topologies hold did not move: the seed's
	// point is that these too can have two owners.
	kept := func(is []int) int {
		n := 0
		for _, i := range is {
			if f.InBoth(i) {
				n++
			}
		}
		return n
	}
	got := map[findings.Code]int{}
	for _, r := range rows {
		got[r.finding]++
	}
	fmt.Printf("\n  pulled by nobody: the simulation %d, the auditor %d (%s); of them, %d of units both V hold\n",
		len(nobody), got[findings.ConsumerPulledByNobody], findings.ConsumerPulledByNobody, kept(nobody))
	fmt.Printf("  pulled by two:    the simulation %d, the auditor %d (%s); of them, %d of units both V hold\n",
		len(two), got[findings.ConsumerPulledByTwo], findings.ConsumerPulledByTwo, kept(two))
	// One message of each code, in the auditor's words.
	said := map[findings.Code]bool{}
	for _, fd := range rep.Findings {
		if fd.Stream == fleetStream && (fd.Code == findings.ConsumerPulledByTwo || fd.Code == findings.ConsumerPulledByNobody) && !said[fd.Code] {
			said[fd.Code] = true
			fmt.Printf("\n  %s: %s\n", fd.Code, fd.Message)
		}
	}
	fmt.Println()
	if len(diffs) == 0 {
		fmt.Printf("The auditor's view matches the simulation, shard by shard (it listened %.1fs; the fleet part took %s).\n",
			rep.Pulls.WatchedSeconds, time.Since(started).Round(100*time.Millisecond))
		return true
	}
	fmt.Printf("The auditor's view differs from the simulation (the fleet part took %s):\n", time.Since(started).Round(100*time.Millisecond))
	for _, d := range diffs {
		fmt.Printf("  %s\n", d)
	}
	return false
}

// auditorReport is the part of `report --format json` the demo reads (its
// documented JSON, cmd/nats-version-auditor/internal/render.Report).
type auditorReport struct {
	Findings []reportFinding `json:"findings"`
	Shards   []struct {
		Account  string `json:"account"`
		Stream   string `json:"stream"`
		Consumer string `json:"consumer"`
		Pull     *struct {
			Pullers []reportPuller `json:"pullers"`
		} `json:"pull"`
	} `json:"shards"`
	Pulls *struct {
		Accounts       []pullAccount `json:"accounts"`
		WatchedSeconds float64       `json:"watched_seconds"`
		Dropped        uint64        `json:"dropped"`
	} `json:"pulls"`
	Error string `json:"error"`
}

// reportFinding is one finding of the report.
type reportFinding struct {
	Code     findings.Code `json:"code"`
	Message  string        `json:"message"`
	Stream   string        `json:"stream"`
	Consumer string        `json:"consumer"`
}

// reportPuller is one process the auditor heard pulling a shard: its
// inbox key, its connection name where a connection was found for it, and
// whether its pulls carry the pin.
type reportPuller struct {
	Process string `json:"process"`
	Name    string `json:"name"`
	Holder  bool   `json:"pin_holder"`
}

// pullAccount is whether the auditor heard an account's pulls.
type pullAccount struct {
	Account string `json:"account"`
	Heard   bool   `json:"heard"`
}

// runReport runs the auditor with args (a `report --format json`) and
// decodes its document. Its exit code is the report's status (this
// cluster is CRITICAL: n3 is below the floor), so only an audit that
// could not run is an error: the document then says why.
func runReport(auditorBin string, args []string) (*auditorReport, error) {
	var out bytes.Buffer
	cmd := exec.Command(auditorBin, args...)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	var rep auditorReport
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		return nil, fmt.Errorf("the auditor's report (%v): %w: %q", err, jerr, out.String())
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("the auditor could not audit: %s", rep.Error)
	}
	return &rep, nil
}

// fleetRow is one shard: what the simulation computed and what the
// auditor said.
type fleetRow struct {
	shard, unit, oldOwner, newOwner string
	// simulated are the processes that own the shard, as the simulation
	// computes; heard those the auditor names pulling it, the pin's
	// holder marked "*".
	simulated, heard []string
	finding          findings.Code
	ok               bool
}

// compareFleet holds rep, the auditor's report, to the simulation of pf,
// shard by shard: the auditor names the simulation's owners as the
// shard's pullers, says CONSUMER_PULLED_BY_NOBODY where it has none and
// CONSUMER_PULLED_BY_TWO where it has more than one, and nothing else of
// who pulls it. appAccount is the account of the fleet (the auditor's key
// for it). diffs says each disagreement; none when the two agree.
func compareFleet(pf *natstest.PlayedFleet, appAccount string, rep *auditorReport) (rows []fleetRow, diffs []string) {
	switch {
	case rep.Pulls == nil:
		diffs = append(diffs, "the auditor did not listen to the pulls")
	case rep.Pulls.Dropped > 0:
		diffs = append(diffs, fmt.Sprintf("the auditor dropped %d pull requests: its view is incomplete", rep.Pulls.Dropped))
	}
	if rep.Pulls != nil && !slices.Contains(rep.Pulls.Accounts, pullAccount{Account: appAccount, Heard: true}) {
		diffs = append(diffs, fmt.Sprintf("the auditor did not hear the pulls of account %s", appAccount))
	}

	// The auditor's findings on who pulls each shard: one at most.
	found := map[string][]findings.Code{}
	for _, fd := range rep.Findings {
		switch fd.Code {
		case findings.ConsumerPulledByNobody, findings.ConsumerPulledByTwo, findings.ConsumerStalePin:
			if fd.Stream == pf.Stream {
				found[fd.Consumer] = append(found[fd.Consumer], fd.Code)
			}
		}
	}
	heard := map[string][]string{}
	names := map[string][]string{}
	listed := map[string]bool{}
	for _, s := range rep.Shards {
		if s.Stream != pf.Stream || s.Account != appAccount {
			continue
		}
		listed[s.Consumer] = true
		if s.Pull == nil {
			continue
		}
		for _, p := range s.Pull.Pullers {
			// A puller no connection was found for has no name: it is
			// shown by its inbox key, which the simulation does not know.
			name := p.Name
			if name == "" {
				name = p.Process
			}
			names[s.Consumer] = append(names[s.Consumer], name)
			if p.Holder {
				name += "*"
			}
			heard[s.Consumer] = append(heard[s.Consumer], name)
		}
	}

	for i, shard := range pf.Shards {
		u := pf.Unit(i)
		r := fleetRow{shard: shard, unit: u.String(), oldOwner: pf.OldAssign[u], newOwner: pf.NewAssign[u],
			simulated: pf.Owners(i), heard: heard[shard], ok: true}
		if r.oldOwner == "" {
			r.oldOwner = "(added)"
		}
		if r.newOwner == "" {
			r.newOwner = "(removed)"
		}
		slices.SortFunc(r.heard, func(a, b string) int { return strings.Compare(strings.TrimSuffix(a, "*"), strings.TrimSuffix(b, "*")) })
		var want findings.Code
		switch {
		case len(r.simulated) == 0:
			want = findings.ConsumerPulledByNobody
		case len(r.simulated) > 1:
			want = findings.ConsumerPulledByTwo
		}
		codes := found[shard]
		if len(codes) > 0 {
			r.finding = codes[0]
		}
		got := slices.Sorted(slices.Values(names[shard]))
		switch {
		case !listed[shard]:
			r.ok = false
			diffs = append(diffs, fmt.Sprintf("%s: not in the auditor's report", shard))
		case !slices.Equal(got, r.simulated):
			r.ok = false
			diffs = append(diffs, fmt.Sprintf("%s: the auditor heard %s pulling, the simulation's owners are %s", shard, listOrNobody(got), listOrNobody(r.simulated)))
		}
		switch {
		case len(codes) > 1:
			r.ok = false
			diffs = append(diffs, fmt.Sprintf("%s: %d findings on who pulls it, %v", shard, len(codes), codes))
		case r.finding != want:
			r.ok = false
			diffs = append(diffs, fmt.Sprintf("%s: the auditor's finding %s, the simulation's %s", shard, orDash(r.finding), orDash(want)))
		}
		rows = append(rows, r)
	}
	for c, codes := range found {
		if !slices.Contains(pf.Shards, c) {
			diffs = append(diffs, fmt.Sprintf("%s: %v on a consumer that is no shard of the fleet", c, codes))
		}
	}
	return rows, diffs
}

func listOrNobody(ss []string) string {
	if len(ss) == 0 {
		return "nobody"
	}
	return strings.Join(ss, ", ")
}

func orDash[S ~string](s S) string {
	if s == "" {
		return "-"
	}
	return string(s)
}
