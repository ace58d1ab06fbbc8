// Command recordseeds records real $SYS replies from servers of every
// version the tests run and writes them as seed corpora of the auditor's
// fuzz targets (auditor/collect/testdata/fuzz). Run it with `make fuzz-seeds` after
// a server version changes.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	dir := "auditor/collect/testdata/fuzz"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	p := &natstest.Program{}
	code := p.Run(func() int { record(p, dir); return 0 })
	p.RunCleanups()
	os.Exit(code)
}

func record(p *natstest.Program, dir string) {
	node := func(name, version string) natstest.Spec {
		s := natstest.Node(name, version, "c1")
		s.LeafListen = name == "n1"
		return s
	}
	sys := natstest.Start(p,
		node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Old),
		natstest.Spec{Name: "leaf", Version: natstest.New, LeafRemotes: []natstest.Remote{{Hub: "n1", Accounts: []string{"APP"}}}},
	)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	for _, st := range []server.StreamConfig{
		{Name: "R3", Subjects: []string{"r3"}, Replicas: 3, Storage: server.FileStorage, AllowMsgTTL: true},
		{Name: "R1", Subjects: []string{"r1"}, Replicas: 1, Storage: server.MemoryStorage},
	} {
		if err := natstest.AddStream(app, st); err != nil {
			p.Fatal(err)
		}
		if err := natstest.AddConsumer(app, st.Name, server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit}); err != nil {
			p.Fatal(err)
		}
	}
	nc := sys.Connect("n1", natstest.SysUser, natstest.SysPassword)
	for _, s := range []string{"n1", "n2", "n3"} {
		version := sys.Server(s).Version
		id := serverID(p, nc, s)
		for target, ask := range map[string]struct {
			endpoint string
			body     any
		}{
			"FuzzStatsz": {"STATSZ", nil},
			"FuzzLeafz":  {"LEAFZ", server.LeafzEventOptions{}},
			"FuzzJSZ": {"JSZ", server.JszEventOptions{JSzOptions: server.JSzOptions{
				Accounts: true, Streams: true, Consumer: true, Config: true, Limit: 1024}}},
		} {
			body, _ := json.Marshal(ask.body)
			msg, err := nc.Request(collect.ServerSubject(id, ask.endpoint), body, 5*time.Second)
			if err != nil {
				p.Fatal(err)
			}
			write(p, filepath.Join(dir, target), s+"-"+version, msg.Data)
		}
	}
}

func serverID(p *natstest.Program, nc *nats.Conn, name string) string {
	msg, err := nc.Request(collect.PingSubject, []byte(fmt.Sprintf(`{"server_name":%q,"exact_match":true}`, name)), 5*time.Second)
	if err != nil {
		p.Fatal(err)
	}
	var s server.ServerStatsMsg
	if err := json.Unmarshal(msg.Data, &s); err != nil {
		p.Fatal(err)
	}
	return s.Server.ID
}

func write(p *natstest.Program, dir, name string, data []byte) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.Fatal(err)
	}
	corpus := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	name = strings.ReplaceAll(name, ".", "_")
	if err := os.WriteFile(filepath.Join(dir, name), []byte(corpus), 0o644); err != nil {
		p.Fatal(err)
	}
	fmt.Println(filepath.Join(dir, name), len(data), "bytes")
}
