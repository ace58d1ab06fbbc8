package collect

import (
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
)

func TestParseLeaderElected(t *testing.T) {
	heard := time.Unix(100, 0)
	// As a 2.15.3 server sent it to the system account.
	consumer := `{"type":"io.nats.jetstream.advisory.v1.consumer_leader_elected","id":"x","timestamp":"2026-12-05T21:00:00Z",` +
		`"account":"APP","stream":"ORDERS","consumer":"worker","leader":"n3","replicas":[{"name":"n1","current":true,"active":1,"peer":"p1"}]}`
	c, err := ParseLeaderElected([]byte(consumer), heard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != releases.KindConsumer || c.Account != "APP" || c.Stream != "ORDERS" || c.Consumer != "worker" || c.Leader != "n3" || !c.Heard.Equal(heard) {
		t.Errorf("consumer advisory read as %+v", c)
	}
	stream := `{"type":"io.nats.jetstream.advisory.v1.stream_leader_elected","account":"APP","stream":"ORDERS","leader":"n2","domain":"hub"}`
	s, err := ParseLeaderElected([]byte(stream), heard)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind != releases.KindStream || s.Consumer != "" || s.Domain != "hub" || s.Leader != "n2" {
		t.Errorf("stream advisory read as %+v", s)
	}
	for _, tc := range []struct{ name, data, want string }{
		{"not JSON", `{"type":`, "leader elected advisory"},
		{"another type", `{"type":"io.nats.jetstream.advisory.v1.stream_quorum_lost","account":"A","stream":"S","leader":"n1"}`, "stream_quorum_lost"},
		{"the account's own copy", `{"type":"io.nats.jetstream.advisory.v1.stream_leader_elected","stream":"S","leader":"n1"}`, "without account"},
		{"no leader, no consumer", `{"type":"io.nats.jetstream.advisory.v1.consumer_leader_elected","account":"A","stream":"S"}`, "without consumer, leader"},
	} {
		if _, err := ParseLeaderElected([]byte(tc.data), heard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}
