package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// LazyConn is serve's connection to NATS. It is made by the first audit that
// needs it, not at start, and kept once made: nats.go reconnects it by
// itself. Until it is made, every Conn call tries again, reading the
// credentials, nkey and TLS files afresh, so that a sidecar started before
// its Secret was mounted picks the files up when they appear, without a
// restart. A connection nats.go gave up on (closed) is replaced the same way.
type LazyConn struct {
	connect func() (*nats.Conn, error)
	logger  *slog.Logger
	// OnConnect, when set, runs on each new connection before any caller
	// gets it.
	OnConnect func(*nats.Conn)

	mu      sync.Mutex
	nc      *nats.Conn
	lastErr string // the last connection error logged: each is logged once, not at every audit
}

// NewLazyConn returns a LazyConn that connects with connect: each call
// makes a connection that reconnects by itself, reading the credentials
// files afresh.
func NewLazyConn(connect func() (*nats.Conn, error), logger *slog.Logger) *LazyConn {
	return &LazyConn{connect: connect, logger: logger}
}

// Conn returns the connection, connecting first if there is none yet or
// nats.go closed it. It is safe for concurrent use; callers share one
// connection and must not close it.
func (l *LazyConn) Conn(ctx context.Context) (*nats.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil && !l.nc.IsClosed() {
		return l.nc, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nc, err := l.connect()
	if err != nil {
		if msg := err.Error(); msg != l.lastErr {
			l.lastErr = msg
			l.logger.Warn("cannot connect to NATS; trying again at the next audit", "err", err)
		}
		return nil, err
	}
	l.nc, l.lastErr = nc, ""
	l.logger.Info("connected to NATS", "server", nc.ConnectedServerName(), "version", nc.ConnectedServerVersion())
	if l.OnConnect != nil {
		l.OnConnect(nc)
	}
	return nc, nil
}

// ForAudit is Conn for an audit: the connection is kept after it (done
// does nothing), and an audit while nats.go reconnects fails at once.
func (l *LazyConn) ForAudit(ctx context.Context) (*nats.Conn, func(), error) {
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

// Close closes the connection, if one was made. Its disconnect and close
// handlers are dropped first: they report what befalls the connection, and
// its last error (a refused event subscription, say, logged once already)
// is not why serve closes it.
func (l *LazyConn) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nc != nil {
		l.nc.SetDisconnectErrHandler(nil)
		l.nc.SetClosedHandler(nil)
		l.nc.Close()
	}
}
