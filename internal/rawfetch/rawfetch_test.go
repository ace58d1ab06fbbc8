package rawfetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestMainChecksEachReply runs the raw fetch against a real server: it
// hands the check the server's JSZ reply, and fails when the check does.
func TestMainChecksEachReply(t *testing.T) {
	sp := natstest.Spec{Name: "solo", Version: natstest.Floor, JetStream: true}
	sys := natstest.Start(t, sp)
	nc := sys.Connect(sp.Name, natstest.SysUser, natstest.SysPassword)
	id := nc.ConnectedServerId()
	nc.Close()

	var mu sync.Mutex
	var replies [][]byte
	keep := func(reply []byte) error {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, reply)
		return nil
	}
	if code := Main(sys.URL(sp.Name), id, keep); code != 0 {
		t.Fatalf("raw fetch exited %d", code)
	}
	if len(replies) != 1 {
		t.Fatalf("the check saw %d replies, want 1", len(replies))
	}
	var reply struct {
		Server struct{ ID string } `json:"server"`
		Data   *json.RawMessage    `json:"data"`
	}
	if err := json.Unmarshal(replies[0], &reply); err != nil || reply.Server.ID != id || reply.Data == nil ||
		!bytes.Contains(*reply.Data, []byte(`"config"`)) {
		t.Fatalf("not %s's JSZ reply with its config (%v): %.200s", id, err, replies[0])
	}

	if code := Main(sys.URL(sp.Name), id, func([]byte) error { return errors.New("refused") }); code != 1 {
		t.Fatalf("raw fetch exited %d with a check that fails, want 1", code)
	}
}
