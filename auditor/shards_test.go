package auditor

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// pinnedRecord is a pinned_client consumer's JSZ record as servers write
// it, reported by reporter with leader leading.
func pinnedRecord(leader string, waiting int, pin string) string {
	return `{"name":"C","created":"2026-01-01T00:00:00Z","config":{"priority_groups":["g"],"priority_policy":"pinned_client","priority_timeout":120000000000,"max_ack_pending":1000},` +
		`"delivered":{"consumer_seq":5,"stream_seq":5,"last_active":"2026-01-01T00:01:00Z"},"ack_floor":{"consumer_seq":3,"stream_seq":3,"last_active":"2026-01-01T00:01:30Z"},` +
		`"num_ack_pending":2,"num_redelivered":0,"num_waiting":` + strconv.Itoa(waiting) + `,"num_pending":7,"cluster":{"leader":"` + leader + `"},"ts":"2026-01-01T00:05:00Z",` +
		`"priority_groups":[{"group":"g","pinned_client_id":"` + pin + `","pinned_ts":"2026-01-01T00:00:30Z"}]}`
}

func pullPage(t *testing.T, consumers ...string) *jszData {
	t.Helper()
	r, err := decodeJSZReply([]byte(`{"data":{"account_details":[{"name":"A","stream_detail":[{"name":"S","consumer_detail":[` + strings.Join(consumers, ",") + `]}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return r.Data
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestDecodePullState reads the fields of who pulls a priority consumer,
// and none of a consumer without a priority policy.
func TestDecodePullState(t *testing.T) {
	js := pullPage(t, pinnedRecord("n1", 0, "PIN"), `{"name":"P","config":{"ack_policy":"explicit"},"num_pending":9,"num_waiting":0}`,
		`{"name":"O","config":{"priority_policy":"overflow","priority_groups":["g"]},"num_pending":1,"priority_groups":[{"group":"g","pinned_ts":"0001-01-01T00:00:00Z"}]}`)
	cs := js.AccountDetails[0].Streams[0].Consumers
	want := &snapshot.PullState{Policy: "pinned_client", Group: "g", Timeout: 2 * time.Minute, MaxAckPending: 1000,
		At: at("2026-01-01T00:05:00Z"), Created: at("2026-01-01T00:00:00Z"), Pending: 7, AckPending: 2,
		LastDelivery: at("2026-01-01T00:01:00Z"), LastAck: at("2026-01-01T00:01:30Z"), PinnedID: "PIN", PinnedAt: at("2026-01-01T00:00:30Z")}
	if !reflect.DeepEqual(cs[0].Config.pull, want) {
		t.Errorf("pinned: %+v\nwant %+v", cs[0].Config.pull, want)
	}
	if p := cs[0].Config.pull; p.PinAge() != 4*time.Minute+30*time.Second || p.Idle() != 3*time.Minute+30*time.Second || p.Backlog() != 9 {
		t.Errorf("pin age %s, idle %s, backlog %d", p.PinAge(), p.Idle(), p.Backlog())
	}
	if cs[1].Config.pull != nil {
		t.Errorf("a consumer without a priority policy kept %+v", cs[1].Config.pull)
	}
	if p := cs[2].Config.pull; p == nil || p.PinnedID != "" || p.PinAge() != 0 || p.Pending != 1 {
		t.Errorf("overflow: %+v", p)
	}
}

// TestMergeKeepsLeadersPull: only the leader's record says who pulls,
// whichever order the replies come in; a follower's gives the config.
func TestMergeKeepsLeadersPull(t *testing.T) {
	for _, order := range [][]string{{"n1", "n2"}, {"n2", "n1"}} {
		m := newMerger()
		for _, reporter := range order {
			// n2, a follower, reports a stale pin and an empty queue.
			rec := pinnedRecord("n1", 3, "PIN")
			if reporter == "n2" {
				rec = pinnedRecord("n1", 0, "STALE")
			}
			m.add(reporter, "", pullPage(t, rec))
		}
		p := m.consumers()[0].Pull
		if p == nil || !p.FromLeader || p.PinnedID != "PIN" || p.Waiting != 3 {
			t.Errorf("order %v: %+v", order, p)
		}
	}
	m := newMerger()
	m.add("n2", "", pullPage(t, pinnedRecord("n1", 0, "STALE")))
	if p := m.consumers()[0].Pull; p == nil || p.FromLeader || p.PinnedID != "" || p.Policy != "pinned_client" || p.Timeout != 2*time.Minute {
		t.Errorf("follower only: %+v", p)
	}
}

// TestShardFindings judges who pulls on made-up leader records.
func TestShardFindings(t *testing.T) {
	now := at("2026-01-01T01:00:00Z")
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	base := snapshot.PullState{Policy: "pinned_client", Group: "g", Timeout: time.Minute, MaxAckPending: 100, FromLeader: true,
		At: now, Created: ago(time.Hour)}
	for _, tc := range []struct {
		name   string
		policy ShardPolicy
		edit   func(*snapshot.PullState)
		want   findings.Code
	}{
		{"idle queue, backlog", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(3*time.Minute) }, findings.ConsumerPulledByNobody},
		{"only unacked", ShardPolicy{}, func(p *snapshot.PullState) { p.AckPending, p.LastDelivery = 5, ago(3*time.Minute) }, findings.ConsumerPulledByNobody},
		{"never delivered", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending = 5 }, findings.ConsumerPulledByNobody},
		{"within the default", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(time.Minute) }, ""},
		{"a recent ack", ShardPolicy{}, func(p *snapshot.PullState) {
			p.AckPending, p.LastDelivery, p.LastAck = 5, ago(time.Hour), ago(time.Second)
		}, ""},
		{"short threshold", ShardPolicy{UnpulledAfter: time.Second}, func(p *snapshot.PullState) { p.Pending, p.LastDelivery = 5, ago(2*time.Second) }, findings.ConsumerPulledByNobody},
		{"turned off", ShardPolicy{UnpulledAfter: -1}, func(p *snapshot.PullState) { p.Pending = 5 }, ""},
		{"a pull waits", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Waiting, p.LastDelivery = 5, 1, ago(time.Hour) }, ""},
		{"nothing pending", ShardPolicy{}, func(p *snapshot.PullState) {}, ""},
		{"paused", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Paused = 5, true }, ""},
		{"a follower's word", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.FromLeader = 5, false }, ""},
		{"overflow", ShardPolicy{}, func(p *snapshot.PullState) { p.Policy, p.Timeout, p.Pending = "overflow", 0, 5 }, findings.ConsumerPulledByNobody},
		{"stale pin", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 2, "PIN", ago(5*time.Minute), ago(3*time.Minute)
		}, findings.ConsumerStalePin},
		{"pin delivering", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 2, "PIN", ago(5*time.Minute), ago(time.Second)
		}, ""},
		{"young pin", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.Waiting, p.PinnedID, p.PinnedAt = 5, 2, "PIN", ago(30*time.Second)
		}, ""},
		{"at max ack pending", ShardPolicy{}, func(p *snapshot.PullState) {
			p.Pending, p.AckPending, p.Waiting, p.PinnedID, p.PinnedAt, p.LastDelivery = 5, 100, 2, "PIN", ago(5*time.Minute), ago(3*time.Minute)
		}, ""},
		{"no pin, pulls wait", ShardPolicy{}, func(p *snapshot.PullState) { p.Pending, p.Waiting, p.LastDelivery = 5, 2, ago(time.Hour) }, ""},
	} {
		ps := base
		tc.edit(&ps)
		snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{{Kind: releases.KindConsumer, Account: "A", Stream: "S", Consumer: "C", Leader: "n1", Pull: &ps}}}
		e := evaluation{byName: map[string]*findings.ServerReport{"n1": {Server: snapshot.Server{Name: "n1", Cluster: "c1", Version: "2.14.0"}}}}
		e.shards(snap, tc.policy)
		var got []findings.Finding
		for _, chunk := range e.findings {
			got = append(got, chunk...)
		}
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %+v", tc.name, got)
		case tc.want != "" && (len(got) != 1 || got[0].Code != tc.want || got[0].Server != "n1" || got[0].Cluster != "c1" || got[0].Consumer != "C"):
			t.Errorf("%s: %+v, want one %s", tc.name, got, tc.want)
		case tc.want != "":
			t.Logf("%s: %s", tc.name, got[0].Message)
		}
	}
}

// TestIndexShowsPin: the consumer view carries the pull state and, from
// the leader's record only, the pin's holder and age.
func TestIndexShowsPin(t *testing.T) {
	m := newMerger()
	m.add("n1", "", pullPage(t, pinnedRecord("n1", 1, "PIN")))
	snap := &snapshot.Snapshot{Consumers: m.consumers()}
	v, ok := NewIndex(snap).Consumer(ConsumerKey{Account: "A", Stream: "S", Consumer: "C"})
	if !ok || v.Pull == nil || v.Pull.Group != "g" || v.Pull.PinnedID != "PIN" || v.Pull.PinAge() != 4*time.Minute+30*time.Second {
		t.Fatalf("view %+v, pull %+v", v, v.Pull)
	}
	m = newMerger()
	m.add("n2", "", pullPage(t, pinnedRecord("n1", 0, "STALE")))
	snap = &snapshot.Snapshot{Consumers: m.consumers()}
	if v, _ := NewIndex(snap).Consumer(ConsumerKey{Account: "A", Stream: "S", Consumer: "C"}); v.Pull == nil || v.Pull.FromLeader || v.Pull.PinnedID != "" {
		t.Errorf("a follower's pin shown: %+v", v.Pull)
	}
}

// TestPinnedLedBy: a restart moves the leadership, and drops the pin, of
// the replicated pinned_client consumers the server leads; an R1 consumer
// has no other peer to lead it and another policy has no pin.
func TestPinnedLedBy(t *testing.T) {
	c := func(leader string, replicas int, policy string) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Leader: leader, Replicas: replicas, Pull: &snapshot.PullState{Policy: policy}}
	}
	snap := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("n1", 3, snapshot.PriorityPinnedClient), c("n1", 1, snapshot.PriorityPinnedClient), c("n1", 3, "overflow"),
		c("n2", 3, snapshot.PriorityPinnedClient), {Kind: releases.KindConsumer, Leader: "n1", Replicas: 3}}}
	if got := PinnedLedBy(snap, "n1"); got != 1 {
		t.Errorf("n1 leads %d pinned consumers whose pins a restart drops, want 1", got)
	}
	if got := PinnedLedBy(snap, "n3"); got != 0 {
		t.Errorf("n3: %d, want 0", got)
	}
}

// TestGateFloor: the floor a plan's steps are gated with is the oldest
// version before or after the plan.
func TestGateFloor(t *testing.T) {
	servers := []findings.ServerReport{{}, {}}
	servers[0].SetVersion("2.14.0")
	servers[1].SetVersion("2.12.15")
	for to, want := range map[string]string{"2.15.3": "2.12.15", "2.11.12": "2.11.12"} {
		p := &Plan{To: parsed(to), Before: &findings.Report{Servers: servers}}
		if got := p.GateFloor().String(); got != want {
			t.Errorf("to %s: gate floor %s, want %s", to, got, want)
		}
	}
}

// TestCountPinChanges: a pin given, taken over or dropped between two
// audits is a change, counted apart when the leader changed too; a
// consumer one audit did not read from its leader, or another policy, is
// none.
func TestCountPinChanges(t *testing.T) {
	c := func(name, leader, pin string, fromLeader bool) snapshot.Asset {
		return snapshot.Asset{Kind: releases.KindConsumer, Account: "APP", Stream: "WORK", Consumer: name, Leader: leader,
			Pull: &snapshot.PullState{Policy: snapshot.PriorityPinnedClient, FromLeader: fromLeader, PinnedID: pin}}
	}
	before := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("same", "n1", "a", true), c("moved", "n1", "a", true), c("dropped", "n1", "a", true),
		c("newleader", "n1", "a", true), c("unread", "n1", "a", true), c("gone", "n1", "a", true)}}
	after := &snapshot.Snapshot{Consumers: []snapshot.Asset{c("same", "n1", "a", true), c("moved", "n1", "b", true), c("dropped", "n1", "", true),
		c("newleader", "n2", "", true), c("unread", "n2", "", false), c("new", "n1", "a", true)}}
	report := func(snap *snapshot.Snapshot, servers ...string) *findings.Report {
		r := &findings.Report{Snapshot: snap}
		for _, s := range servers {
			r.Servers = append(r.Servers, findings.ServerReport{Server: snapshot.Server{Name: s}})
		}
		return r
	}
	if got, want := CountPinChanges(report(before, "n1", "n2"), report(after, "n1", "n2")), (findings.PinChanges{Pin: 2, WithLeader: 1}); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	// A sidecar counts the consumers its server leads; together they
	// count the system's.
	n1, n2 := CountPinChanges(report(before, "n1"), report(after, "n1")), CountPinChanges(report(before, "n2"), report(after, "n2"))
	if n1 != (findings.PinChanges{Pin: 2}) || n2 != (findings.PinChanges{WithLeader: 1}) {
		t.Errorf("n1's sidecar %+v, n2's %+v; want the pins under n1 and the new leader n2's", n1, n2)
	}
}
