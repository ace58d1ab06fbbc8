package auditor

import (
	"context"
	"errors"
	"fmt"

	json "github.com/segmentio/encoding/json"
	"golang.org/x/sync/semaphore"
)

// DefaultMaxBytesInFlight bounds the JSZ reply bytes an audit has asked for
// and not yet read (Options.MaxBytesInFlight).
//
// Every reply comes to the audit through the one server it is connected
// to, its own and the ones it routes from the others, and that server cuts
// off a client whose unread bytes exceed its max_pending (64 MiB by
// default: nats-server const.go MAX_PENDING_SIZE; client.go queueOutbound
// closes the connection as a slow consumer). Three servers of 33,000 consumers each
// send about 65 MiB at once; an auditor that reads them more slowly than
// they come, on a busy host, is cut off before it has read them. Half the
// default leaves room for the replies' framing, for what the connection
// carries besides, and for an estimate that falls short.
const DefaultMaxBytesInFlight = 32 << 20

// What a JSZ page with configs can cost per asset, with room to spare: a
// reply of the benchmark's 100,000 consumers (configs with one filter
// subject, no metadata) came to about 680 bytes per consumer, its streams
// included. A config with long subject lists or metadata is larger; an
// estimate that falls short only lets a little more into flight.
const (
	bytesPerConsumer = 1 << 10
	bytesPerStream   = 2 << 10
	bytesPerAccount  = 1 << 10
	bytesPerReply    = 4 << 10
)

// jszCounts is the part of a JSZ reply with accounts and streams but no
// consumers or configs (server.ServerAPIJszResponse with server.JSInfo) that
// sizes the pages to come: the server's JetStream accounts in the order its
// pages list them (sorted by id, monitor.go Jsz, 2.11 on), each stream's
// consumer count (StreamState.Consumers), and the accounts in all.
type jszCounts struct {
	Data *struct {
		Total    int `json:"total"`
		Accounts []struct {
			Streams []struct {
				State struct {
					Consumers int `json:"consumer_count"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	} `json:"data,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

// jszCountsRequest is server.JSzOptions asking for the accounts' streams
// with their counts, a page of limit accounts.
func jszCountsRequest(limit int) jszRequest {
	return jszRequest{Accounts: true, Streams: true, Limit: limit}
}

// pagePlan says how to ask a server for its pages: pageSize accounts at a
// time (0: all at once), each page holding its estimate of the bytes in
// flight.
type pagePlan struct {
	pageSize int
	// perAccount is each listed account's estimate, in page order; total
	// the estimate of all of them (whatever is not listed counted at the
	// largest listed).
	perAccount []int64
	total      int64
	accounts   int
}

// estimate is what the page of size accounts from offset on may cost.
func (p pagePlan) estimate(offset, size int) int64 {
	if size <= 0 || offset >= len(p.perAccount) {
		return p.total
	}
	var n int64
	for _, e := range p.perAccount[offset:min(offset+size, len(p.perAccount))] {
		n += e
	}
	return n + bytesPerReply
}

// parseJSZCounts decodes a counts reply into the estimate of each account's
// part of a page.
func parseJSZCounts(data []byte) (pagePlan, error) {
	var resp jszCounts
	if err := json.Unmarshal(data, &resp); err != nil {
		return pagePlan{}, fmt.Errorf("malformed reply: %w", err)
	}
	if resp.Error != nil {
		return pagePlan{}, resp.Error
	}
	if resp.Data == nil {
		return pagePlan{}, errors.New("reply carries no data")
	}
	p := pagePlan{accounts: resp.Data.Total}
	var largest int64
	for _, a := range resp.Data.Accounts {
		e := int64(bytesPerAccount)
		for _, st := range a.Streams {
			if st.State.Consumers < 0 {
				return pagePlan{}, fmt.Errorf("reply counts %d consumers of a stream", st.State.Consumers)
			}
			e += bytesPerStream + int64(st.State.Consumers)*bytesPerConsumer
		}
		p.perAccount = append(p.perAccount, e)
		p.total += e
		largest = max(largest, e)
	}
	if unlisted := p.accounts - len(p.perAccount); unlisted > 0 {
		p.total += int64(unlisted) * largest
	}
	p.total += bytesPerReply
	return p, nil
}

// plan picks the page size for a server: the configured one while the
// server's whole estimate is a small part of the bound, else as many
// accounts a page as keep every page within a quarter of the bound, so
// that three such servers are still asked side by side. Pages need the
// accounts listed in the order the pages take (a full listing, sorted:
// 2.11 on; a 2.10 server sends no total and sorts only from its second
// page, see jszPages).
func (p pagePlan) plan(configured int, limit int64) pagePlan {
	p.pageSize = configured
	if p.total <= limit/3 || p.accounts <= 1 || len(p.perAccount) != p.accounts {
		return p
	}
	target := limit / 4
	size := 1
	for k := 2; k <= min(configured, len(p.perAccount)); k++ {
		if p.widest(k) > target {
			break
		}
		size = k
	}
	p.pageSize = size
	return p
}

// widest is the largest estimate of k consecutive accounts.
func (p pagePlan) widest(k int) int64 {
	var widest int64
	for i := 0; i+k <= len(p.perAccount); i += k {
		widest = max(widest, p.estimate(i, k))
	}
	return widest
}

// replyBudget holds the JSZ reply bytes in flight under a bound. A page is
// asked for once its estimate fits beside those of the pages being asked;
// one whose estimate exceeds the bound waits until it has the whole bound.
// Pages are let in the order they asked.
type replyBudget struct {
	sem   *semaphore.Weighted
	limit int64
}

func newReplyBudget(limit int64) *replyBudget {
	return &replyBudget{sem: semaphore.NewWeighted(limit), limit: limit}
}

// acquire waits until estimate bytes (or the whole bound, if more) may be
// in flight, and returns what to release, or ctx's error.
func (b *replyBudget) acquire(ctx context.Context, estimate int64) (int64, error) {
	n := min(max(estimate, 1), b.limit)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return 0, err
	}
	return n, nil
}

func (b *replyBudget) release(n int64) {
	b.sem.Release(n)
}
