package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// mixedButAtFloor starts a cluster in the middle of an upgrade from 2.14.0
// to 2.15.3: every server at the floor, the versions mixed. It returns once
// a check says WARNING, CLUSTER_MIXED_VERSIONS among its findings.
func mixedButAtFloor(t *testing.T) *natstest.System {
	t.Helper()
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.New))
	err := natstest.Eventually(30*time.Second, func() error {
		res, out := checkJSONOf(t, sys, "n1")
		if res.code != int(findings.Warning) || len(withCode(out.Findings, findings.ClusterMixedVersions)) != 1 {
			return fmt.Errorf("exit %d:%s", res.code, codes(out.Findings))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the mixed cluster is not WARNING with CLUSTER_MIXED_VERSIONS: %v", err)
	}
	return sys
}

// gateOf is the gate block of check's JSON, if any.
type gateOf struct {
	Status findings.Severity `json:"status"`
	Gate   *struct {
		Accept   findings.Severity `json:"accept"`
		ExitCode int               `json:"exit_code"`
	} `json:"gate"`
}

// TestAcceptWarning: a one-shot gate on a NATS upgrade in progress (mixed
// versions, WARNING) passes with --accept warning, and with its old name
// --wait-for, without --wait; it prints the status as it is, WARNING, and
// says the gate accepted it. Without it the gate exits 1; CRITICAL and
// UNKNOWN never pass.
func TestAcceptWarning(t *testing.T) {
	t.Parallel()
	sys := mixedButAtFloor(t)
	check := func(args ...string) result {
		return runCmd(t, append(append([]string{"check"}, args...), sys.SysArgs("n1")...)...)
	}
	const accepted = "accepted: WARNING passes the gate under --accept warning (exit 0)\n"

	for _, accept := range [][]string{{"--accept", "warning"}, {"--accept=warning"}, {"--wait-for", "warning"}} {
		res := check(accept...)
		if res.code != exitOK || !strings.HasPrefix(res.stdout, "WARNING: 3 of 3 expected servers answered") || !strings.HasSuffix(res.stdout, accepted) {
			t.Errorf("%v: exit %d, want 0 with the WARNING report and %q:\n%s%s", accept, res.code, accepted, res.stdout, res.stderr)
		}
	}
	res := check("--accept", "warning", "--format", "nagios")
	if res.code != exitOK || !strings.HasPrefix(res.stdout, "NATS VERSIONS WARNING - ") || strings.Count(res.stdout, "\n") != 1 {
		t.Errorf("nagios: exit %d, want 0 and the WARNING line alone: %q", res.code, res.stdout)
	}
	res = check("--accept", "warning", "--format", "json")
	var doc gateOf
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != exitOK || doc.Status != findings.Warning ||
		doc.Gate == nil || doc.Gate.Accept != findings.Warning || doc.Gate.ExitCode != exitOK {
		t.Errorf("json: exit %d (%v), want 0, status WARNING and gate {accept WARNING, exit_code 0}: %s", res.code, err, res.stdout)
	}
	// A wait for WARNING ends at the first audit.
	res = check("--accept", "warning", "--wait", "1m")
	if res.code != exitOK || res.elapsed > 10*time.Second {
		t.Errorf("--wait 1m --accept warning: exit %d after %s, want 0 at once\n%s", res.code, res.elapsed, res.stderr)
	}

	// Without --accept, WARNING exits 1, and no document speaks of a gate.
	res = check()
	if res.code != int(findings.Warning) || strings.Contains(res.stdout, "accepted") {
		t.Errorf("without --accept: exit %d, want 1 and no acceptance:\n%s", res.code, res.stdout)
	}
	res = check("--accept", "ok", "--format", "json")
	doc = gateOf{}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != int(findings.Warning) || doc.Gate != nil {
		t.Errorf("--accept ok: exit %d (%v), want 1 and no gate block: %s", res.code, err, res.stdout)
	}

	// A floor above n1 makes it CRITICAL: never accepted.
	res = check("--accept", "warning", "--floor", "2.15.0", "--format", "json")
	doc = gateOf{}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != int(findings.Critical) || doc.Status != findings.Critical ||
		doc.Gate == nil || doc.Gate.ExitCode != int(findings.Critical) {
		t.Errorf("CRITICAL under --accept warning: exit %d (%v), want 2 and gate exit_code 2: %s", res.code, err, res.stdout)
	}
	res = check("--accept", "warning", "--floor", "2.15.0")
	if res.code != int(findings.Critical) || strings.Contains(res.stdout, "accepted") {
		t.Errorf("CRITICAL under --accept warning: exit %d, want 2 and no acceptance:\n%s", res.code, res.stdout)
	}
	// An audit that cannot run is UNKNOWN, never accepted.
	res = runCmd(t, "check", "--accept", "warning", "-s", "nats://"+natstest.FreeAddr(t), "--timeout", "1s")
	if res.code != exitUnknown {
		t.Errorf("no server under --accept warning: exit %d, want 3", res.code)
	}
}
