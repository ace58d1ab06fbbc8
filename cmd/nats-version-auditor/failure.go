package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// failure is the kind of an audit's failure. One classifier answers both
// questions asked of one: what to say (connectError, collectError) and
// whether another audit may succeed where it failed (worthWaiting), so
// that the two answers cannot drift apart.
type failure int

const (
	// failOther is any failure not named below: it may pass.
	failOther failure = iota
	// failUnreachable is no server reachable: a rolling upgrade restarts
	// the very server a gate may connect to.
	failUnreachable
	// failAuth is the credentials the server rejected.
	failAuth
	// failTLS is the TLS setup of one side that the other refuses.
	failTLS
	// failFile is a credentials, key or certificate file that cannot be read.
	failFile
	// failNotSystemAccount is a user outside the system account.
	failNotSystemAccount
	// failPermission is a request or subscription of the audit that the
	// user's permissions refuse.
	failPermission
	// failTimeout is a connection attempt that ran out of --timeout: a
	// server restarting may be slow to answer.
	failTimeout
)

// classify names which of the usual failures err is.
func classify(err error) failure {
	var (
		unknownCA *x509.UnknownAuthorityError
		hostname  x509.HostnameError
		certErr   *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
		pathErr   *fs.PathError
	)
	var (
		permErr *auditor.PermissionError
		netErr  net.Error
	)
	switch {
	case errors.Is(err, auditor.ErrNotSystemAccount):
		return failNotSystemAccount
	case errors.As(err, &permErr):
		return failPermission
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrAccountAuthExpired),
		// An -ERR the server words differently from nats.go's own errors.
		strings.Contains(strings.ToLower(err.Error()), "authorization violation"):
		return failAuth
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &certErr), errors.As(err, &recordErr),
		errors.Is(err, nats.ErrSecureConnRequired), errors.Is(err, nats.ErrSecureConnWanted), errors.Is(err, nats.ErrClientCertOrRootCAsRequired):
		return failTLS
	case errors.As(err, &pathErr):
		return failFile
	case errors.Is(err, nats.ErrNoServers):
		return failUnreachable
	case errors.Is(err, nats.ErrTimeout), errors.As(err, &netErr) && netErr.Timeout():
		return failTimeout
	}
	return failOther
}

// worthWaiting reports whether another audit may succeed where err failed:
// not when the credentials, the TLS setup, a file or the account are wrong,
// since waiting cannot mend them.
func worthWaiting(err error) bool {
	switch classify(err) {
	case failOther, failUnreachable, failTimeout:
		return true
	}
	return false
}

// connectError says what a failure to connect to target, with --timeout
// timeout, was.
func connectError(target string, timeout time.Duration, err error) error {
	switch classify(err) {
	case failTimeout:
		// Not err's own words: a read timeout names the connection's
		// ephemeral port, which differs at every attempt.
		return &wordedError{msg: fmt.Sprintf("cannot connect to NATS at %s within --timeout %s: the server did not answer in time", target, timeout), err: err}
	case failAuth:
		return fmt.Errorf("authentication failed at %s: the server rejected the credentials: %w", target, err)
	case failTLS:
		return fmt.Errorf("TLS failure connecting to %s: %w", target, err)
	case failFile:
		var pathErr *fs.PathError
		errors.As(err, &pathErr)
		return fmt.Errorf("cannot read %s: %w", pathErr.Path, err)
	case failUnreachable:
		return fmt.Errorf("cannot reach NATS at %s: %w", target, err)
	}
	return fmt.Errorf("cannot connect to NATS at %s: %w", target, err)
}

// collectError says what a failure of auditor.Collect was.
func collectError(err error) error {
	if classify(err) == failNotSystemAccount {
		return fmt.Errorf("not a system account user: %w", err)
	}
	return err
}

// wordedError is err said in other words.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }
