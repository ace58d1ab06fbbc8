package collect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestDriftOnRealServers: the census records each JetStream server's counts
// as the server gives them; Drift finds nothing while nothing changes, and
// names the servers whose counts a new consumer changed, and a server that
// stopped, as each server's own JSZ says.
func TestDriftOnRealServers(t *testing.T) {
	spec := func(name, v string) natstest.Spec { return natstest.Node(name, v, "c1") }
	sys := natstest.Start(t, spec("n1", natstest.New), spec("n2", natstest.Floor), spec("n3", natstest.New))
	sysConn := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	js, err := jetstream.New(app)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 2}); err != nil {
		t.Fatal(err)
	}
	snap, err := Collect(t.Context(), sysConn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Counts) != 3 {
		t.Fatalf("counts of %d servers, want 3: %+v", len(snap.Counts), snap.Counts)
	}
	streams := 0
	for _, c := range snap.Counts {
		streams += c.Streams
	}
	if streams != 2 {
		t.Errorf("the counts hold %d stream replicas, want 2 (one R2 stream): %+v", streams, snap.Counts)
	}
	if d, err := Drift(t.Context(), sysConn, snap, 5*time.Second); err != nil || d != "" {
		t.Fatalf("nothing changed, drift %q, %v", d, err)
	}
	if _, err := js.CreateOrUpdateConsumer(t.Context(), "S", jetstream.ConsumerConfig{Durable: "c", Replicas: 2}); err != nil {
		t.Fatal(err)
	}
	err = natstest.Eventually(10*time.Second, func() error {
		d, err := Drift(t.Context(), sysConn, snap, 5*time.Second)
		if err != nil {
			return err
		}
		if !strings.Contains(d, "1 consumers, the last audit counted") {
			return fmt.Errorf("a new R2 consumer, drift %q", d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := Collect(t.Context(), sysConn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Drift(t.Context(), sysConn, fresh, 5*time.Second); err != nil || d != "" {
		t.Fatalf("after a fresh audit, drift %q, %v", d, err)
	}
	if err := sys.Stop("n2", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, _ := Drift(t.Context(), sysConn, fresh, time.Second); !strings.Contains(d, "n2 did not give its counts") {
		t.Errorf("n2 stopped, drift %q", d)
	}
}
