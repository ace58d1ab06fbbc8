package collect

import (
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestProcessOf: the inboxes of one nats.go process (NewInbox, a request
// inbox, a custom prefix) share a key; two processes' do not; a reply a
// service import maps names no process.
func TestProcessOf(t *testing.T) {
	for _, c := range []struct{ inbox, want string }{
		{"_INBOX.q5gMdhiHKTpfhEbT1ju9rX", "_INBOX.q5gMdhiHKTpf"},
		{"_INBOX.q5gMdhiHKTpfhEbT1juABj", "_INBOX.q5gMdhiHKTpf"},
		{"_INBOX.q5gMdhiHKTpfhEbT1juA1d.uAmPoevh", "_INBOX.q5gMdhiHKTpf"},
		{"_INBOX_b.q5gMdhiHKTpfhEbT1juABj", "_INBOX_b.q5gMdhiHKTpf"},
		{"_INBOX.R04sJtLYh8lbRQTwBxwWFq", "_INBOX.R04sJtLYh8lb"},
		{"_R_.abc.def", "_R_"},
		{"reply.here", "reply.here"},
	} {
		if got := ProcessOf(c.inbox); got != c.want {
			t.Errorf("ProcessOf(%q) = %q, want %q", c.inbox, got, c.want)
		}
	}
}

// TestPullWatchBounded: the watch holds at most its limit of sightings and
// counts the rest; Forget frees them.
func TestPullWatchBounded(t *testing.T) {
	w := &PullWatch{limit: 2, visible: map[string]bool{}, heard: map[pullKey]map[string]*sighting{}, named: map[string]pullConn{}}
	k := pullKey{"APP", "W", "s0"}
	now := time.Now()
	w.heardPull(k, "_INBOX_a.q5gMdhiHKTpfhEbT1ju9rX", "pin", now.Add(-time.Minute))
	w.heardPull(k, "_INBOX_a.q5gMdhiHKTpfhEbT1juABj", "", now) // the same process
	w.heardPull(k, "_INBOX_b.q5gMdhiHKTpfhEbT1ju9rX", "", now)
	w.heardPull(k, "_INBOX_c.q5gMdhiHKTpfhEbT1ju9rX", "", now)
	if w.held != 2 || w.dropped != 1 {
		t.Fatalf("held %d, dropped %d; want 2 and 1", w.held, w.dropped)
	}
	if s := w.heard[k]["_INBOX_a.q5gMdhiHKTpf"]; s.pinID != "pin" {
		t.Errorf("a's pin %q: a pull without the pin lost it", s.pinID)
	}
	w.Forget(now.Add(-time.Second))
	if w.held != 2 {
		t.Errorf("held %d after forgetting nothing newer", w.held)
	}
	w.Forget(now.Add(time.Second))
	if w.held != 0 || len(w.heard) != 0 {
		t.Errorf("held %d, %d consumers after forgetting all", w.held, len(w.heard))
	}
}

// TestPullSubjectsAreTheHarness's: the harness gives the servers the
// import the auditor listens on.
func TestPullSubjectsAreTheHarnesss(t *testing.T) {
	if len(PullSubjects) != len(natstest.PullSubjects) {
		t.Fatalf("%v, the harness's %v", PullSubjects, natstest.PullSubjects)
	}
	for i := range PullSubjects {
		if PullSubjects[i] != natstest.PullSubjects[i] {
			t.Errorf("%v, the harness's %v", PullSubjects, natstest.PullSubjects)
		}
	}
}

// TestSubjectsMatch: an inbox is a connection's when one of its
// subscriptions takes a message published to it: the same subject, or a
// request inbox's wildcard.
func TestSubjectsMatch(t *testing.T) {
	s := subjectSet([]string{"_INBOX_a.q5gMdhiHKTpfhEbT1ju9rX", "_INBOX_a.q5gMdhiHKTpfhEbT1juA1d.*", "app.>"})
	for subject, want := range map[string]bool{
		"_INBOX_a.q5gMdhiHKTpfhEbT1ju9rX":          true,
		"_INBOX_a.q5gMdhiHKTpfhEbT1juA1d.uAmPoevh": true,
		"_INBOX_a.q5gMdhiHKTpfhEbT1juA1d":          false,
		"_INBOX_a.q5gMdhiHKTpfhEbT1juA1d.x.y":      false,
		"_INBOX_a.q5gMdhiHKTpfhEbT1juABj":          false,
		"app.x.y":                                  true,
		"app":                                      false,
	} {
		if got := s.match(subject); got != want {
			t.Errorf("match(%q) = %v, want %v", subject, got, want)
		}
		// The server's own matching agrees.
		server := false
		for _, sub := range []string{"_INBOX_a.q5gMdhiHKTpfhEbT1ju9rX", "_INBOX_a.q5gMdhiHKTpfhEbT1juA1d.*", "app.>"} {
			server = server || natsserver.SubjectMatchesFilter(subject, sub)
		}
		if server != want {
			t.Errorf("nats-server matches %q: %v, the test wants %v", subject, server, want)
		}
	}
}

// TestPullNamingAsksPerConnection: one process pulls many shards through
// one connection, another pulls one through its own on another server. A
// Fill names every puller by its connection and server (CONNZ, the
// server's own answer) and asks CONNZ twice per connection, counted by a
// subscriber to the requests: once of every server to find it, once of
// its server for its subscriptions. It used to ask once per inbox, each
// reply carrying all of the connection's subscriptions.
func TestPullNamingAsksPerConnection(t *testing.T) {
	const n = 12
	spec := func(name string) natstest.Spec {
		return natstest.ShowingPulls(natstest.Node(name, natstest.New, "c1"))
	}
	sys := natstest.Plain.Start(t, spec("n1"), spec("n2"))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	counter := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Replicas: 2}); err != nil {
		t.Fatal(err)
	}
	shards, err := natstest.AddShards(app, "WORK", "work", n, 2, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := WatchPulls(t.Context(), sysConn, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	a, b := sys.ShardOwner("a", "n2"), sys.ShardOwner("b", "n1")
	for _, s := range shards {
		a.Own("WORK", s)
	}
	b.Own("WORK", shards[0])
	if err := natstest.Eventually(30*time.Second, func() error {
		watch.mu.Lock()
		defer watch.mu.Unlock()
		if watch.held != n+1 {
			return fmt.Errorf("%d sightings, want %d", watch.held, n+1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(t.Context(), sysConn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	asked, err := counter.SubscribeSync("$SYS.REQ.SERVER.*.CONNZ")
	if err != nil {
		t.Fatal(err)
	}
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}
	watch.Fill(t.Context(), snap, 0)
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}
	requests, _, err := asked.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if requests != 4 {
		t.Errorf("%d CONNZ requests, want 4: 2 connections, each found once and asked for its subscriptions once", requests)
	}
	want := map[string]string{"a": "n2", "b": "n1"}
	named := 0
	for _, c := range snap.Consumers {
		if c.Pull == nil {
			continue
		}
		for _, p := range c.Pull.Pullers {
			if p.Name == "" || want[p.Name] != p.Server || p.CID == 0 {
				t.Errorf("%s: puller %+v not named by its connection", c.Consumer, p)
				continue
			}
			named++
		}
	}
	if named != n+1 {
		t.Errorf("%d pullers named, want %d", named, n+1)
	}
	// What was named is not asked about again.
	watch.Fill(t.Context(), snap, 0)
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := asked.Pending(); again != requests {
		t.Errorf("a second Fill asked CONNZ %d more times about pullers already named", again-requests)
	}
}
