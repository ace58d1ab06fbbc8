// Package rawfetch is the raw fetch, the limit `make bench` holds an audit
// against: the JSZ requests an audit needs, sent to every server at once,
// with nothing done with the replies. The bench runs it in its own process
// and as a process of its own (its binary, and validfetch).
package rawfetch

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// Fetch sends the JSZ requests an audit needs to every server of ids at
// once and waits for the last reply, each allowed timeout. It returns the
// bytes of the replies and the first error. check, if not nil, is run on
// each reply as it arrives; its error fails the fetch.
func Fetch(nc *nats.Conn, ids []string, timeout time.Duration, check func([]byte) error) (uint64, error) {
	// The bench's five accounts fit one page of the audit's page size.
	req, err := json.Marshal(server.JszEventOptions{JSzOptions: server.JSzOptions{Accounts: true, Streams: true,
		Consumer: true, Config: true, Limit: collect.DefaultJSZPageSize}})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	var bytes atomic.Uint64
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Go(func() {
			m, err := nc.Request(collect.ServerSubject(id, "JSZ"), req, timeout)
			if err == nil && check != nil {
				err = check(m.Data)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
				return
			}
			bytes.Add(uint64(len(m.Data)))
		})
	}
	wg.Wait()
	close(errs)
	return bytes.Load(), <-errs
}

// Main is the raw fetch as a process: it connects to url as the system
// user, fetches from the servers of ids (comma-separated) and returns the
// exit code. The server ids are given, so it takes no census.
func Main(url, ids string, check func([]byte) error) int {
	nc, err := nats.Connect(url, nats.UserInfo(natstest.SysUser, natstest.SysPassword))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	if _, err := Fetch(nc, strings.Split(ids, ","), 60*time.Second, check); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
