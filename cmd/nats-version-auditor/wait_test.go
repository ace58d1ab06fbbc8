package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// progressRE matches one progress line of check --wait.
var progressRE = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d (OK|WARNING|CRITICAL|UNKNOWN) .*$`)

// criticalPicture starts the progress line of the mixed cluster; more
// follows when a stream or the meta group happens to be led by n3.
const criticalPicture = `CRITICAL 2 of 3 servers at or above 2\.14\.0; 1 consumer led below it; 1 with a follower below it; 1 CLUSTER_MIXED_VERSIONS`

// TestWaitAcrossRollingUpgrade holds check --wait against a real rolling
// upgrade of a 2.12.15 server to 2.14.0, with the gate connected to that
// very server, and against a wait that times out or is interrupted.
func TestWaitAcrossRollingUpgrade(t *testing.T) {
	sys := natstest.Start(t, node("n1", natstest.Floor), node("n2", natstest.Floor), node("n3", natstest.Old))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	addStreamAndConsumer(t, app, "ORDERS", "led-by-old", 3)
	addStreamAndConsumer(t, app, "BILLING", "followed-by-old", 3)
	if err := natstest.MoveConsumerLeader(app, "ORDERS", "led-by-old", "n3"); err != nil {
		t.Fatal(err)
	}
	if err := natstest.MoveConsumerLeader(app, "BILLING", "followed-by-old", "n1"); err != nil {
		t.Fatal(err)
	}

	t.Run("times out with the last status", func(t *testing.T) {
		const wait = time.Second
		res := runCmd(t, append([]string{"check", "--wait", wait.String(), "--audit.min-interval", "200ms", "--log.level", "debug"}, sys.SysArgs("n1")...)...)
		if res.code != 2 {
			t.Fatalf("exit %d, want 2 (the last status, CRITICAL)\n%s", res.code, res.stderr)
		}
		lines := progressRE.FindAllString(res.stderr, -1)
		if len(lines) != 1 || !regexp.MustCompile(`^\d\d:\d\d:\d\d `+criticalPicture).MatchString(lines[0]) {
			t.Errorf("progress lines %q, want exactly one (the picture never changed) saying %s", lines, criticalPicture)
		}
		if !regexp.MustCompile(`the wait gave up after 1(\.\d)?s of --wait 1s: the next audit could not start before the deadline ` +
			`\(at most one per --audit\.min-interval 200ms\); status CRITICAL, wanted OK\n`).MatchString(res.stderr) {
			t.Errorf("stderr does not say the wait timed out:\n%s", res.stderr)
		}
		if !strings.HasPrefix(res.stdout, "CRITICAL: 3 of 3 expected servers answered") {
			t.Errorf("stdout is not check's report:\n%s", res.stdout)
		}
		// Audits start at 0, 200, 600 and 1000 ms: the interval doubles while
		// nothing changes, up to four times --audit.min-interval. A fixed
		// interval would have run six.
		if n := strings.Count(res.stderr, `msg="audit evaluated"`); n < 2 || n > 4 {
			t.Errorf("%d audits in a %s wait at --audit.min-interval 200ms, want 2 to 4", n, wait)
		}
		if res.elapsed < wait-200*time.Millisecond {
			t.Errorf("returned after %s of a %s wait", res.elapsed, wait)
		}
	})

	t.Run("warning is not waited for when warning is wanted", func(t *testing.T) {
		// CRITICAL is worse than WARNING too: a warning gate still waits,
		// under the old name --wait-for as under --accept.
		for _, accept := range []string{"--wait-for", "--accept"} {
			res := runCmd(t, append([]string{"check", "--wait", "300ms", accept, "warning", "--audit.min-interval", "100ms", "--format", "nagios"}, sys.SysArgs("n1")...)...)
			if res.code != 2 || !strings.HasPrefix(res.stdout, "NATS VERSIONS CRITICAL") || !strings.Contains(res.stderr, "wanted WARNING") {
				t.Errorf("%s warning: exit %d, stdout %q, stderr %q", accept, res.code, res.stdout, res.stderr)
			}
		}
	})

	t.Run("wrong password ends the wait at once", func(t *testing.T) {
		res := runCmd(t, "check", "--wait", "1m", "-s", sys.URL("n1"), "--user", natstest.SysUser, "--password", "wrong")
		if res.code != exitUnknown || !strings.Contains(res.stderr, "authentication failed") || res.elapsed > 20*time.Second {
			t.Errorf("exit %d after %s: %s", res.code, res.elapsed, res.stderr)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		b := startCheck(t, append([]string{"--wait", "1m", "--audit.min-interval", "100ms", "--format", "json"}, sys.SysArgs("n1")...)...)
		b.waitFor(t, 20*time.Second, criticalPicture)
		interrupted := time.Now()
		b.cancel() // what SIGINT and SIGTERM do to run's context
		// The last audit was CRITICAL, which outranks the UNKNOWN of a wait
		// that did not end on its own.
		if code := b.exit(t, 5*time.Second); code != int(findings.Critical) {
			t.Errorf("exit %d after an interrupt, want 2 (the last audit's CRITICAL)", code)
		}
		if d := time.Since(interrupted); d > 2*time.Second {
			t.Errorf("took %s to exit after the interrupt", d)
		}
		if !strings.Contains(b.stderr.String(), "wait interrupted") {
			t.Errorf("stderr %q does not say the wait was interrupted", b.stderr)
		}
		// The document of the last audit the wait saw: its status.
		var out render.Check
		if err := json.Unmarshal([]byte(b.stdout.String()), &out); err != nil || out.Status != findings.Critical || out.Error != "" {
			t.Errorf("stdout is not the last audit's document (%v): %s", err, b.stdout)
		}
	})

	t.Run("rolling upgrade", func(t *testing.T) {
		// The gate connects only to n3, the server being upgraded: while it
		// is down the gate cannot connect at all, and must keep waiting.
		b := startCheck(t, append([]string{"--wait", "3m", "--audit.min-interval", "100ms", "--timeout", "2s"}, sys.SysArgs("n3")...)...)
		b.waitFor(t, 20*time.Second, criticalPicture)
		if err := sys.Stop("n3", 20*time.Second); err != nil {
			t.Fatal(err)
		}
		b.waitFor(t, 20*time.Second, `(?m)^\d\d:\d\d:\d\d UNKNOWN cannot reach NATS at nats://127\.0\.0\.1:\d+: .*; still waiting$`)
		sys.Restart("n3", natstest.Floor)
		if code := b.exit(t, 2*time.Minute); code != exitOK {
			t.Fatalf("exit %d after the upgrade, want 0\nstderr:\n%s\nstdout:\n%s", code, b.stderr, b.stdout)
		}
		lines := progressRE.FindAllString(b.stderr.String(), -1)
		last := lines[len(lines)-1]
		if !regexp.MustCompile(`^\d\d:\d\d:\d\d OK 3 of 3 servers at or above 2\.14\.0$`).MatchString(last) {
			t.Errorf("last progress line %q, want OK with 3 of 3 servers", last)
		}
		for i := 1; i < len(lines); i++ {
			if lines[i][9:] == lines[i-1][9:] {
				t.Errorf("line %d repeats the picture of the line before: %q", i, lines[i])
			}
		}
		if !strings.HasPrefix(b.stdout.String(), "OK: 3 of 3 expected servers answered") {
			t.Errorf("final report:\n%s", b.stdout)
		}
		t.Logf("progress:\n%s", strings.Join(lines, "\n"))
	})
}

// TestWaitInterruptedBeforeAnAudit: a wait interrupted while no audit could
// run prints the document of the last failure, in the format asked for.
func TestWaitInterruptedBeforeAnAudit(t *testing.T) {
	t.Parallel()
	b := startCheck(t, "--wait", "1m", "--audit.min-interval", "100ms", "--timeout", "500ms", "--format", "json", "--floor", "2.12", "-s", "nats://127.0.0.1:1")
	b.waitFor(t, 20*time.Second, `UNKNOWN cannot reach NATS`)
	b.cancel()
	if code := b.exit(t, 5*time.Second); code != exitUnknown {
		t.Errorf("exit %d after an interrupt, want 3", code)
	}
	var out render.Check
	if err := json.Unmarshal([]byte(b.stdout.String()), &out); err != nil || out.Status != findings.Unknown || out.Floor != "2.12.0" ||
		!strings.Contains(out.Error, "cannot reach NATS at nats://127.0.0.1:1") || len(out.Findings) != 1 {
		t.Errorf("stdout is not the document of the last failure (%v): %s", err, b.stdout)
	}
}

func TestWaitUnreachableAndUsage(t *testing.T) {
	res := runCmd(t, "check", "--wait", "1s", "--audit.min-interval", "200ms", "--timeout", "500ms", "-s", "nats://127.0.0.1:1")
	if res.code != exitUnknown {
		t.Errorf("exit %d, want 3", res.code)
	}
	for _, want := range []string{"UNKNOWN cannot reach NATS at nats://127.0.0.1:1", "; still waiting\n",
		"of --wait 1s: the next audit could not start before the deadline (at most one per --audit.min-interval 200ms); status UNKNOWN, wanted OK",
		"error: cannot reach NATS at nats://127.0.0.1:1"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, res.stderr)
		}
	}
	if n := len(progressRE.FindAllString(res.stderr, -1)); n != 1 {
		t.Errorf("%d progress lines for one unchanging failure, want 1:\n%s", n, res.stderr)
	}

	// The wait ends when the next audit could not start before the
	// deadline, and says so then: audits at 0 and 700ms, the next due at
	// 1.4s, past the 1s deadline. It used to say "timed out after 1s" at 0.7s.
	res = runCmd(t, "check", "--wait", "1s", "--audit.min-interval", "700ms", "--timeout", "500ms", "-s", "nats://127.0.0.1:1")
	if m := regexp.MustCompile(`the wait gave up after (\S+) of --wait 1s`).FindStringSubmatch(res.stderr); m == nil {
		t.Errorf("stderr does not say when the wait gave up:\n%s", res.stderr)
	} else if d, err := time.ParseDuration(m[1]); err != nil || d < 700*time.Millisecond || d >= time.Second || res.elapsed >= time.Second+margin {
		t.Errorf("gave up after %s (said %s) of a 1s wait with audits due every 700ms, want from 0.7s, before 1s", res.elapsed, m[1])
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--wait=-1s"}, "--wait -1s: must not be negative"},
		{[]string{"--wait", "1s", "--audit.min-interval", "0s"}, "--audit.min-interval 0s: must be positive"},
		{[]string{"--wait", "1s", "--wait-for", "critical"}, "--wait-for critical: enum value must be one of ok,warning, got 'critical'"},
		{[]string{"--accept", "critical"}, "--accept critical: enum value must be one of ok,warning, got 'critical'"},
		{[]string{"--accept", "unknown", "--wait", "1s"}, "--accept unknown: enum value must be one of ok,warning, got 'unknown'"},
		{[]string{"--accept", "warning", "--wait-for", "ok"}, "--accept warning and --wait-for ok disagree: give --accept alone (--wait-for is its old name)"},
	} {
		res := runCmd(t, append([]string{"check", "-s", "nats://127.0.0.1:1"}, tt.args...)...)
		if res.code != exitUnknown || !strings.Contains(res.stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want 3 and %q", tt.args, res.code, res.stderr, tt.want)
		}
	}
}

// TestWaitUntilEveryShardIsPulled: a gate waits with --wait until no shard
// is pulled by nobody. One shard of two has an owner; the other has a
// backlog and no pull waiting on its leader, so the gate waits on its
// CONSUMER_PULLED_BY_NOBODY, and it passes once a process owns it too.
func TestWaitUntilEveryShardIsPulled(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Node("n1", natstest.New, "c1"), natstest.Node("n2", natstest.New, "c1"), natstest.Node("n3", natstest.New, "c1"))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	shards := natstest.AddWorkShards(t, app, 2, 3, 3*time.Second)
	a := sys.ShardOwner("a", "n1")
	a.Own("WORK", shards[0])
	// The stream's leader answered its create as soon as it was elected;
	// its interest in the stream's subjects reaches n1 over a route a
	// moment later, and a publish through n1 before that gets "no
	// responders". Each publish then waits for the stream's ack: a shard
	// with no backlog is rightly not reported.
	for i := range shards {
		if err := sys.WaitInterest("n1", "APP", "work."+strconv.Itoa(i), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := natstest.Publish(app, "work."+strconv.Itoa(i), []byte("job"), 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The shard's idle time counts from its creation: a check at once
	// could still find it young. Once a plain check names it, the gate
	// starts on a system it must wait for.
	args := append([]string{"--unpulled-after", "1s", "--format", "nagios"}, sys.SysArgs("n2")...)
	err := natstest.Eventually(30*time.Second, func() error {
		if res := runCmd(t, append([]string{"check"}, args...)...); res.code != int(findings.Warning) || !strings.Contains(res.stdout, "(pinned_client, group g) is pulled by") {
			return fmt.Errorf("check exited %d: %s%s", res.code, res.stdout, res.stderr)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b := startCheck(t, append([]string{"--wait", "2m", "--unpulled-after", "1s", "--audit.min-interval", "200ms"}, sys.SysArgs("n2")...)...)
	b.waitFor(t, 30*time.Second, `(?m)^\d\d:\d\d:\d\d WARNING .*CONSUMER_PULLED_BY_NOBODY`)
	a.Own("WORK", shards[1])
	if code := b.exit(t, time.Minute); code != exitOK {
		t.Fatalf("exit %d once every shard has an owner, want 0\nstderr:\n%s", code, b.stderr)
	}
}
