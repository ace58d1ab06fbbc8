// Package rawfetch is the raw fetch as a process of its own: the limit
// `make bench` holds a whole `check` process against. Both the bench's
// binary and validfetch run it.
package rawfetch

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// Main connects to url as the system user, sends the JSZ requests an audit
// needs to every server of ids (comma-separated) at once, waits for the
// last reply and returns the exit code. The server ids are given, so it
// takes no census. check, if not nil, is run on each reply as it arrives;
// an error fails the fetch.
func Main(url, ids string, check func([]byte) error) int {
	nc, err := nats.Connect(url, nats.UserInfo(natstest.SysUser, natstest.SysPassword))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	req, _ := json.Marshal(server.JszEventOptions{JSzOptions: server.JSzOptions{Accounts: true, Streams: true,
		Consumer: true, Config: true, Limit: auditor.DefaultJSZPageSize}})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for id := range strings.SplitSeq(ids, ",") {
		wg.Go(func() {
			m, err := nc.Request(auditor.ServerSubject(id, "JSZ"), req, 60*time.Second)
			if err == nil && check != nil {
				err = check(m.Data)
			}
			if err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
