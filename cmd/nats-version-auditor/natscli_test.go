package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestNatscliConnectionFlags: --connection-name and --inbox-prefix, spelled
// as natscli spells them, are what the server sees: the name in the connect
// event it publishes for the auditor's connection, and the prefix on the
// reply subject of every request the audit sends it. Without them the name
// is the program's and the inboxes are the selected context's; --no-context
// leaves that context out, as natscli's does, and a flag wins over it.
func TestNatscliConnectionFlags(t *testing.T) {
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.Floor, JetStream: true})
	auth := []string{"--user", natstest.SysUser, "--password", natstest.SysPassword}
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("NATS_CONTEXT", "")
	ctx, err := json.Marshal(map[string]string{"url": sys.URL("solo"), "user": natstest.SysUser, "password": natstest.SysPassword, "inbox_prefix": "_CTX_INBOX"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg, "nats", "context"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"context/sys.json": ctx, "context.txt": []byte("sys")} {
		if err := os.WriteFile(filepath.Join(cfg, "nats", name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	watch := sys.Connect("solo", natstest.SysUser, natstest.SysPassword)
	connects, err := watch.SubscribeSync("$SYS.ACCOUNT.*.CONNECT")
	if err != nil {
		t.Fatal(err)
	}
	requests, err := watch.SubscribeSync("$SYS.REQ.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	watchID, err := watch.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args         []string
		name, prefix string
	}{
		{[]string{"check"}, appName, "_CTX_INBOX"},
		{[]string{"check", "--inbox-prefix", "_FLAG_INBOX"}, appName, "_FLAG_INBOX"},
		{append([]string{"check", "--no-context", "-s", sys.URL("solo")}, auth...), appName, "_INBOX"},
		{append([]string{"check", "--no-context", "-s", sys.URL("solo"), "--connection-name", "gate ci/app", "--inbox-prefix", "_AUDIT.ci"}, auth...), "gate ci/app", "_AUDIT.ci"},
	} {
		res := runCmd(t, tt.args...)
		if res.code == exitUnknown {
			t.Errorf("%q: exit 3, the audit did not run:\n%s%s", tt.args, res.stdout, res.stderr)
			continue
		}
		ev, err := nextConnect(connects, watchID)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if ev.Client.Name != tt.name {
			t.Errorf("%q: the server saw a connection named %q, want %q", tt.args, ev.Client.Name, tt.name)
		}
		if err := watch.Flush(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			m, err := requests.NextMsg(100 * time.Millisecond)
			if err != nil {
				break
			}
			if strings.HasPrefix(m.Reply, "$SYS._INBOX") {
				continue // the server's own
			}
			n++
			if !strings.HasPrefix(m.Reply, tt.prefix+".") {
				t.Errorf("%q: request %s with reply subject %q, want the prefix %s", tt.args, m.Subject, m.Reply, tt.prefix)
			}
		}
		if n == 0 {
			t.Errorf("%q: the server saw no request of the audit", tt.args)
		}
	}
	if ev, err := nextConnect(connects, watchID); err == nil {
		t.Errorf("a connect event no run accounts for: %+v", ev.Client)
	}
}

// nextConnect is the next connect event of a connection other than the
// watcher's own (cid watchID), whose event the server sends after the
// watcher connected, and so may send after the watcher subscribed (seen in
// CI's script: it came first and shifted every run's event by one).
func nextConnect(connects *nats.Subscription, watchID uint64) (server.ConnectEventMsg, error) {
	for {
		var ev server.ConnectEventMsg
		m, err := connects.NextMsg(5 * time.Second)
		if err != nil {
			return ev, fmt.Errorf("no connect event: %w", err)
		}
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			return ev, fmt.Errorf("connect event %s: %w", m.Data, err)
		}
		if ev.Client.ID != watchID {
			return ev, nil
		}
	}
}

// TestInboxPrefixRefused: a prefix nats.go would refuse at connect, in words
// that name no flag, is refused before, with the flag named.
func TestInboxPrefixRefused(t *testing.T) {
	for _, p := range []string{"_INBOX.>", "_IN*", "_INBOX.", "_A..B", "a b"} {
		res := runCmd(t, "check", "--no-context", "--inbox-prefix", p, "--format", "json")
		if want := `--inbox-prefix "` + p + `": want subject tokens without wildcards`; res.code != exitUnknown || !strings.Contains(res.stderr, want) || !strings.Contains(res.stdout, `"status":"UNKNOWN"`) {
			t.Errorf("--inbox-prefix %q: exit %d, stderr %q, stdout %.100q; want 3 and %q", p, res.code, res.stderr, res.stdout, want)
		}
	}
}
