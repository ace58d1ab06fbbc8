package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// lookupRuns is how many consumer lookups the p99 is taken over;
// batchRuns how many requests for batchSize consumers at once.
const (
	lookupRuns = 1000
	batchRuns  = 200
	batchSize  = 1000
)

// lookupResult is what serve's consumer API costs: one consumer per
// request, and batchSize consumers in one (POST /api/v1/consumers).
type lookupResult struct {
	first, p50, p99           time.Duration
	batchP50, batchP99        time.Duration
	batchConsumers, batchSize int // consumers per batch, bytes of its answer
}

// lookups measures /api/v1/consumers/... of `serve` over loopback: once the
// first audit is complete, the first lookup, which indexes it, then the p99 of
// lookupRuns lookups of consumers spread over every stream, all served from
// that audit.
func lookups(h *natstest.Program, cfg config, sys *natstest.System, streams []streamRef, res *sizeResult) {
	base := startServe(h, cfg.auditor, sys.URL("n1"), "1h")
	get := func(i int) time.Duration {
		st := streams[i/consumersPerStream]
		url := fmt.Sprintf("%s/api/v1/consumers/%s/%s/C%05d", base, st.account, st.name, i)
		start := time.Now()
		resp, err := http.Get(url)
		if err != nil {
			h.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			h.Fatalf("lookup %s: %d %v", url, resp.StatusCode, err)
		}
		return time.Since(start)
	}
	err := natstest.Eventually(2*time.Minute, func() error {
		resp, err := http.Get(base + "/completez")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/completez %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		h.Fatal(err)
	}
	res.lookup.first = get(0)
	ds := make([]time.Duration, 0, lookupRuns)
	for i := range lookupRuns {
		ds = append(ds, get((i*7919)%cfg.consumers))
	}
	slices.Sort(ds)
	res.lookup.p50 = ds[len(ds)/2]
	res.lookup.p99 = ds[len(ds)*99/100-1]

	// The same audit, the same index: batchSize consumers spread over every
	// stream (all of them at the smallest size), in one request.
	n := min(batchSize, cfg.consumers)
	var req struct {
		Consumers []map[string]string `json:"consumers"`
	}
	for i := range n {
		c := (i * 7919) % cfg.consumers
		st := streams[c/consumersPerStream]
		req.Consumers = append(req.Consumers, map[string]string{"account": st.account, "stream": st.name, "consumer": fmt.Sprintf("C%05d", c)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		h.Fatal(err)
	}
	post := func() time.Duration {
		start := time.Now()
		resp, err := http.Post(base+"/api/v1/consumers", "application/json", bytes.NewReader(body))
		if err != nil {
			h.Fatal(err)
		}
		var out struct {
			Consumers []struct {
				Status int `json:"status"`
			} `json:"consumers"`
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Consumers) != n {
			h.Fatalf("batch of %d: %d %v %.200s", n, resp.StatusCode, err, b)
		}
		for _, c := range out.Consumers {
			if c.Status != http.StatusOK {
				h.Fatalf("batch of %d: an entry answered %d", n, c.Status)
			}
		}
		res.lookup.batchSize = len(b)
		return d
	}
	ds = ds[:0]
	for range batchRuns {
		ds = append(ds, post())
	}
	slices.Sort(ds)
	res.lookup.batchConsumers = n
	res.lookup.batchP50 = ds[len(ds)/2]
	res.lookup.batchP99 = ds[len(ds)*99/100-1]
}

func lookupRows(row func(string, func(sizeResult) string)) {
	row("API consumer lookup: the first after an audit (indexes it)", func(r sizeResult) string { return ms(r.lookup.first) })
	row(fmt.Sprintf("API consumer lookup from the last audit, p99 (median) of %d", lookupRuns), func(r sizeResult) string {
		return fmt.Sprintf("%.2f ms (%.2f ms)", float64(r.lookup.p99)/float64(time.Millisecond), float64(r.lookup.p50)/float64(time.Millisecond))
	})
	row(fmt.Sprintf("API lookup of %d consumers in one request (POST /api/v1/consumers), p99 (median) of %d", batchSize, batchRuns), func(r sizeResult) string {
		return fmt.Sprintf("%.2f ms (%.2f ms) for %d, %s", float64(r.lookup.batchP99)/float64(time.Millisecond), float64(r.lookup.batchP50)/float64(time.Millisecond),
			r.lookup.batchConsumers, mib(float64(r.lookup.batchSize)))
	})
}
