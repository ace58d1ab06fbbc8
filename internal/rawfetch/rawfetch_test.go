package rawfetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestFetchChecksEachReply runs the raw fetch against a real server: it
// hands the check the server's JSZ reply and counts its bytes, and the
// process fails when the check does.
func TestFetchChecksEachReply(t *testing.T) {
	sp := natstest.Spec{Name: "solo", Version: natstest.Floor, JetStream: true}
	sys := natstest.Start(t, sp)
	nc := sys.Connect(sp.Name, natstest.SysUser, natstest.SysPassword)
	defer nc.Close()
	id := nc.ConnectedServerId()

	var mu sync.Mutex
	var replies [][]byte
	keep := func(reply []byte) error {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, reply)
		return nil
	}
	n, err := Fetch(nc, []string{id}, 10*time.Second, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != 1 || n != uint64(len(replies[0])) {
		t.Fatalf("the check saw %d replies; Fetch counted %d bytes", len(replies), n)
	}
	var reply struct {
		Server struct{ ID string } `json:"server"`
		Data   *json.RawMessage    `json:"data"`
	}
	if err := json.Unmarshal(replies[0], &reply); err != nil || reply.Server.ID != id || reply.Data == nil ||
		!bytes.Contains(*reply.Data, []byte(`"config"`)) {
		t.Fatalf("not %s's JSZ reply with its config (%v): %.200s", id, err, replies[0])
	}

	if code := Main(sys.URL(sp.Name), id, nil); code != 0 {
		t.Fatalf("raw fetch exited %d", code)
	}
	if code := Main(sys.URL(sp.Name), id, func([]byte) error { return errors.New("refused") }); code != 1 {
		t.Fatalf("raw fetch exited %d with a check that fails, want 1", code)
	}
}
