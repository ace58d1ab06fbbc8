package collect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Drift asks every server at once for its JetStream counts (JSZ without
// accounts on $SYS.REQ.SERVER.PING.JSZ, the census's own question) and
// holds them against those snap's census recorded. It returns "" when
// every server snap counted answered within wait with the same counts and
// no other server answered with any; otherwise what differs, naming the
// server. A stream or consumer created, deleted or moved to other servers
// changes some server's count; a config change, or a create and a delete
// of the same kind on one server between two checks, does not.
//
// The question costs each server its account totals only: no stream or
// consumer is listed, so no asset's lock is taken (JSZ's per-consumer
// info() is what a full audit pays for).
func Drift(ctx context.Context, nc *nats.Conn, snap *snapshot.Snapshot, wait time.Duration) (string, error) {
	if len(snap.Counts) == 0 {
		return "the last audit counted no JetStream server", nil
	}
	names := map[string]string{}
	for _, s := range snap.Servers {
		names[s.ID] = s.Name
	}
	name := func(id string) string {
		if n := names[id]; n != "" {
			return n
		}
		return id
	}
	inbox := nc.NewInbox()
	replies := make(chan *nats.Msg, 4*len(snap.Counts)+16)
	sub, err := nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return "", fmt.Errorf("drift check: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(PingEndpointSubject("JSZ"), inbox, []byte("{}")); err != nil {
		return "", fmt.Errorf("drift check: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	answered := map[string]bool{}
	for len(answered) < len(snap.Counts) {
		select {
		case <-ctx.Done():
			var silent []string
			for id := range snap.Counts {
				if !answered[id] {
					silent = append(silent, name(id))
				}
			}
			slices.Sort(silent)
			return fmt.Sprintf("%s did not give its counts within %s", strings.Join(silent, ", "), wait), nil
		case m := <-replies:
			if isNoResponders(m) {
				return "", errors.New("drift check: no server answered $SYS.REQ.SERVER.PING.JSZ")
			}
			resp, err := decodeJSZSummary(m.Data)
			if err != nil || resp.Server.ID == "" {
				return fmt.Sprintf("a reply to the counts could not be read: %v", err), nil
			}
			if resp.Data == nil {
				continue // a server without JetStream
			}
			was, ok := snap.Counts[resp.Server.ID]
			if !ok {
				return fmt.Sprintf("%s gave counts and the last audit counted none of it", name(resp.Server.ID)), nil
			}
			if now := resp.counts(); now != was {
				return fmt.Sprintf("%s hosts %d streams and %d consumers, the last audit counted %d and %d",
					name(resp.Server.ID), now.Streams, now.Consumers, was.Streams, was.Consumers), nil
			}
			answered[resp.Server.ID] = true
		}
	}
	return "", nil
}
