package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestServeEventsDeniedLogOnce: serve as a user the server's config allows
// to audit but to subscribe to none of the event subjects. Each refused
// subscription is one log line, naming the subject and the user; nothing
// else mentions the refusals (no second line from the connection's error
// handler, nothing from nats.go's default one on the process's stderr).
// It swaps the process's stderr (processStderr), so it is not parallel.
func TestServeEventsDeniedLogOnce(t *testing.T) {
	noEvents := natstest.User{Name: "no-events", Password: "no-events-secret",
		Publish: leastPrivilege.Publish, Subscribe: []string{auditSubscribe}}
	sys := startWithSysUsers(t, natstest.Plain, natstest.New, []natstest.User{noEvents})

	var logs string
	raw := processStderr(t, func() {
		d := startServe(t, append(sys.ArgsAs("n1", noEvents.Name), "--timeout", "2s", "--audit.min-interval", "1h")...)
		d.waitEventsDenied(t, eventSubscribe...)
		// Whatever the connection's handlers had queued runs before the
		// connection closes.
		d.stop(t)
		logs = d.stderr.String()
	})
	var denied []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if strings.Contains(strings.ToLower(line), "permission") {
			denied = append(denied, line)
		}
	}
	if len(denied) != len(eventSubscribe) {
		t.Errorf("%d log lines about permissions, want %d (one per refused subscription):\n%s",
			len(denied), len(eventSubscribe), strings.Join(denied, "\n"))
	}
	for _, subj := range eventSubscribe {
		want := regexp.MustCompile(`level=ERROR .*allow the user to subscribe to ` + regexp.QuoteMeta(subj) +
			`" subject=` + regexp.QuoteMeta(subj) + ` user="user \\"no-events\\"" server=n1 `)
		if n := len(slices.DeleteFunc(slices.Clone(denied), func(l string) bool { return !want.MatchString(l) })); n != 1 {
			t.Errorf("%d lines match %s, want 1", n, want)
		}
	}
	if raw != "" {
		t.Errorf("nats.go wrote to the process's stderr: %q", raw)
	}
	t.Logf("serve's log:\n%s", logs)
}
