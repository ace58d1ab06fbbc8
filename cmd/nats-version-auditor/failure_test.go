package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats.go"
)

// TestClassify holds every error the classifier names, as nats.go, crypto/tls
// and the auditor return it, to its kind, its words and whether waiting is
// worth it. Wrapping it (as connectError, nats.go's ErrTLS and the
// credentials loader do) changes nothing: check --wait classifies the error
// connect has already worded.
func TestClassify(t *testing.T) {
	const target = "nats://127.0.0.1:4222"
	handshake := func(err error) error { return fmt.Errorf("%w: %w", nats.ErrTLS, err) } // nats.go's makeTLSConn
	for _, tt := range []struct {
		name  string
		err   error
		kind  failure
		words string
		waits bool
	}{
		{"nats.ErrAuthorization", nats.ErrAuthorization, failAuth, "authentication failed at " + target, false},
		{"nats.ErrAuthExpired", nats.ErrAuthExpired, failAuth, "authentication failed at " + target, false},
		{"nats.ErrAuthRevoked", nats.ErrAuthRevoked, failAuth, "authentication failed at " + target, false},
		{"nats.ErrAccountAuthExpired", nats.ErrAccountAuthExpired, failAuth, "authentication failed at " + target, false},
		{"an authorization -ERR worded otherwise", errors.New("nats: Authorization Violation for user sys"), failAuth, "authentication failed at " + target, false},

		{"x509.UnknownAuthorityError", handshake(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), failTLS, "TLS failure connecting to " + target, false},
		{"*x509.UnknownAuthorityError", &x509.UnknownAuthorityError{}, failTLS, "TLS failure connecting to " + target, false},
		{"x509.HostnameError", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "nats"}, failTLS, "TLS failure connecting to " + target, false},
		{"tls.CertificateVerificationError", handshake(&tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired}}), failTLS, "TLS failure connecting to " + target, false},
		{"tls.RecordHeaderError", handshake(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), failTLS, "TLS failure connecting to " + target, false},
		{"nats.ErrSecureConnRequired", nats.ErrSecureConnRequired, failTLS, "TLS failure connecting to " + target, false},
		{"nats.ErrSecureConnWanted", nats.ErrSecureConnWanted, failTLS, "TLS failure connecting to " + target, false},
		{"nats.ErrClientCertOrRootCAsRequired", nats.ErrClientCertOrRootCAsRequired, failTLS, "TLS failure connecting to " + target, false},

		{"fs.PathError", fmt.Errorf("credentials: %w", &fs.PathError{Op: "open", Path: "/etc/sys.creds", Err: fs.ErrNotExist}), failFile, "cannot read /etc/sys.creds", false},

		{"a creds file that cannot log in", &credsFileError{path: "/etc/sys.creds", what: "holds no nkey seed"}, failFile, "creds file /etc/sys.creds holds no nkey seed", false},
		{"a creds file that cannot be read", &credsFileError{path: "/etc/sys.creds", what: "cannot be read", err: &fs.PathError{Op: "open", Path: "/etc/sys.creds", Err: fs.ErrPermission}},
			failFile, "creds file /etc/sys.creds cannot be read: open /etc/sys.creds: permission denied", false},

		{"nats.ErrNoServers", nats.ErrNoServers, failUnreachable, "cannot reach NATS at " + target, true},

		{"collect.ErrNotSystemAccount", collect.ErrNotSystemAccount, failNotSystemAccount, "cannot connect to NATS at " + target, false},

		{"collect.PermissionError", &collect.PermissionError{Op: "publish", Subject: "$SYS.REQ.SERVER.NX.JSZ", Allow: "$SYS.REQ.SERVER.*.JSZ"},
			failPermission, "cannot connect to NATS at " + target, false},

		{"nats.ErrTimeout", nats.ErrTimeout, failTimeout, "cannot connect to NATS at " + target + " within --timeout 100ms", true},
		{"a dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}, failTimeout, "cannot connect to NATS at " + target + " within --timeout 100ms", true},
		{"nats.ErrConnectionClosed", nats.ErrConnectionClosed, failOther, "cannot connect to NATS at " + target, true},
		{"a handshake cut short", handshake(syscall.ECONNRESET), failOther, "cannot connect to NATS at " + target, true},
		{"io.EOF", io.EOF, failOther, "cannot connect to NATS at " + target, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err); got != tt.kind {
				t.Errorf("classify = %d, want %d", got, tt.kind)
			}
			worded := connectError(target, 100*time.Millisecond, tt.err)
			if !strings.HasPrefix(worded.Error(), tt.words) || !errors.Is(worded, tt.err) {
				t.Errorf("connectError = %q, want it to start %q and wrap the error", worded, tt.words)
			}
			if got := classify(worded); got != tt.kind {
				t.Errorf("classify(connectError) = %d, want %d", got, tt.kind)
			}
			if got := worthWaiting(worded); got != tt.waits {
				t.Errorf("worthWaiting = %v, want %v", got, tt.waits)
			}
		})
	}
}

// timeoutErr is what a dial that ran out of time returns under its *net.OpError.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
