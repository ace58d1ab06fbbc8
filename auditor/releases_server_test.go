package auditor_test

import (
	"slices"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestUpgradePathOnRealServers plans three 2.14.0 servers to 2.15.3, a path
// the NATS docs do not support (releases.go), assumes one of them on the
// bad release 2.14.4, then restarts the plan's first server on 2.15.3 and
// holds the audit to the step's prediction: the other two, still on
// 2.14.0, are UPGRADE_PATH_MIXED.
func TestUpgradePathOnRealServers(t *testing.T) {
	sys := natstest.Start(t, natstest.Node("n1", natstest.Floor, "c1"), natstest.Node("n2", natstest.Floor, "c1"), natstest.Node("n3", natstest.Floor, "c1"))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addR3(t, app, server.StreamConfig{Name: "ORDERS"}, "worker")

	snap, before := auditOf(t, sys, "n1")
	for _, f := range before.Findings {
		if f.Code == findings.UpgradePathMixed || f.Code == findings.UpgradePathUnsupported || f.Code == findings.KnownBadRelease {
			t.Errorf("a cluster of one release, none of them bad: %s", f.Message)
		}
	}

	to, err := version.ParseRelease("2.15.3")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := auditor.MakePlan(auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor}), auditor.Policy{Floor: version.DefaultFloor}, to, auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	// The release to go to first: the newest 2.14 the level table knows.
	firstRelease := releases.PathRules[0].First().String()
	if plan.First.String() != firstRelease || len(plan.Steps) != 3 {
		t.Fatalf("plan to 2.15.3 from 2.14.0: first %q, %d steps", plan.First, len(plan.Steps))
	}
	for _, st := range plan.Steps {
		t.Logf("%s: %s; path %s; appear %s", st, st.Status, codesOf(st.Path), codesOf(st.Appear))
		if len(st.Path) != 1 || st.Path[0].Code != findings.UpgradePathUnsupported || st.Path[0].Server != st.Server ||
			st.Path[0].Release != firstRelease || st.First != plan.First {
			t.Errorf("%s: path %s, first %s; want UPGRADE_PATH_UNSUPPORTED of %s, first %s", st, codesOf(st.Path), st.First, st.Server, firstRelease)
		}
	}

	w := mustAssume(t, snap, "n1=2.14.4")
	logWhatIf(t, w)
	i := slices.IndexFunc(w.Appear, func(f findings.Finding) bool { return f.Code == findings.KnownBadRelease })
	if i < 0 || w.Appear[i].Server != "n1" || w.Appear[i].Release != "2.14.5" || w.After.Status != findings.Critical {
		t.Fatalf("--assume n1=2.14.4: %s appear %s", w.After.Status, codesOf(w.Appear))
	}

	// The first step on real servers: the audit afterwards holds what the
	// step predicts, the move's own path finding aside.
	first, via := plan.Steps[0], plan.Steps[len(plan.Steps)-1].Server
	if err := sys.Stop(first.Server, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	sys.Restart(first.Server, natstest.New)
	after := holdToPrediction(t, sys, via, map[string]string{first.Server: natstest.New}, first.After, first.Depend)
	var mixed []string
	for _, f := range after.Findings {
		switch f.Code {
		case findings.UpgradePathMixed:
			mixed = append(mixed, f.Server)
			if f.Release != firstRelease {
				t.Errorf("%s: release %q, want %s", f.Message, f.Release, firstRelease)
			}
		case findings.UpgradePathUnsupported:
			t.Errorf("a live audit judges no move: %s", f.Message)
		}
	}
	var want []string
	for _, n := range []string{"n1", "n2", "n3"} {
		if n != first.Server {
			want = append(want, n)
		}
	}
	if !slices.Equal(mixed, want) {
		t.Errorf("UPGRADE_PATH_MIXED on %v with %s on 2.15.3, want %v", mixed, first.Server, want)
	}
}
