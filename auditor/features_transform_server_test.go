package auditor_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestLeftRightTransformOnRealServers shows the transform_left_right row:
// three 2.14.10 servers hold an R3 stream whose subject transform calls
// {{left()}}, which the config check takes only from 2.14.7 (while the
// transform engine has had it since 2.10). n3 goes back to 2.14.0 on its
// own store: it logs "Error recreating stream", runs on, and lists the
// other stream but not this one. A create with it among the peers is
// removed, whatever the client hears; with it as the meta leader, refused.
func TestLeftRightTransformOnRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nats-server")
	}
	row := featureRow(t, "transform_left_right")
	floor, lenient := mustParse(t, strings.TrimPrefix(natstest.Floor, "v")), mustParse(t, strings.TrimPrefix(natstest.Lenient, "v"))
	if h := row.HandlingBy(floor); h.Asset != releases.NotCreated || h.Create != releases.CreateRefused {
		t.Fatalf("the table says %s does %s with it (create: %s); this test shows %s (create: %s)",
			natstest.Floor, h.Asset, h.Create, releases.NotCreated, releases.CreateRefused)
	}
	if h := row.HandlingBy(lenient); h.Asset != releases.Supported {
		t.Fatalf("the table says %s does %s with it; this test expects it to run it", natstest.Lenient, h.Asset)
	}
	sys, sysConn, app := threeNodes(t, natstest.Node("n1", natstest.Lenient, "c1"), natstest.Node("n2", natstest.Lenient, "c1"),
		natstest.Node("n3", natstest.Lenient, "c1"))
	stream := func(name string) server.StreamConfig {
		return server.StreamConfig{Name: name, Subjects: []string{name + ".*"}, Replicas: 3, Storage: server.FileStorage,
			SubjectTransform: &server.SubjectTransformConfig{Source: name + ".*", Destination: "t." + name + ".{{left(1,2)}}"}}
	}
	if err := natstest.AddStream(app, stream("L")); err != nil {
		t.Fatal(err)
	}
	if err := natstest.AddStream(app, server.StreamConfig{Name: "P", Subjects: []string{"p.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		t.Fatal(err)
	}
	c := releases.AssetConfig{SubjectTransform: &releases.SubjectMapping{Destination: stream("L").SubjectTransform.Destination}}
	if !releases.DetectFeatures(releases.KindStream, &c).Has(row.Name) {
		t.Fatalf("the table does not see %s in %+v", row.Name, c.SubjectTransform)
	}

	sys.Restart("n3", natstest.Floor)
	var line string
	err := natstest.Eventually(60*time.Second, func() error {
		for _, l := range strings.Split(sys.Log("n3"), "\n") {
			if strings.Contains(l, `Error recreating stream "L"`) {
				line = l
				return nil
			}
		}
		return fmt.Errorf("n3 has not logged it")
	})
	if err != nil {
		t.Fatalf("%v:\n%s", err, sys.LogTail("n3", 30))
	}
	t.Logf("n3 (%s) logged: %s", natstest.Floor, line)
	if !strings.Contains(line, "unknown function") {
		t.Errorf("n3 refused the stream for another reason: %s", line)
	}
	// n3 runs on, hosting the other stream and not this one.
	err = natstest.Eventually(30*time.Second, func() error {
		replies, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true}, 3, 2*time.Second)
		if err != nil {
			return err
		}
		var hosts []string
		for _, r := range replies {
			if r.Server.Name != "n3" || r.Data == nil {
				continue
			}
			for _, acc := range r.Data.AccountDetails {
				for _, sd := range acc.Streams {
					hosts = append(hosts, sd.Name)
				}
			}
			if !slices.Contains(hosts, "P") || slices.Contains(hosts, "L") {
				return fmt.Errorf("n3 hosts %v, want P and not L", hosts)
			}
			return nil
		}
		return fmt.Errorf("no JSZ from n3")
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sys.Running("n3") {
		t.Fatal("n3 exited")
	}
	// A create through n1, the meta leader, with n3 among the peers: n3
	// fails to create it and tells the meta leader, which removes an
	// assignment younger than 5 s (2.14.10 processStreamAssignmentResults).
	// The client hears whoever answers first: n3's error, or n1's or n2's
	// success, and then the stream is gone.
	err = natstest.AddStream(app, stream("M"))
	t.Logf("the create of M through a 2.14.10 meta leader with a 2.14.0 peer: %v", err)
	if err != nil && !strings.Contains(err.Error(), "unknown function") {
		t.Fatalf("the create of M failed otherwise: %v", err)
	}
	err = natstest.Eventually(20*time.Second, func() error {
		msg, err := app.Request("$JS.API.STREAM.INFO.M", nil, 2*time.Second)
		if err != nil {
			return err
		}
		if !strings.Contains(string(msg.Data), `"err_code":10059`) {
			return fmt.Errorf("M is still there: %.200s", msg.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("M, created with a 2.14.0 peer: %v", err)
	}
	t.Log("M is gone")
	// As the meta leader, 2.14.0 refuses the create itself.
	if err := natstest.MoveMetaLeader(sysConn, "n3", "n1", "n2", "n3"); err != nil {
		t.Fatal(err)
	}
	err = natstest.AddStream(app, stream("N"))
	t.Logf("the create of N through n3 (%s) as the meta leader: %v", natstest.Floor, err)
	if err == nil || !strings.Contains(err.Error(), "unknown function") {
		t.Errorf("the create of N through a %s meta leader: %v, want refused with unknown function", natstest.Floor, err)
	}
}

func featureRow(t *testing.T, name string) releases.Feature {
	t.Helper()
	for _, f := range releases.Features {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no feature %s", name)
	return releases.Feature{}
}
