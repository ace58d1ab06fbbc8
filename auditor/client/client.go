// Package client asks a running nats-version-auditor (`serve`) whether
// $JS.API.CONSUMER.RESET is safe to send to one consumer, for applications
// that have no system-account credentials of their own.
//
// It fails closed. Send RESET only when
//
//	v, err := c.ConsumerReset(ctx, account, stream, consumer)
//	if err == nil && v.Safe() { ... }
//
// Safe is true only for VerdictSafe, and the verdict is VerdictUnknown
// whenever err is not nil: an unreachable auditor, a timeout, a status other
// than 200 (a consumer the auditor has not seen is a 404, ErrNotFound), a
// body that cannot be read, or an answer older than MaxAge (ErrStale).
//
// The package depends on the standard library only.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Verdict is the auditor's answer about RESET for one consumer.
type Verdict string

// The verdicts. RESET first exists in nats-server 2.14.0.
const (
	// VerdictSafe: the consumer's leader and every peer run 2.14.0 or later.
	VerdictSafe Verdict = "safe"
	// VerdictUnanswered: the leader runs an older version; RESET times out.
	VerdictUnanswered Verdict = "unanswered"
	// VerdictCrashesFollower: the leader answers, but a follower runs an
	// older version and crashes (its whole server exits) on the replicated
	// reset.
	VerdictCrashesFollower Verdict = "crashes_follower"
	// VerdictUnknown: the auditor cannot tell, or could not be asked.
	VerdictUnknown Verdict = "unknown"
)

// Verdicts lists every verdict the auditor sends.
var Verdicts = []Verdict{VerdictSafe, VerdictUnanswered, VerdictCrashesFollower, VerdictUnknown}

// Safe reports whether RESET may be sent: true for VerdictSafe only.
func (v Verdict) Safe() bool { return v == VerdictSafe }

// Defaults of a Client.
const (
	// DefaultMaxAge asks for an audit that started at most this long before
	// the request: with serve's default --audit.min-interval (15s) a fresh
	// one can always be run in time.
	DefaultMaxAge = 30 * time.Second
	// DefaultTimeout bounds a request when Client.HTTPClient is nil: enough
	// for the auditor to run one audit (--timeout 5s by default).
	DefaultTimeout = 10 * time.Second
)

// Errors ConsumerReset wraps.
var (
	// ErrNotFound: the auditor's last audit did not see the consumer.
	ErrNotFound = errors.New("the auditor has not seen the consumer")
	// ErrStale: the answer comes from an audit older than MaxAge.
	ErrStale = errors.New("the auditor's answer is older than MaxAge")
)

// StatusError is an answer other than 200 OK.
type StatusError struct {
	Code int
	// Message is the auditor's error message, when it sent one.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("auditor answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Client asks one auditor. The zero value is not usable: set BaseURL.
type Client struct {
	// BaseURL is the auditor's listener, e.g. https://nats-version-auditor:7779.
	BaseURL string
	// HTTPClient sends the requests: set its Transport's TLSClientConfig for
	// an auditor behind TLS with a private CA. Nil means a client with
	// DefaultTimeout.
	HTTPClient *http.Client
	// Username and Password, when Username is set, are sent as basic auth
	// (the auditor's --web.config.file basic_auth_users).
	Username, Password string
	// Domain is the JetStream domain of the consumers asked about. Empty
	// asks for the consumer in whichever domain the auditor saw it; if it
	// saw it in more than one, the answer is an error (409).
	Domain string
	// MaxAge bounds how long before the request the audit behind the answer
	// may have started (0 means DefaultMaxAge). The auditor waits for a
	// fresh audit if it must; an answer that still does not meet the bound
	// is VerdictUnknown with ErrStale.
	MaxAge time.Duration
}

// Peer is one member of the consumer's RAFT group.
type Peer struct {
	Name string `json:"name"`
	// Answered is false for a peer that did not answer the audit.
	Answered bool   `json:"answered"`
	Version  string `json:"version,omitempty"`
	APILevel int    `json:"api_level"`
	Leader   bool   `json:"leader"`
	// Incomplete: a request of the audit to this peer failed.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Audit says which audit an answer comes from.
type Audit struct {
	Started    time.Time `json:"started"`
	AgeSeconds float64   `json:"age_seconds"`
	Complete   bool      `json:"complete"`
}

// Consumer is the auditor's whole answer about one consumer. Account is
// the account's id: its name in plain mode, its public key in operator
// (JWT) mode, where AccountName is the name in its JWT.
type Consumer struct {
	Domain        string  `json:"domain"`
	Account       string  `json:"account"`
	AccountName   string  `json:"account_name,omitempty"`
	Stream        string  `json:"stream"`
	Consumer      string  `json:"consumer"`
	Reset         Verdict `json:"reset"`
	Reason        string  `json:"reason"`
	Leader        string  `json:"leader"`
	Replicas      int     `json:"replicas"`
	RequiredLevel int     `json:"required_level"`
	Peers         []Peer  `json:"peers"`
	// ResetBy names the mirrors and sources ("mirror ACCOUNT > STREAM")
	// that send the consumer RESET by themselves (durable sourcing, 2.14):
	// Reset is what their RESETs do, whether the application sends one or
	// not.
	ResetBy []string `json:"reset_by,omitempty"`
	// Crashes are the servers that cannot decode the consumer's config and
	// crash on it, whether they host it or not.
	Crashes []Crash `json:"crashes,omitempty"`
	Audit   Audit   `json:"audit"`
}

// Crash is a server that crashes on a consumer it cannot decode.
type Crash struct {
	Server  string `json:"server"`
	Version string `json:"version"`
	// Feature names the feature it cannot decode ("ack_flow_control").
	Feature string `json:"feature"`
	// Answered is false for a server only an earlier audit saw.
	Answered bool `json:"answered"`
}

// ConsumerReset asks whether RESET is safe for the consumer. See the package
// documentation for how it fails closed.
func (c *Client) ConsumerReset(ctx context.Context, account, stream, consumer string) (Verdict, error) {
	info, err := c.Consumer(ctx, account, stream, consumer)
	if err != nil {
		return VerdictUnknown, err
	}
	return info.Reset, nil
}

// Consumer returns the auditor's whole answer about the consumer: its
// leader and peers with their versions and API levels, and the verdict. On
// any error it returns nil.
func (c *Client) Consumer(ctx context.Context, account, stream, consumer string) (*Consumer, error) {
	for _, part := range []struct{ what, v string }{{"account", account}, {"stream", stream}, {"consumer", consumer}} {
		if part.v == "" {
			return nil, fmt.Errorf("nats-version-auditor client: empty %s name", part.what)
		}
	}
	if c.BaseURL == "" {
		return nil, errors.New("nats-version-auditor client: no BaseURL")
	}
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	q := url.Values{"max_age": {maxAge.String()}}
	if c.Domain != "" {
		q.Set("domain", c.Domain)
	}
	u := strings.TrimSuffix(c.BaseURL, "/") + "/api/v1/consumers/" +
		url.PathEscape(account) + "/" + url.PathEscape(stream) + "/" + url.PathEscape(consumer) + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("nats-version-auditor client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.Username != "" {
		req.SetBasicAuth(c.Username, c.Password)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask nats-version-auditor: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read nats-version-auditor's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		serr := &StatusError{Code: resp.StatusCode, Message: e.Error}
		if resp.StatusCode == http.StatusNotFound && e.Error != "" {
			return nil, fmt.Errorf("%w: %w", ErrNotFound, serr)
		}
		return nil, serr
	}
	var out Consumer
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("nats-version-auditor's answer is not JSON: %w", err)
	}
	// An account asked for by name is answered by its id.
	if (out.Account != account && out.AccountName != account) || out.Stream != stream || out.Consumer != consumer || (c.Domain != "" && out.Domain != c.Domain) {
		return nil, fmt.Errorf("nats-version-auditor answered about %s > %s > %s (domain %q), not the consumer asked for",
			out.Account, out.Stream, out.Consumer, out.Domain)
	}
	switch out.Reset {
	case VerdictSafe, VerdictUnanswered, VerdictCrashesFollower, VerdictUnknown:
	default:
		return nil, fmt.Errorf("nats-version-auditor answered an unknown verdict %q", out.Reset)
	}
	// The auditor already holds its answer to max_age; this holds it to
	// the age it reports, allowing for the time the request took, so that a
	// proxy's cache or an auditor that ignores max_age cannot pass old news.
	if age := time.Duration(out.Audit.AgeSeconds * float64(time.Second)); age > maxAge+time.Since(sent) {
		return nil, fmt.Errorf("%w: the audit started %s ago, MaxAge is %s", ErrStale, age.Round(time.Millisecond), maxAge)
	}
	return &out, nil
}
