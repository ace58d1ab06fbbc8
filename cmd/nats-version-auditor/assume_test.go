package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestAssumeAndPlanCommands runs check and report with --assume, and plan,
// on a cluster whose n3 runs 2.12.15 and leads a consumer.
func TestAssumeAndPlanCommands(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "worker", 3)
	if err := natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n3"); err != nil {
		t.Fatal(err)
	}

	// The gate as it is stays the gate.
	res, now := checkJSONOf(t, sys, "n1")
	if res.code != 2 || now.WhatIf != nil {
		t.Fatalf("check: exit %d, what_if %+v", res.code, now.WhatIf)
	}
	if l := now.APILevels.Clusters; len(l) != 1 || l[0].MinLevel != 3 || strings.Join(l[0].HeldBy, ",") != "n3" {
		t.Errorf("api_levels.clusters %+v, want c1 at 3, held back by n3", l)
	}

	t.Run("upgrading n3 would be OK", func(t *testing.T) {
		res, out := checkJSONOf(t, sys, "n1", "--assume", "n3=2.14.0")
		if res.code != 0 || out.Status != findings.OK || len(out.Findings) != 0 {
			t.Fatalf("exit %d, status %s%s", res.code, out.Status, codes(out.Findings))
		}
		w := out.WhatIf
		if w == nil || w.StatusNow != findings.Critical || len(w.Appear) != 0 || len(withCode(w.Gone, findings.ConsumerLeaderBelowFloor)) != 1 {
			t.Fatalf("what_if %+v", w)
		}
		if len(w.Assumed) != 1 || w.Assumed[0].Name != "n3" || w.Assumed[0].ToLevel != 4 {
			t.Errorf("assumed %+v", w.Assumed)
		}
		if l := out.APILevels.Clusters; len(l) != 1 || l[0].MinLevel != 4 {
			t.Errorf("would-be api_levels %+v, want 4", l)
		}
	})

	t.Run("downgrading the cluster, nagios", func(t *testing.T) {
		res := runCmd(t, append([]string{"check", "--format", "nagios", "--assume", "cluster/c1=2.12.15"}, sys.SysArgs("n1")...)...)
		if res.code != 2 || !strings.HasPrefix(res.stdout, "NATS VERSIONS CRITICAL - assuming cluster/c1=2.12.15: ") {
			t.Fatalf("exit %d: %s%s", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("a server nobody heard of", func(t *testing.T) {
		res := runCmd(t, append([]string{"check", "--assume", "n9=2.14.0"}, sys.SysArgs("n1")...)...)
		if res.code != exitUnknown || !strings.Contains(res.stderr, "--assume: assumption n9=2.14.0: no server named n9 answered the audit") {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
	})

	t.Run("report says what would change, and exits 0", func(t *testing.T) {
		res := runCmd(t, append([]string{"report", "--assume", "n3=2.14.0"}, sys.SysArgs("n1")...)...)
		if res.code != 0 || !strings.HasPrefix(res.stdout, "OK assuming n3=2.14.0: ") || !strings.Contains(res.stdout, "WOULD GO (") {
			t.Fatalf("exit %d:\n%s%s", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("plan", func(t *testing.T) {
		res := runCmd(t, append([]string{"plan", "--to", "2.14.0", "--format", "json"}, sys.SysArgs("n1")...)...)
		var plan struct {
			Status     findings.Severity  `json:"status"`
			Steps      []auditor.PlanStep `json:"steps"`
			FloorMetAt *int               `json:"floor_met_at_step"`
			Unchanged  []string           `json:"unchanged"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &plan); err != nil {
			t.Fatalf("plan printed no JSON (exit %d): %v\n%s%s", res.code, err, res.stdout, res.stderr)
		}
		if res.code != 0 || plan.Status != findings.OK || len(plan.Steps) != 1 || plan.Steps[0].Server != "n3" ||
			plan.FloorMetAt == nil || *plan.FloorMetAt != 1 || strings.Join(plan.Unchanged, ",") != "n1,n2" {
			t.Fatalf("exit %d, plan %+v", res.code, plan)
		}
		res = runCmd(t, append([]string{"plan", "--to", "2.12.15", "--servers", "n1,n2"}, sys.SysArgs("n1")...)...)
		if res.code != 2 || !strings.HasPrefix(res.stdout, "CRITICAL: plan to 2.12.15 (JetStream API level 3): 2 steps; the floor 2.14.0 is never met") {
			t.Fatalf("downgrade: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		res = runCmd(t, append([]string{"plan", "--to", "2.14.0", "--cluster", "west"}, sys.SysArgs("n1")...)...)
		if res.code != exitUnknown || !strings.Contains(res.stderr, `no server of cluster "west" answered the audit`) {
			t.Fatalf("unknown cluster: exit %d: %s", res.code, res.stderr)
		}
	})
}
