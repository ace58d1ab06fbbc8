package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/alecthomas/kingpin/v2"
	"github.com/nats-io/jsm.go/natscontext"
	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// connFlags are the connection flags, spelled as natscli spells them.
type connFlags struct {
	server, user, password, token, creds, nkey string
	tlsCert, tlsKey, tlsCA, context            string
	connectionName, inboxPrefix                string
	tlsFirst, noContext                        bool
	timeout                                    time.Duration
}

func addConnFlags(app *kingpin.Application) *connFlags {
	c := &connFlags{}
	app.Flag("server", "NATS server URLs (default nats://127.0.0.1:4222, or the context's)").Short('s').Envar("NATS_URL").PlaceHolder("URL").StringVar(&c.server)
	app.Flag("user", "Username or token").Envar("NATS_USER").StringVar(&c.user)
	app.Flag("password", "Password").Envar("NATS_PASSWORD").StringVar(&c.password)
	app.Flag("token", "Token").Envar("NATS_TOKEN").StringVar(&c.token)
	app.Flag("creds", "User credentials file (JWT and seed)").Envar("NATS_CREDS").PlaceHolder("FILE").StringVar(&c.creds)
	app.Flag("nkey", "User NKEY seed file").Envar("NATS_NKEY").PlaceHolder("FILE").StringVar(&c.nkey)
	app.Flag("tlscert", "TLS client certificate file").Envar("NATS_CERT").PlaceHolder("FILE").StringVar(&c.tlsCert)
	app.Flag("tlskey", "TLS client private key file").Envar("NATS_KEY").PlaceHolder("FILE").StringVar(&c.tlsKey)
	app.Flag("tlsca", "TLS CA certificate file to verify the servers with").Envar("NATS_CA").PlaceHolder("FILE").StringVar(&c.tlsCA)
	app.Flag("tlsfirst", "Perform the TLS handshake before the NATS INFO exchange").BoolVar(&c.tlsFirst)
	app.Flag("context", "natscli context to connect with; explicit flags win over it").Envar("NATS_CONTEXT").StringVar(&c.context)
	app.Flag("no-context", "Disable the selected context").BoolVar(&c.noContext)
	app.Flag("connection-name", "Nickname to use for the underlying NATS Connection").Default(appName).PlaceHolder("NAME").StringVar(&c.connectionName)
	app.Flag("inbox-prefix", "Custom inbox prefix to use for inboxes").PlaceHolder("PREFIX").StringVar(&c.inboxPrefix)
	app.Flag("timeout", "How long one audit may wait for the servers' answers").Envar("NATS_TIMEOUT").Default(collect.DefaultTimeout.String()).DurationVar(&c.timeout)
	return c
}

// minTimeout is the shortest --timeout accepted: below it no audit can
// finish, even on loopback, and a gate given one only ever says UNKNOWN.
const minTimeout = 100 * time.Millisecond

// validate refuses a --timeout no audit can run in, and an --inbox-prefix
// nats.go would refuse only at connect, in words that name no flag.
func (c *connFlags) validate() error {
	if c.timeout < minTimeout {
		return fmt.Errorf("--timeout %s: too short for an audit, want at least %s (default %s)", c.timeout, minTimeout, collect.DefaultTimeout)
	}
	if p := c.inboxPrefix; p != "" && (strings.ContainsAny(p, "*> \t") || strings.HasSuffix(p, ".") || strings.HasPrefix(p, ".") || strings.Contains(p, "..")) {
		return fmt.Errorf("--inbox-prefix %q: want subject tokens without wildcards and without a trailing dot, such as _INBOX_audit", p)
	}
	return nil
}

// name is the connection's name as the servers show it (CONNZ, connect
// events): --connection-name, or the program's name where it is blank.
func (c *connFlags) name() string {
	if n := strings.TrimSpace(c.connectionName); n != "" {
		return n
	}
	return appName
}

// natsContext merges the selected natscli context with the explicit flags.
func (c *connFlags) natsContext() (*natscontext.Context, error) {
	opts := []natscontext.Option{
		natscontext.WithServerURL(c.server),
		natscontext.WithUser(c.user),
		natscontext.WithPassword(c.password),
		natscontext.WithToken(c.token),
		natscontext.WithCreds(c.creds),
		natscontext.WithNKey(c.nkey),
		natscontext.WithCertificate(c.tlsCert),
		natscontext.WithKey(c.tlsKey),
		natscontext.WithCA(c.tlsCA),
		natscontext.WithInboxPrefix(c.inboxPrefix),
	}
	if c.tlsFirst {
		opts = append(opts, natscontext.WithTLSHandshakeFirst())
	}
	// --no-context loads none, neither the selected one nor --context's, as
	// natscli's does.
	load := !c.noContext && (c.context != "" || natscontext.SelectedContext() != "")
	nctx, err := natscontext.New(c.context, load, opts...)
	if err != nil {
		return nil, contextError(c.context, err)
	}
	return nctx, nil
}

// contextError says which file a natscli context was looked for in, or
// which one failed to load. natscontext looks under $XDG_CONFIG_HOME/nats,
// or else under the passwd home directory's .config/nats, as natscli does:
// not under $HOME, which surprises whoever set HOME to somewhere else.
func contextError(name string, err error) error {
	if name == "" {
		name = natscontext.SelectedContext()
	}
	path, perr := natscontext.ContextPath(name)
	if perr != nil {
		return fmt.Errorf("load NATS context %q: %w", name, err)
	}
	if _, serr := os.Stat(path); serr == nil {
		return fmt.Errorf("load NATS context %q from %s: %w", name, path, err)
	}
	where := filepath.Dir(path)
	if os.Getenv("XDG_CONFIG_HOME") == "" {
		if home := os.Getenv("HOME"); home != "" && !strings.HasPrefix(where, filepath.Clean(home)+string(filepath.Separator)) {
			where += fmt.Sprintf(" (under the passwd home directory, as natscli looks, not $HOME %s; set XDG_CONFIG_HOME to look elsewhere)", home)
		}
	}
	return fmt.Errorf("load NATS context %q: no %s in %s: %w", name, filepath.Base(path), where, err)
}

// connect opens the connection the audits run on, or fails at once. A daemon
// (reconnect) keeps it and lets nats.go reconnect once it is up; a first
// connection that fails is retried by serve's exporter.LazyConn, not by nats.go, so
// that each attempt reads the credentials files again and its error is seen.
func (c *connFlags) connect(reconnect bool, logger *slog.Logger) (*nats.Conn, error) {
	nctx, err := c.natsContext()
	if err != nil {
		return nil, err
	}
	extra := []nats.Option{nats.Name(c.name()), nats.Timeout(c.timeout)}
	if reconnect {
		extra = append(extra, nats.MaxReconnects(-1),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				logger.Warn("disconnected from NATS", "err", err)
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				logger.Info("reconnected to NATS", "server", nc.ConnectedServerName())
			}),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				logger.Warn("NATS error", "err", err)
			}),
			nats.ClosedHandler(func(nc *nats.Conn) {
				// Closed with an error is nats.go giving up (e.g. the same
				// authorization error twice); without one, it is our own Close.
				if err := nc.LastError(); err != nil {
					logger.Warn("NATS connection closed; connecting again at the next audit", "err", err)
				}
			}))
	} else {
		// Without a handler of its own nats.go writes every asynchronous
		// error (a permissions violation) raw to stderr; the audit reports
		// the ones that matter (collect.PermissionError).
		extra = append(extra, nats.NoReconnect(),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				logger.Debug("NATS error", "err", err)
			}))
	}
	if path, ok := credsFile(nctx); ok {
		// nats.go reads the file only while connecting, and then says
		// neither which file nor, for most defects, what is wrong.
		if err := checkCredsFile(path); err != nil {
			return nil, err
		}
	}
	opts, err := nctx.NATSOptions(extra...)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	target := redactURLs(nctx.ServerURL())
	nc, err := nats.Connect(nctx.ServerURL(), opts...)
	if err != nil {
		return nil, connectError(target, c.timeout, err)
	}
	return nc, nil
}

// credsFile is the path of the creds file nctx logs in with, if it does:
// not when a user name wins over it, as in natscontext's NATSOptions, nor
// when a natscontext resolver (op://, env://...) gives it.
func credsFile(nctx *natscontext.Context) (string, bool) {
	ref := nctx.Creds()
	if ref == "" || nctx.User() != "" {
		return "", false
	}
	if u, err := url.Parse(ref); err == nil && len(u.Scheme) >= 2 {
		if u.Scheme != "file" {
			return "", false
		}
		ref = strings.TrimPrefix(ref, "file://")
	}
	if rest, ok := strings.CutPrefix(ref, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			ref = filepath.Join(home, rest)
		}
	}
	return ref, true
}

// credsFileError is a creds file the connection cannot log in with, and
// what is wrong with it.
type credsFileError struct {
	path, what string
	err        error
}

func (e *credsFileError) Error() string {
	if e.err == nil {
		return "creds file " + e.path + " " + e.what
	}
	return "creds file " + e.path + " " + e.what + ": " + e.err.Error()
}

func (e *credsFileError) Unwrap() error { return e.err }

// checkCredsFile says what is wrong with the creds file at path, if
// anything: nsc writes a user's JWT and that user's nkey seed, each between
// its own ----- lines.
func checkCredsFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &credsFileError{path: path, what: "cannot be read", err: err}
	}
	kp, err := nkeys.ParseDecoratedNKey(data)
	switch {
	case errors.Is(err, nkeys.ErrNoSeedFound):
		return &credsFileError{path: path, what: "holds no nkey seed (want the USER NKEY SEED block nsc writes after the JWT)"}
	case err != nil:
		return &credsFileError{path: path, what: "holds an nkey seed that does not decode", err: err}
	}
	seed, err := kp.Seed()
	if err != nil {
		return &credsFileError{path: path, what: "holds an nkey seed that does not decode", err: err}
	}
	if prefix, _, err := nkeys.DecodeSeed(seed); err != nil || prefix != nkeys.PrefixByteUser {
		return &credsFileError{path: path, what: fmt.Sprintf("holds the seed of %s, not of a user (a user's seed begins SU, not %.2s)", seedRole(prefix), seed)}
	}
	token, err := nkeys.ParseDecoratedJWT(data)
	if err != nil {
		return &credsFileError{path: path, what: "holds no user JWT", err: err}
	}
	claims, err := jwt.DecodeUserClaims(token)
	if err != nil {
		if !strings.Contains(string(data), "BEGIN NATS USER JWT") {
			return &credsFileError{path: path, what: "holds no user JWT (want the NATS USER JWT block nsc writes before the seed)"}
		}
		return &credsFileError{path: path, what: "holds a user JWT that does not decode", err: err}
	}
	if pub, err := kp.PublicKey(); err == nil && claims.Subject != pub {
		return &credsFileError{path: path, what: fmt.Sprintf("holds the JWT of user %s but the seed of user %s: both must be the same user's", claims.Subject, pub)}
	}
	return nil
}

// seedRole names what a seed of prefix is the key of.
func seedRole(prefix nkeys.PrefixByte) string {
	switch prefix {
	case nkeys.PrefixByteOperator:
		return "an operator"
	case nkeys.PrefixByteAccount:
		return "an account"
	case nkeys.PrefixByteServer:
		return "a server"
	case nkeys.PrefixByteCluster:
		return "a cluster"
	}
	return "something else"
}

// redactURLs drops user information (passwords, tokens) from a
// comma-separated list of server URLs so that it can be printed.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			u.User = nil
			p = u.String()
		} else if err != nil && strings.Contains(p, "@") {
			p = "(unparseable URL)"
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}

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
	// failFile is a credentials, key or certificate file that cannot be
	// read, or a creds file that cannot log in.
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
		permErr  *collect.PermissionError
		netErr   net.Error
		credsErr *credsFileError
	)
	switch {
	case errors.Is(err, collect.ErrNotSystemAccount):
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
	case errors.As(err, &credsErr), errors.As(err, &pathErr):
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
		var credsErr *credsFileError
		if errors.As(err, &credsErr) {
			return err // names the file and what is wrong with it
		}
		var pathErr *fs.PathError
		errors.As(err, &pathErr)
		return fmt.Errorf("cannot read %s: %w", pathErr.Path, err)
	case failUnreachable:
		return fmt.Errorf("cannot reach NATS at %s: %w", target, err)
	}
	return fmt.Errorf("cannot connect to NATS at %s: %w", target, err)
}

// collectError says what a failure of collect.Collect was; who names the
// user the audit connected as (connFlags.who).
func collectError(err error, who string) error {
	if classify(err) == failNotSystemAccount {
		return &wordedError{msg: who + " is not in the system account", err: err}
	}
	return err
}

// who names the user a connection logs in as, as it was given: the user
// name, the creds or nkey file, a token (not shown) or the user of the
// server URL, in the order natscontext picks them, with the natscli
// context they came from.
func (c *connFlags) who() string {
	user, creds, nkey, jwt, token, urls, from := c.user, c.creds, c.nkey, "", c.token, c.server, ""
	if nctx, err := c.natsContext(); err == nil {
		user, creds, nkey, jwt, token, urls = nctx.User(), nctx.Creds(), nctx.NKey(), nctx.UserJWT(), nctx.Token(), nctx.ServerURL()
		if nctx.Name != "" {
			from = fmt.Sprintf(" (context %q)", nctx.Name)
		}
	}
	switch {
	case user != "":
		return fmt.Sprintf("user %q%s", user, from)
	case creds != "":
		return "the user of creds file " + creds + from
	case nkey != "":
		return "the user of nkey file " + nkey + from
	case jwt != "":
		return "the user of the context's user_jwt" + from
	case token != "":
		return "the token's user" + from
	}
	for _, u := range strings.Split(urls, ",") {
		if u, err := url.Parse(strings.TrimSpace(u)); err == nil && u.User != nil && u.User.Username() != "" {
			if _, hasPassword := u.User.Password(); hasPassword {
				return fmt.Sprintf("user %q of the server URL%s", u.User.Username(), from)
			}
			return "the token's user of the server URL" + from
		}
	}
	return "the user without credentials (the server's no_auth_user)" + from
}

// wordedError is err said in other words.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }
