package natstest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestWaitInterest holds WaitInterest to what the servers do with a
// message: a stream placed on n2 alone is subscribed to on n2 (its own
// subscription) and on n1 through the route from n2, in its account only;
// a publish through n1 once the wait returns reaches it. The oldest and
// the newest release keep a routed subscription under different keys.
func TestWaitInterest(t *testing.T) {
	t.Parallel()
	for _, v := range []string{NoLevels, New} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			testWaitInterest(t, v)
		})
	}
}

func testWaitInterest(t *testing.T, version string) {
	sys := Start(t, Node("n1", version, "c1"), Node("n2", version, "c1"))
	app := sys.Connect("n1", AppUser, AppPassword)
	const short = 300 * time.Millisecond
	if err := sys.WaitInterest("n1", "APP", "work.0", short); err == nil || !strings.Contains(err.Error(), "n1 knows no subscriber to work.0 in account APP yet") {
		t.Fatalf("interest before the stream exists: %v", err)
	}
	if err := AddStream(app, server.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Replicas: 1,
		Storage: server.MemoryStorage, Placement: &server.Placement{Tags: []string{"node:n2"}}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n1", "n2"} {
		if err := sys.WaitInterest(name, "APP", "work.0", 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := sys.WaitInterest("n1", "SYS", "work.0", short); err == nil {
		t.Error("interest in work.0 found in SYS: the stream is APP's")
	}
	if err := sys.WaitInterest("n1", "APP", "other.0", short); err == nil {
		t.Error("interest in other.0 found: the stream has work.> only")
	}

	// What each server knows, and how.
	sysConn := sys.Connect("n1", SysUser, SysPassword)
	known, err := interest(sysConn, sysConn.ConnectedServerId(), "APP", "work.0")
	if err != nil {
		t.Fatal(err)
	}
	if known.local != 0 || !slices.Contains(known.routedFrom, "n2") {
		t.Errorf("n1 knows %d subscriptions of its own and routed ones from %v, want none and n2's", known.local, known.routedFrom)
	}
	sysConn2 := sys.Connect("n2", SysUser, SysPassword)
	if known, err = interest(sysConn2, sysConn2.ConnectedServerId(), "APP", "work.0"); err != nil {
		t.Fatal(err)
	}
	if known.local == 0 {
		t.Errorf("n2, the stream's only server, knows no subscription of its own to work.0")
	}

	if _, err := Publish(app, "work.0", []byte("job"), 5*time.Second); err != nil {
		t.Errorf("publish through n1 once it knows the interest: %v", err)
	}
}
