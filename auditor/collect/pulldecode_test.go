package collect

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

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
