// Command demo shows the blind spot the auditor exists for, on real servers:
// a mixed 2.14/2.14/2.12 cluster on loopback where the client's own server
// says 2.14 while a consumer is led by 2.12. It is run by `make demo`.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	auditorBin := flag.String("auditor", "bin/nats-version-auditor", "the auditor binary to run")
	flag.Parse()
	h := &natstest.Program{}
	code := h.Run(func() int { return demo(h, *auditorBin) })
	h.RunCleanups()
	os.Exit(code)
}

// nodes is the cluster the demo starts: two servers at the floor and one
// below it. `make demo` builds the versions they run, and only those (a
// test holds its recipe to them).
var nodes = []natstest.Spec{natstest.Node("n1", natstest.Floor, "demo"), natstest.Node("n2", natstest.Floor, "demo"), natstest.Node("n3", natstest.Old, "demo")}

func demo(h *natstest.Program, auditorBin string) int {
	fmt.Printf("Building (once) and starting nats-server %s, %s and %s on loopback...\n", nodes[0].Version, nodes[1].Version, nodes[2].Version)
	sys := natstest.Start(h, nodes...)
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	must(h, natstest.AddStream(app, server.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Replicas: 3, Storage: server.FileStorage}))
	must(h, natstest.AddConsumer(app, "ORDERS", server.ConsumerConfig{Durable: "worker", AckPolicy: server.AckExplicit, Replicas: 3}))
	must(h, natstest.MoveConsumerLeader(app, "ORDERS", "worker", "n3"))

	fmt.Printf("\nWhat the application sees, connected to n1:\n")
	fmt.Printf("  nc.ConnectedServerVersion() = %s   (looks fine for CONSUMER.RESET)\n", app.ConnectedServerVersion())
	err := natstest.ResetConsumer(app, "ORDERS", "worker", 2*time.Second)
	switch {
	case errors.Is(err, nats.ErrTimeout):
		fmt.Printf("  $JS.API.CONSUMER.RESET.ORDERS.worker -> timed out after 2s: its leader n3 runs %s\n", strings.TrimPrefix(natstest.Old, "v"))
	default:
		fmt.Printf("  $JS.API.CONSUMER.RESET.ORDERS.worker -> %v\n", err)
	}

	fmt.Printf("\nWhat the auditor sees (nats-version-auditor check -s %s --user sys ...):\n\n", sys.URL("n1"))
	cmd := exec.Command(auditorBin, append([]string{"check"}, sys.SysArgs("n1")...)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		fmt.Printf("\ncheck exited %d (2 = CRITICAL): a pre-rollout gate would stop here.\n", exit.ExitCode())
	} else if err != nil {
		h.Fatal(err)
	}
	fmt.Println("\nStopping the servers.")
	return 0
}

func must(h *natstest.Program, err error) {
	if err != nil {
		h.Fatal(err)
	}
}
