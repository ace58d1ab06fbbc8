package collect

import (
	"context"
	"errors"
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	json "github.com/segmentio/encoding/json"
	"golang.org/x/sync/semaphore"
)

// DefaultMaxBytesInFlight bounds the JSZ reply bytes an audit has asked for
// and not yet read (Options.MaxBytesInFlight).
//
// Every reply comes to the audit through the one server it is connected to,
// its own and the ones it routes from the others, and that server cuts off
// a client whose unread bytes exceed its max_pending (64 MiB by default:
// nats-server const.go MAX_PENDING_SIZE; client.go queueOutbound closes the
// connection as a slow consumer). A few servers of some tens of thousands
// of consumers each send that much at once; an auditor that reads them more
// slowly than they come, on a busy host, is cut off before it has read
// them. Half the default leaves room for the replies' framing, for what the
// connection carries besides, and for an estimate that falls short.
const DefaultMaxBytesInFlight = 32 << 20

// What a JSZ page with configs can cost per asset, with room to spare over
// the bytes per consumer BENCHMARKS.md records (configs with one filter
// subject, no metadata, the streams included). A config with long subject
// lists or metadata is larger: once a page of a server is read, its later
// pages are estimated at the ratio the page showed (jszPages).
const (
	bytesPerConsumer = 1 << 10
	bytesPerStream   = 2 << 10
	bytesPerAccount  = 1 << 10
	bytesPerReply    = 4 << 10
	// What a stream costs in a counts reply, its state and cluster, with
	// room to spare.
	bytesPerCountedStream = 1 << 10
)

// jszSummary is the part of a JSZ reply without accounts
// (server.ServerAPIJszResponse with server.JSInfo) that sizes the rest: the
// server's streams and consumers and its JetStream accounts, counted over
// all accounts whatever the page (monitor.go Jsz, 2.10.27 to 2.15.3).
// Total is the same count of accounts as Accounts (JetStreamStats), sent
// from 2.11.2 on, the release that also sorts every page (monitor.go JSInfo
// and Jsz: 2.11.1 has no total and sorts only at an offset).
type jszSummary struct {
	// Server names the server that sent it: the census's broadcast brings
	// every server's summary to one inbox.
	Server struct {
		ID string `json:"id"`
	} `json:"server"`
	Data *struct {
		Streams   int `json:"streams"`
		Consumers int `json:"consumers"`
		Accounts  int `json:"accounts"`
		Total     int `json:"total"`
	} `json:"data,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

// jszSummaryRequest is server.JSzOptions asking for the counts alone.
var jszSummaryRequest = jszRequest{}

// jszCounts is the part of a JSZ reply with accounts and streams but no
// consumers or configs that sizes each account's part of the pages: the
// accounts in the order the pages list them (sorted by id from 2.11.2 on)
// with each stream's consumer count (StreamState.Consumers).
type jszCounts struct {
	Data *struct {
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
// time, each page holding its estimate of the bytes in flight.
type pagePlan struct {
	pageSize int
	// perAccount is each account's estimate in page order, when the
	// server's accounts were counted one by one; total is the estimate of
	// all of them.
	perAccount []int64
	total      int64
	accounts   int
	// sorted: the server sends a total and sorts every page (2.11.2 on).
	sorted bool
	// streams as the summary counts them, to size the counts request.
	streams int
}

// estimate is what the page of size accounts from offset on may cost.
func (p pagePlan) estimate(offset, size int) int64 {
	if len(p.perAccount) != p.accounts || offset >= len(p.perAccount) {
		return p.total
	}
	var n int64
	for _, e := range p.perAccount[offset:min(offset+size, len(p.perAccount))] {
		n += e
	}
	return n + bytesPerReply
}

// decodeJSZSummary decodes a JSZ reply without accounts; its plan is the
// estimate of the server's pages.
func decodeJSZSummary(data []byte) (*jszSummary, error) {
	var resp jszSummary
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("malformed reply: %w", err)
	}
	return &resp, nil
}

// counts are the summary's streams and consumers; zero without data.
func (resp *jszSummary) counts() snapshot.JetStreamCounts {
	if resp.Data == nil {
		return snapshot.JetStreamCounts{}
	}
	return snapshot.JetStreamCounts{Streams: resp.Data.Streams, Consumers: resp.Data.Consumers}
}

// plan is the estimate of the server's pages, asked at pageSize.
func (resp *jszSummary) plan(pageSize int) (pagePlan, error) {
	if resp.Error != nil {
		return pagePlan{}, resp.Error
	}
	if resp.Data == nil {
		return pagePlan{}, errors.New("reply carries no data")
	}
	d := resp.Data
	if d.Streams < 0 || d.Consumers < 0 || d.Accounts < 0 || d.Total < 0 {
		return pagePlan{}, fmt.Errorf("reply counts %d streams, %d consumers and %d accounts", d.Streams, d.Consumers, d.Accounts)
	}
	p := pagePlan{pageSize: pageSize, accounts: max(d.Total, d.Accounts), sorted: d.Total > 0, streams: d.Streams}
	p.total = int64(d.Consumers)*bytesPerConsumer + int64(d.Streams)*bytesPerStream + int64(p.accounts)*bytesPerAccount + bytesPerReply
	return p, nil
}

// needsCounts reports whether a server's pages are to be sized account by
// account: its estimate is over a third of the bound, and its pages can be
// split (more than one account, all in one counts request, in an order
// that holds from page to page).
func (p pagePlan) needsCounts(limit int64) bool {
	return p.total > limit/3 && p.sorted && p.accounts > 1 && p.accounts <= p.pageSize
}

// countsEstimate is what the counts request may cost.
func (p pagePlan) countsEstimate() int64 {
	return int64(p.streams)*bytesPerCountedStream + int64(p.accounts)*bytesPerAccount + bytesPerReply
}

// withCounts takes a counts reply into the plan: each account's estimate,
// and as many accounts a page as keep every page within a quarter of the
// bound, so that three such servers are still asked side by side.
func (p pagePlan) withCounts(data []byte, limit int64) (pagePlan, error) {
	var resp jszCounts
	if err := json.Unmarshal(data, &resp); err != nil {
		return p, fmt.Errorf("malformed reply: %w", err)
	}
	if resp.Error != nil {
		return p, resp.Error
	}
	if resp.Data == nil {
		return p, errors.New("reply carries no data")
	}
	per := make([]int64, 0, len(resp.Data.Accounts))
	for _, a := range resp.Data.Accounts {
		e := int64(bytesPerAccount)
		for _, st := range a.Streams {
			if st.State.Consumers < 0 {
				return p, fmt.Errorf("reply counts %d consumers of a stream", st.State.Consumers)
			}
			e += bytesPerStream + int64(st.State.Consumers)*bytesPerConsumer
		}
		per = append(per, e)
	}
	if len(per) != p.accounts {
		// Accounts came or went since the summary: keep to its estimate.
		return p, nil
	}
	p.perAccount = per
	target := limit / 4
	size := 1
	for k := 2; k <= min(p.pageSize, len(per)); k++ {
		if p.widest(k) > target {
			break
		}
		size = k
	}
	p.pageSize = size
	return p, nil
}

// widest is the largest estimate of the pages of k accounts.
func (p pagePlan) widest(k int) int64 {
	var widest int64
	for i := 0; i < len(p.perAccount); i += k {
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
