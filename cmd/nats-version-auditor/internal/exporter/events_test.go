package exporter

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestEventsDroppedAskForAnAudit: when nats.go drops events of one of the
// watcher's subscriptions because it holds as many unread as it may (a
// slow consumer), the watcher asks for an audit: what the dropped events
// said is lost, and the last audit may be kinder than the truth. The
// subscription is made to fall behind on a real server: the handler of
// the first SHUTDOWN is held while more arrive than it may hold.
func TestEventsDroppedAskForAnAudit(t *testing.T) {
	defer func(m, b int) { eventPendingMsgs, eventPendingBytes = m, b }(eventPendingMsgs, eventPendingBytes)
	eventPendingMsgs = 4
	sys := natstest.Start(t, natstest.Node("n1", natstest.New, ""))
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	release := make(chan struct{})
	defer close(release)
	reasons := make(chan string, 1000)
	var held sync.Once
	trigger := func(reason string) {
		reasons <- reason
		if strings.Contains(reason, "SHUTDOWN") || strings.Contains(reason, "shut down") {
			held.Do(func() { <-release })
		}
	}
	amend := func(c []snapshot.LeaderChange) (unseen, stale []snapshot.LeaderChange) { return c, nil }
	w, err := watchEvents(nc, trigger, amend, func() *snapshot.Snapshot { return nil }, nil, time.Second, natstest.SysUser, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	pub := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	for range 50 {
		if err := pub.Publish("$SYS.SERVER.NGONE.SHUTDOWN", []byte(`{"server":{"name":"gone","id":"NGONE"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	deadline := time.After(30 * time.Second)
	for {
		select {
		case r := <-reasons:
			seen = append(seen, r)
			if strings.HasPrefix(r, "events dropped on $SYS.SERVER.*.SHUTDOWN") {
				return
			}
		case <-deadline:
			t.Fatalf("no audit asked for the dropped events; reasons: %q", seen)
		}
	}
}
