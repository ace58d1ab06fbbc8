package collect

import (
	"testing"
	"time"

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
