// Command soak runs `serve` under continuous scraping while servers restart
// and consumer leaders move, and fails if the daemon's goroutines, heap or
// open file descriptors grow without bound. It is run by `make soak`.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "how long to soak")
	auditorBin := flag.String("auditor", "bin/nats-version-auditor", "the auditor binary")
	flag.Parse()
	p := &natstest.Program{}
	code := p.Run(func() int { return soak(p, *auditorBin, *duration) })
	p.RunCleanups()
	os.Exit(code)
}

type sample struct {
	goroutines, heap, fds float64
	up                    float64
}

func soak(p *natstest.Program, bin string, duration time.Duration) int {
	node := func(name, version string) natstest.Spec {
		return natstest.Spec{Name: name, Version: version, Cluster: "soak", JetStream: true}
	}
	sys := natstest.Start(p, node("n1", natstest.Floor), node("n2", natstest.New), node("n3", natstest.Floor))
	app := sys.Connect("n1", natstest.AppUser, natstest.AppPassword)
	if err := natstest.AddStream(app, server.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: server.FileStorage}); err != nil {
		p.Fatal(err)
	}
	for i := range 20 {
		if err := natstest.AddConsumer(app, "S", server.ConsumerConfig{Durable: fmt.Sprintf("C%02d", i), AckPolicy: server.AckExplicit}); err != nil {
			p.Fatal(err)
		}
	}

	addr := natstest.FreeAddr(p)
	// The daemon talks to n1 and n2, so that restarting one of them makes
	// it reconnect to the other.
	url := sys.URL("n1") + "," + sys.URL("n2")
	cmd := exec.Command(bin, append([]string{"serve", "--web.listen-address", addr, "--audit.min-interval", "1s", "--timeout", "2s",
		"--log.level", "warn"}, natstest.SysArgs(url)...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		p.Fatal(err)
	}
	p.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	base := "http://" + addr
	if err := natstest.Eventually(10*time.Second, func() error { _, err := scrape(base); return err }); err != nil {
		p.Fatal(err)
	}

	// Warm up so that the start sample is the steady state, not the boot.
	warm := time.Now().Add(20 * time.Second)
	scrapes, failures := 0, 0
	for time.Now().Before(warm) {
		if _, err := scrape(base); err != nil {
			failures++
		}
		scrapes++
		time.Sleep(200 * time.Millisecond)
	}
	start, err := scrape(base)
	if err != nil {
		p.Fatal(err)
	}
	fmt.Printf("soak for %s: start goroutines=%.0f heap_inuse=%.1fMiB open_fds=%.0f\n", duration, start.goroutines, start.heap/(1<<20), start.fds)

	end := time.Now().Add(duration)
	restarts, moves := 0, 0
	nextFault := time.Now().Add(15 * time.Second)
	for time.Now().Before(end) {
		if time.Now().After(nextFault) {
			victim := []string{"n1", "n2", "n3"}[restarts%3]
			sys.Restart(victim, "")
			restarts++
			if err := natstest.MoveConsumerLeader(app, "S", fmt.Sprintf("C%02d", moves%20), []string{"n1", "n2", "n3"}[moves%3]); err == nil {
				moves++
			}
			nextFault = time.Now().Add(15 * time.Second)
		}
		if _, err := scrape(base); err != nil {
			failures++
		}
		scrapes++
		time.Sleep(200 * time.Millisecond)
	}
	// Let the last fault heal, then take the end sample.
	var last sample
	if err := natstest.Eventually(60*time.Second, func() error {
		last, err = scrape(base)
		if err == nil && last.up != 1 {
			err = fmt.Errorf("up = %v", last.up)
		}
		return err
	}); err != nil {
		fmt.Printf("FAIL: the daemon did not recover after the last fault: %v\n", err)
		return 1
	}
	fmt.Printf("soak end:   goroutines=%.0f heap_inuse=%.1fMiB open_fds=%.0f\n", last.goroutines, last.heap/(1<<20), last.fds)
	fmt.Printf("%d scrapes (%d failed), %d server restarts, %d leader moves\n", scrapes, failures, restarts, moves)

	ok := true
	if last.goroutines > start.goroutines+20 {
		fmt.Printf("FAIL: goroutines grew from %.0f to %.0f\n", start.goroutines, last.goroutines)
		ok = false
	}
	if last.heap > 2*start.heap+16<<20 {
		fmt.Printf("FAIL: heap grew from %.1f to %.1f MiB\n", start.heap/(1<<20), last.heap/(1<<20))
		ok = false
	}
	if last.fds > start.fds+10 {
		fmt.Printf("FAIL: open fds grew from %.0f to %.0f\n", start.fds, last.fds)
		ok = false
	}
	if failures > 0 {
		fmt.Printf("FAIL: %d scrapes failed: /metrics must answer whatever NATS does\n", failures)
		ok = false
	}
	if !ok {
		return 1
	}
	fmt.Println("PASS")
	return 0
}

func scrape(base string) (sample, error) {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return sample{}, fmt.Errorf("scrape: %d %v", resp.StatusCode, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return sample{}, err
	}
	get := func(name string) float64 {
		f := mfs[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return -1
		}
		m := f.GetMetric()[0]
		if f.GetType() == dto.MetricType_COUNTER {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return sample{goroutines: get("go_goroutines"), heap: get("go_memstats_heap_inuse_bytes"),
		fds: get("process_open_fds"), up: get("nats_version_auditor_up")}, nil
}
