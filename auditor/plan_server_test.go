package auditor_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// streamAnswers asks the stream's leader for its info.
func streamAnswers(app *nats.Conn, stream string) error {
	msg, err := app.Request("$JS.API.STREAM.INFO."+stream, nil, time.Second)
	if err != nil {
		return err
	}
	if strings.Contains(string(msg.Data), `"error"`) {
		return fmt.Errorf("%s", msg.Data)
	}
	return nil
}

// TestPlanFollowedOnRealServers plans the upgrade of three 2.12.15 servers
// to 2.14.0 and follows it step by step: each server stopped, checked while
// it is down, restarted on 2.14.0, and the audit held to the step's
// prediction.
func TestPlanFollowedOnRealServers(t *testing.T) {
	sys := natstest.Start(t, natstest.Node("n1", natstest.Old, "c1"), natstest.Node("n2", natstest.Old, "c1"), natstest.Node("n3", natstest.Old, "c1"))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	if err := natstest.MoveMetaLeader(sysConn, "n1", "n2", "n3"); err != nil {
		t.Fatal(err)
	}
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addR3(t, app, server.StreamConfig{Name: "ORDERS"}, "worker")
	if err := natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n2"); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveStreamLeader(app, "ORDERS", "n2"); err != nil {
		t.Fatal(err)
	}
	local := server.StreamConfig{Name: "LOCAL", Subjects: []string{"local.>"}, Replicas: 1, Storage: server.FileStorage,
		Placement: &server.Placement{Tags: []string{"node:n3"}}}
	if err := natstest.AddStream(app, local); err != nil {
		t.Fatal(err)
	}

	snap, _ := auditOf(t, sys, "n1")
	plan, err := auditor.MakePlan(auditor.Evaluate(snap, auditor.Policy{Floor: version.DefaultFloor}), auditor.Policy{Floor: version.DefaultFloor}, version.DefaultFloor, auditor.PlanScope{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, st := range plan.Steps {
		order = append(order, st.Server)
		t.Logf("%s: %s; down %+v; bare quorum %d groups; no RESET %d consumers; appear %s; gone %s",
			st, st.Status, st.Unavailable, len(st.BareQuorum), len(st.NoReset), codesOf(st.Appear), codesOf(st.Gone))
	}
	// n3 leads LOCAL alone, n2 the R3 stream and its consumer, n1 the meta group.
	if !slices.Equal(order, []string{"n3", "n2", "n1"}) || plan.FloorMetAt == nil || *plan.FloorMetAt != 3 || plan.Status != findings.Critical {
		t.Fatalf("order %v, floor met at %v, status %s", order, plan.FloorMetAt, plan.Status)
	}
	if got := plan.Steps[0].Unavailable; len(got) != 1 || got[0].Stream != "LOCAL" {
		t.Fatalf("step 1 takes down %+v, want LOCAL", got)
	}

	versions := map[string]string{"n1": natstest.Old, "n2": natstest.Old, "n3": natstest.Old}
	for _, st := range plan.Steps {
		if err := sys.Stop(st.Server, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		// While it is down: what the step says is unavailable does not
		// answer, what keeps a bare quorum does.
		for _, g := range st.Unavailable {
			if g.Kind == "stream" {
				if err := streamAnswers(app, g.Stream); err == nil {
					t.Errorf("step %d: %s answers while %s is down; the plan says: %s", st.Step, g.Stream, st.Server, g.Reason)
				}
			}
		}
		for _, g := range st.BareQuorum {
			if g.Kind != "stream" {
				continue
			}
			err := natstest.Eventually(30*time.Second, func() error { return streamAnswers(app, g.Stream) })
			if err != nil {
				t.Errorf("step %d: %s with a bare quorum does not answer: %v", st.Step, g.Stream, err)
			}
		}
		sys.Restart(st.Server, natstest.Floor)
		versions[st.Server] = natstest.Floor
		after := holdToPrediction(t, sys, "n1", versions, st.After, st.Depend)
		t.Logf("step %d audit: %s %s", st.Step, after.Status, codesOf(after.Findings))
		if after.Status != st.After.Status {
			t.Errorf("step %d: status %s, predicted %s", st.Step, after.Status, st.After.Status)
		}
		var old []string
		for _, s := range after.Servers {
			if "v"+s.Version != natstest.Floor {
				old = append(old, s.Name)
			}
		}
		if !slices.Equal(old, st.StillOld) {
			t.Errorf("step %d: still old %v, predicted %v", st.Step, old, st.StillOld)
		}
	}
}
