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

// jszSummary is the part of a JSZ reply without details
// (server.ServerAPIJszResponse with server.JSInfo) that sizes the details:
// every JSZ reply counts the server's streams and consumers, and its
// JetStream accounts, whichever page it carries (monitor.go Jsz, 2.10.27 to
// 2.15.3).
type jszSummary struct {
	Data *struct {
		Streams   int `json:"streams"`
		Consumers int `json:"consumers"`
		Total     int `json:"total"`
	} `json:"data,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

// jszSummaryRequest is server.JSzOptions asking for the counts alone.
var jszSummaryRequest = jszRequest{}

// parseJSZSummary decodes a JSZ reply without details into what its
// details would cost.
func parseJSZSummary(data []byte) (int64, error) {
	var resp jszSummary
	if err := json.Unmarshal(data, &resp); err != nil {
		return 0, fmt.Errorf("malformed reply: %w", err)
	}
	if resp.Error != nil {
		return 0, resp.Error
	}
	if resp.Data == nil {
		return 0, errors.New("reply carries no data")
	}
	d := resp.Data
	if d.Streams < 0 || d.Consumers < 0 || d.Total < 0 {
		return 0, fmt.Errorf("reply counts %d streams, %d consumers and %d accounts", d.Streams, d.Consumers, d.Total)
	}
	return int64(d.Consumers)*bytesPerConsumer + int64(d.Streams)*bytesPerStream +
		int64(d.Total)*bytesPerAccount + bytesPerReply, nil
}

// replyBudget holds the JSZ reply bytes in flight under a bound. A server
// is asked for its pages once its estimate fits beside those of the servers
// being asked; one whose estimate exceeds the bound waits until it has the
// whole bound. Servers are let in the order they asked.
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
