package collect

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// RereadPulls reads again who pulls each shard (a consumer with a priority
// policy) in snap: each such account's JSZ, that account alone (nats-server
// monitor.go Jsz), from every JetStream server snap counted. It returns a
// copy of snap whose shards carry their leaders' records now, and ""; or
// nil and what only a full audit reads: a server that did not answer within
// opts.Timeout, a shard led by another, one gone or new.
func RereadPulls(ctx context.Context, nc *nats.Conn, snap *snapshot.Snapshot, opts Options) (*snapshot.Snapshot, string) {
	opts = opts.withDefaults()
	accounts := map[string]bool{}
	for i := range snap.Consumers {
		if a := &snap.Consumers[i]; a.Pull != nil {
			accounts[a.Account] = true
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	type reply struct {
		srv snapshot.Server
		js  *jszData
		err error
	}
	var replies []chan reply
	for _, srv := range snap.Servers {
		if _, ok := snap.Counts[srv.ID]; ok {
			for acc := range accounts {
				ch := make(chan reply, 1)
				replies = append(replies, ch)
				go func() { js, err := rereadAccount(ctx, nc, srv, acc, opts.MaxReplyBytes); ch <- reply{srv, js, err} }()
			}
		}
	}
	m := newMerger()
	for _, ch := range replies {
		r := <-ch
		if r.err != nil {
			return nil, fmt.Sprintf("%s did not give the shards' accounts: %v", r.srv.Name, r.err)
		}
		m.add(r.srv.Name, r.srv.Domain, r.js)
	}
	reread := m.consumers()
	now := map[snapshot.AssetKey]*snapshot.Asset{}
	for i := range reread {
		if reread[i].Pull != nil {
			now[reread[i].Key()] = &reread[i]
		}
	}
	out := *snap
	out.Consumers = slices.Clone(snap.Consumers)
	for i := range out.Consumers {
		a := &out.Consumers[i]
		if a.Pull == nil {
			continue
		}
		switch r := now[a.Key()]; {
		case r == nil:
			return nil, fmt.Sprintf("%s no longer has a priority policy, or its servers no longer list it", a.Label())
		case r.Leader != a.Leader:
			return nil, fmt.Sprintf("%s is led by %q, the last audit read %q", a.Label(), r.Leader, a.Leader)
		default:
			a.Pull = r.Pull
			delete(now, a.Key())
		}
	}
	for _, r := range now {
		return nil, fmt.Sprintf("%s has a priority policy and the last audit did not see it", r.Label())
	}
	return &out, ""
}

// rereadAccount is one server's JSZ of one account, with configs.
func rereadAccount(ctx context.Context, nc *nats.Conn, srv snapshot.Server, account string, maxBytes int) (*jszData, error) {
	msg, err := serverRequest(srv.ID, "JSZ", jszRequest{Account: account, Streams: true, Consumer: true, Config: true}, false)
	if err == nil {
		msg, err = nc.RequestMsgWithContext(ctx, msg)
	}
	switch {
	case err != nil:
		return nil, err
	case len(msg.Data) > maxBytes:
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errReplyTooLarge, len(msg.Data), maxBytes)
	}
	return parseJSZ(msg.Data)
}
