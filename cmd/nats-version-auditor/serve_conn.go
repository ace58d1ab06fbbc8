package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// lazyConn is serve's connection to NATS. It is made by the first audit that
// needs it, not at start, and kept once made: nats.go reconnects it by
// itself. Until it is made, every Conn call tries again, reading the
// credentials, nkey and TLS files afresh, so that a sidecar started before
// its Secret was mounted picks the files up when they appear, without a
// restart. A connection nats.go gave up on (closed) is replaced the same way.
type lazyConn struct {
	flags  *connFlags
	logger *slog.Logger
	// onConnect, when set, runs on each new connection before any caller
	// gets it.
	onConnect func(*nats.Conn)

	mu      sync.Mutex
	nc      *nats.Conn
	lastErr string // the last connection error logged: each is logged once, not at every audit
}

func newLazyConn(flags *connFlags, logger *slog.Logger) *lazyConn {
	return &lazyConn{flags: flags, logger: logger}
}

// Conn returns the connection, connecting first if there is none yet or
// nats.go closed it. It is safe for concurrent use; callers share one
// connection and must not close it.
func (l *lazyConn) Conn(ctx context.Context) (*nats.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil && !l.nc.IsClosed() {
		return l.nc, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc, err := l.flags.connect(true, l.logger)
	if err != nil {
		if msg := err.Error(); msg != l.lastErr {
			l.lastErr = msg
			l.logger.Warn("cannot connect to NATS; trying again at the next audit", "err", err)
		}
		return nil, err
	}
	l.nc, l.lastErr = nc, ""
	l.logger.Info("connected to NATS", "server", nc.ConnectedServerName(), "version", nc.ConnectedServerVersion())
	if l.onConnect != nil {
		l.onConnect(nc)
	}
	return nc, nil
}

// forAudit is Conn for an audit (the pipeline's conn): the connection is
// kept after it, and an audit while nats.go reconnects fails at once.
func (l *lazyConn) forAudit(ctx context.Context) (*nats.Conn, func(), error) {
	nc, err := l.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !nc.IsConnected() {
		err := fmt.Errorf("not connected to NATS (%s)", nc.Status())
		if last := nc.LastError(); last != nil {
			err = fmt.Errorf("%w: %w", err, last)
		}
		return nil, nil, err
	}
	return nc, func() {}, nil
}

// Close closes the connection, if one was made.
func (l *lazyConn) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil {
		l.nc.Close()
	}
}
