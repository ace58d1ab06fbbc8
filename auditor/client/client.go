// Package client asks a running nats-version-auditor (`serve`) whether
// $JS.API.CONSUMER.RESET is safe to send to a consumer, for applications
// that have no system-account credentials of their own.
//
// It fails closed. Send RESET only when
//
//	d, err := c.ConsumerReset(ctx, account, stream, consumer)
//	if err == nil && d.Safe() { ... }
//
// Safe is true only for VerdictSafe, and the decision is VerdictUnknown
// whenever err is not nil: an unreachable auditor, a timeout, a status other
// than 200 (a consumer the auditor has not seen is ErrNotFound, a name in
// more than one JetStream domain or account ErrAmbiguous, no audit yet
// ErrNoAudit), a body that cannot be read, or an answer older than MaxAge
// (ErrStale). The decision carries the auditor's reason either way.
//
// ConsumerResets and StreamResets ask about many consumers in one request,
// as an application checks every durable it owns at start.
//
// The package depends on the standard library only, and is a module of its
// own: an application that imports it requires this module and nothing else.
package client

import (
	"bytes"
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

// Decision is the verdict about one consumer with the reason for it.
type Decision struct {
	Verdict Verdict
	// Reason is the auditor's reason for the verdict, or what went wrong
	// asking it.
	Reason string
	// Err is, in the answers of ConsumerResets and StreamResets, why this
	// consumer has no verdict (ErrNotFound, ErrAmbiguous, ...): the others
	// may still have one. ConsumerReset returns it as its error.
	Err error
	// Consumer is the auditor's whole answer (leader, peers, versions),
	// nil when it gave none.
	Consumer *Consumer
}

// Safe reports whether RESET may be sent: only for VerdictSafe, which an
// answer with an error never is.
func (d Decision) Safe() bool { return d.Err == nil && d.Verdict.Safe() }

// String is the verdict and its reason, for logs: "crashes_follower: leader
// n2 runs 2.14.0 and answers RESET, but follower n3 (2.12.15) would crash".
func (d Decision) String() string {
	if d.Reason == "" {
		return string(d.Verdict)
	}
	return string(d.Verdict) + ": " + d.Reason
}

func unknown(err error) Decision {
	return Decision{Verdict: VerdictUnknown, Reason: err.Error(), Err: err}
}

// Defaults of a Client.
const (
	// DefaultMaxAge asks for an audit that started at most this long before
	// the request: with serve's default --audit.min-interval (15s) a fresh
	// one can always be run in time.
	DefaultMaxAge = 30 * time.Second
	// DefaultTimeout bounds a request when Client.HTTPClient is nil: enough
	// for the auditor to run one audit (--timeout 5s by default).
	DefaultTimeout = 10 * time.Second
	// DefaultFreshTimeout bounds a request of a Fresh client when
	// HTTPClient is nil: the auditor may first wait out its
	// --audit.min-interval (15s by default), then run an audit (5s).
	DefaultFreshTimeout = 30 * time.Second
)

// Errors the client wraps. Each answer other than 200 is also a
// *StatusError, with the auditor's message.
var (
	// ErrNotFound: the auditor's last audit did not see the consumer (404).
	ErrNotFound = errors.New("the auditor has not seen the consumer")
	// ErrAmbiguous: the name is the consumer of more than one JetStream
	// domain (name one with Client.Domain) or the account name of more
	// than one account (ask by public key); 409. StatusError.Domains and
	// StatusError.Accounts list them.
	ErrAmbiguous = errors.New("the name means more than one consumer")
	// ErrNoAudit: the auditor has no audit to answer from yet, or its last
	// one reached no NATS server (503).
	ErrNoAudit = errors.New("the auditor has no audit to answer from")
	// ErrStale: the answer comes from an audit older than MaxAge (or, for a
	// Fresh client, one that started before the request).
	ErrStale = errors.New("the auditor's answer is older than asked for")
)

// StatusError is an answer other than 200 OK. errors.Is tells which of
// ErrNotFound, ErrAmbiguous and ErrNoAudit it is, when the auditor said so.
type StatusError struct {
	Code int
	// Message is the auditor's error message, when it sent one.
	Message string
	// Domains and Accounts are, in a 409, the JetStream domains or the
	// account public keys the name could mean.
	Domains, Accounts []string
	kind              error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("auditor answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Is reports whether e is the kind of answer target names.
func (e *StatusError) Is(target error) bool { return e.kind != nil && target == e.kind }

// Domain chooses the JetStream domain of the consumers asked about. The
// zero value is AnyDomain.
type Domain struct {
	name string
	set  bool
}

var (
	// AnyDomain asks for the consumer in whichever JetStream domain the
	// auditor saw it; seen in more than one, the answer is ErrAmbiguous.
	AnyDomain = Domain{}
	// DefaultDomain is the JetStream of servers that name no domain.
	DefaultDomain = Domain{set: true}
)

// InDomain names a JetStream domain; InDomain("") is DefaultDomain.
func InDomain(name string) Domain { return Domain{name: name, set: true} }

func (d Domain) String() string {
	switch {
	case !d.set:
		return "any domain"
	case d.name == "":
		return "the default domain"
	}
	return "domain " + d.name
}

// Client asks one auditor. The zero value is not usable: set BaseURL.
type Client struct {
	// BaseURL is the auditor's listener, e.g. https://nats-version-auditor:7779.
	BaseURL string
	// HTTPClient sends the requests: set its Transport's TLSClientConfig for
	// an auditor behind TLS with a private CA. Nil means a client with
	// DefaultTimeout (DefaultFreshTimeout when Fresh).
	HTTPClient *http.Client
	// Username and Password, when Username is set, are sent as basic auth
	// (the auditor's --web.config.file basic_auth_users).
	Username, Password string
	// Domain is the JetStream domain of the consumers asked about:
	// AnyDomain (the zero value), DefaultDomain or InDomain("hub").
	Domain Domain
	// MaxAge bounds how long before the request the audit behind the answer
	// may have started (0 means DefaultMaxAge). The auditor waits for a
	// fresh audit if it must; an answer that still does not meet the bound
	// is ErrStale.
	MaxAge time.Duration
	// Fresh asks for an audit that started after the request (the API's
	// max_age=0s), e.g. right before a RESET; MaxAge is then ignored. The
	// auditor runs at most one audit per --audit.min-interval, so such an
	// answer can take that long.
	Fresh bool
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
	// LeadersHeard is when the answer last took in leader changes the
	// servers announced after the audit started; nil when it rests on the
	// audit alone.
	LeadersHeard *time.Time `json:"leaders_heard,omitempty"`
	// Checked is when the auditor last found every server's JetStream
	// counts as the audit counted them (serve's check between full
	// audits); nil when it has not since the audit.
	Checked *time.Time `json:"checked,omitempty"`
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
	// Pull is who pulls a consumer with a priority policy (a shard), as
	// its leader reported it; nil for any other consumer.
	Pull *Pull `json:"pull,omitempty"`
	// Findings are the last audit's findings about the consumer, as
	// `nats-version-auditor check` lists them.
	Findings []Finding `json:"findings,omitempty"`
	Audit    Audit     `json:"audit"`
}

// Pull is who pulls a consumer with a priority policy. Without the
// leader's record (FromLeader false) only the policy and group are known.
type Pull struct {
	Policy     string `json:"priority_policy"`
	Group      string `json:"priority_group,omitempty"`
	FromLeader bool   `json:"from_leader"`
	// Pending, AckPending and Waiting are the leader's num_pending,
	// num_ack_pending and num_waiting (the pull requests queued).
	Pending    uint64 `json:"num_pending"`
	AckPending int    `json:"num_ack_pending"`
	Waiting    int    `json:"num_waiting"`
	// IdleSeconds is how long the leader had gone without a delivery or
	// an ack.
	IdleSeconds float64 `json:"idle_seconds"`
	// PinnedID is the pin's holder (pinned_client_id) and PinAgeSeconds
	// how long it has held it; empty and 0 without a pin.
	PinnedID      string  `json:"pinned_client_id,omitempty"`
	PinAgeSeconds float64 `json:"pin_age_seconds,omitempty"`
	// Pullers are the processes the auditor heard pulling the consumer,
	// the pin's holder first; empty where the system account does not
	// import its account's pull requests (docs/pulls.md).
	Pullers []Puller `json:"pullers,omitempty"`
}

// Puller is one process heard pulling a consumer: the connection that
// subscribes its inbox, and whether its pulls carry the pin.
type Puller struct {
	// Process keys the process by its inboxes: the inbox prefix and the
	// first 12 characters of the NUID, which a nats.go process's inboxes
	// share.
	Process  string    `json:"process"`
	Name     string    `json:"name,omitempty"`
	IP       string    `json:"ip,omitempty"`
	Server   string    `json:"server,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// Holder: its pulls carry the pin the consumer's leader gave.
	Holder bool `json:"pin_holder"`
}

// Finding is one finding of the audit about a consumer, as `check
// --format json` writes it; a field a code does not use is empty.
type Finding struct {
	Code     string   `json:"code"`
	Severity string   `json:"severity"`
	Message  string   `json:"message"`
	Server   string   `json:"server,omitempty"`
	Cluster  string   `json:"cluster,omitempty"`
	Version  string   `json:"version,omitempty"`
	Versions []string `json:"versions,omitempty"`
	// Peer is the other server of a finding about two (a follower's
	// leader).
	Peer          string `json:"peer,omitempty"`
	Account       string `json:"account,omitempty"`
	AccountName   string `json:"account_name,omitempty"`
	Stream        string `json:"stream,omitempty"`
	Consumer      string `json:"consumer,omitempty"`
	RequiredLevel int    `json:"required_level,omitempty"`
	ServerLevel   *int   `json:"server_level,omitempty"`
	Feature       string `json:"feature,omitempty"`
	// Op names the replicated operation a follower cannot apply
	// ("delete_range").
	Op       string   `json:"op,omitempty"`
	Sourcers []string `json:"sourcers,omitempty"`
	Count    int      `json:"count,omitempty"`
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

// Ref names a consumer to ask about.
type Ref struct {
	Account  string `json:"account"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
}

func (r Ref) String() string { return r.Account + " > " + r.Stream + " > " + r.Consumer }

// ConsumerReset asks whether RESET is safe for the consumer. See the package
// documentation for how it fails closed.
func (c *Client) ConsumerReset(ctx context.Context, account, stream, consumer string) (Decision, error) {
	info, err := c.Consumer(ctx, account, stream, consumer)
	if err != nil {
		return unknown(err), err
	}
	return decision(info), nil
}

func decision(info *Consumer) Decision {
	return Decision{Verdict: info.Reset, Reason: info.Reason, Consumer: info}
}

// Consumer returns the auditor's whole answer about the consumer: its
// leader and peers with their versions and API levels, and the verdict. On
// any error it returns nil.
func (c *Client) Consumer(ctx context.Context, account, stream, consumer string) (*Consumer, error) {
	ref := Ref{account, stream, consumer}
	if err := ref.check(); err != nil {
		return nil, err
	}
	path := "/api/v1/consumers/" + url.PathEscape(account) + "/" + url.PathEscape(stream) + "/" + url.PathEscape(consumer)
	var out Consumer
	sent, err := c.do(ctx, http.MethodGet, path, nil, &out)
	if err != nil {
		return nil, err
	}
	if err := c.answers(ref, out); err != nil {
		return nil, err
	}
	if err := c.fresh(out.Audit, sent); err != nil {
		return nil, err
	}
	return &out, nil
}

// ConsumerResets asks about many consumers in one request (up to 10,000)
// and returns a decision for each, in the order asked. A consumer the
// auditor did not see, or whose name is ambiguous, has VerdictUnknown with
// Err set (ErrNotFound, ErrAmbiguous); the others keep their verdicts. An
// error returned is the request's own: then every decision is unknown.
func (c *Client) ConsumerResets(ctx context.Context, refs ...Ref) ([]Decision, error) {
	if len(refs) == 0 {
		return nil, errors.New("nats-version-auditor client: no consumers to ask about")
	}
	for _, r := range refs {
		if err := r.check(); err != nil {
			return allUnknown(len(refs), err), err
		}
	}
	body, err := json.Marshal(struct {
		Consumers []Ref `json:"consumers"`
	}{refs})
	if err != nil {
		return allUnknown(len(refs), err), err
	}
	var out batchAnswer
	sent, err := c.do(ctx, http.MethodPost, "/api/v1/consumers", body, &out)
	if err == nil {
		err = c.fresh(out.Audit, sent)
	}
	if err == nil && len(out.Consumers) != len(refs) {
		err = fmt.Errorf("nats-version-auditor answered about %d consumers, not the %d asked for", len(out.Consumers), len(refs))
	}
	if err != nil {
		return allUnknown(len(refs), err), err
	}
	ds := make([]Decision, len(refs))
	for i, e := range out.Consumers {
		ds[i] = c.entry(refs[i], e, out.Audit)
	}
	return ds, nil
}

// StreamResets asks about every consumer of the stream the auditor's last
// audit saw, keyed by consumer name. A consumer on a server that did not
// answer the audit is not listed (Consumer.Audit.Complete is false then):
// ask by name, with ConsumerResets, for the consumers that must be there.
func (c *Client) StreamResets(ctx context.Context, account, stream string) (map[string]Decision, error) {
	if err := (Ref{account, stream, "-"}).check(); err != nil {
		return nil, err
	}
	var out batchAnswer
	sent, err := c.do(ctx, http.MethodGet, "/api/v1/consumers/"+url.PathEscape(account)+"/"+url.PathEscape(stream), nil, &out)
	if err == nil {
		err = c.fresh(out.Audit, sent)
	}
	if err != nil {
		return nil, err
	}
	ds := make(map[string]Decision, len(out.Consumers))
	for _, e := range out.Consumers {
		if e.Consumer.Consumer == "" {
			return nil, errors.New("nats-version-auditor answered about a consumer without a name")
		}
		ds[e.Consumer.Consumer] = c.entry(Ref{account, stream, e.Consumer.Consumer}, e, out.Audit)
	}
	return ds, nil
}

// batchAnswer is the answer of the many-consumer endpoints.
type batchAnswer struct {
	Consumers []batchEntry `json:"consumers"`
	Audit     Audit        `json:"audit"`
}

type batchEntry struct {
	Consumer
	Status  int      `json:"status"`
	Error   string   `json:"error"`
	Domains []string `json:"domains"`
}

// entry is the decision about one consumer of a batch.
func (c *Client) entry(ref Ref, e batchEntry, audit Audit) Decision {
	if e.Status != http.StatusOK {
		return unknown(statusError(e.Status, apiError{Error: e.Error, Domains: e.Domains}))
	}
	e.Consumer.Audit = audit
	if err := c.answers(ref, e.Consumer); err != nil {
		return unknown(err)
	}
	return decision(&e.Consumer)
}

func allUnknown(n int, err error) []Decision {
	ds := make([]Decision, n)
	for i := range ds {
		ds[i] = unknown(err)
	}
	return ds
}

func (r Ref) check() error {
	for _, part := range []struct{ what, v string }{{"account", r.Account}, {"stream", r.Stream}, {"consumer", r.Consumer}} {
		if part.v == "" {
			return fmt.Errorf("nats-version-auditor client: empty %s name", part.what)
		}
	}
	return nil
}

// apiError is the body of every answer but 200.
type apiError struct {
	Error    string   `json:"error"`
	Domains  []string `json:"domains"`
	Accounts []string `json:"accounts"`
}

func statusError(code int, e apiError) error {
	serr := &StatusError{Code: code, Message: e.Error, Domains: e.Domains, Accounts: e.Accounts}
	// A 404 or 503 without the auditor's own body is something else on the
	// way (a proxy, a wrong path): no more than a StatusError.
	switch {
	case e.Error == "":
	case code == http.StatusNotFound:
		serr.kind = ErrNotFound
	case code == http.StatusConflict:
		serr.kind = ErrAmbiguous
	case code == http.StatusServiceUnavailable:
		serr.kind = ErrNoAudit
	}
	return serr
}

// do sends one request and decodes a 200's body into out; it returns when
// the request was sent.
func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) (time.Time, error) {
	if c.BaseURL == "" {
		return time.Time{}, errors.New("nats-version-auditor client: no BaseURL")
	}
	q := url.Values{"max_age": {c.maxAge().String()}}
	if c.Domain.set {
		q.Set("domain", c.Domain.name)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path+"?"+q.Encode(), bytes.NewReader(body))
	if err != nil {
		return time.Time{}, fmt.Errorf("nats-version-auditor client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Username != "" {
		req.SetBasicAuth(c.Username, c.Password)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
		if c.Fresh {
			hc.Timeout = DefaultFreshTimeout
		}
	}
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return sent, fmt.Errorf("ask nats-version-auditor: %w", err)
	}
	defer resp.Body.Close()
	// Room for the answer to the largest batch the auditor takes, every
	// consumer with its peers; a longer body is no auditor's answer.
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return sent, fmt.Errorf("read nats-version-auditor's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.Unmarshal(b, &e)
		return sent, statusError(resp.StatusCode, e)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return sent, fmt.Errorf("nats-version-auditor's answer is not JSON: %w", err)
	}
	return sent, nil
}

func (c *Client) maxAge() time.Duration {
	switch {
	case c.Fresh:
		return 0
	case c.MaxAge <= 0:
		return DefaultMaxAge
	}
	return c.MaxAge
}

// answers checks that an answer is about ref, in the domain asked for,
// with a verdict this client knows. An account asked for by name is
// answered by its id.
func (c *Client) answers(ref Ref, out Consumer) error {
	if (out.Account != ref.Account && out.AccountName != ref.Account) || out.Stream != ref.Stream || out.Consumer != ref.Consumer ||
		(c.Domain.set && out.Domain != c.Domain.name) {
		return fmt.Errorf("nats-version-auditor answered about %s > %s > %s (domain %q), not %s in %s",
			out.Account, out.Stream, out.Consumer, out.Domain, ref, c.Domain)
	}
	switch out.Reset {
	case VerdictSafe, VerdictUnanswered, VerdictCrashesFollower, VerdictUnknown:
	default:
		return fmt.Errorf("nats-version-auditor answered an unknown verdict %q", out.Reset)
	}
	return nil
}

// fresh holds an answer to the age the auditor reports, allowing for the
// time the request took: the auditor already holds it to max_age, but a
// proxy's cache or an auditor that ignores max_age must not pass old news.
func (c *Client) fresh(a Audit, sent time.Time) error {
	maxAge := c.maxAge()
	if age := time.Duration(a.AgeSeconds * float64(time.Second)); age > maxAge+time.Since(sent) {
		if c.Fresh {
			return fmt.Errorf("%w: the audit started %s ago, before the request", ErrStale, age.Round(time.Millisecond))
		}
		return fmt.Errorf("%w: the audit started %s ago, MaxAge is %s", ErrStale, age.Round(time.Millisecond), maxAge)
	}
	return nil
}
