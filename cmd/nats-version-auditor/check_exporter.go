package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"

	"github.com/alecthomas/kingpin/v2"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

// exporterFlags are check's flags for asking a running serve for its
// report instead of auditing NATS: a gate in an application's namespace
// then needs no system account.
type exporterFlags struct {
	url       string
	maxAge    time.Duration
	maxAgeSet bool

	base *url.URL
	// last is the latest answer, for the report made of it. An interrupted
	// wait prints while the request it left may still be answered.
	mu   sync.Mutex
	last *exporterAnswer
}

// defaultMaxAge is --max-age's default: an exporter that Prometheus scrapes
// has audited within it, and a gate does not judge a rollout by what the
// system was long before.
const defaultMaxAge = 2 * time.Minute

// exporterTimeout bounds one request to the exporter: serve answers a
// max_age its latest audit does not meet by waiting for the audit
// running, and then for up to two more (exporter/api.go, result), each
// bounded by serve's --timeout (at its default here), and one more for
// the answer to come.
const exporterTimeout = 4 * collect.DefaultTimeout

func addExporterFlags(cmd *kingpin.CmdClause, e *exporterFlags) {
	cmd.Flag("exporter", "Base URL of a running serve, such as http://nats-version-auditor.nats:7779: ask it for its report (GET /api/v1/report) instead of auditing NATS, "+
		"so that the gate needs no NATS credentials; the connection and audit flags are then refused").PlaceHolder("URL").StringVar(&e.url)
	cmd.Flag("max-age", "With --exporter: the oldest audit of the exporter's the gate accepts; serve audits afresh for the request when its own --audit.min-interval allows, "+
		"and an audit older than this is UNKNOWN").Default(defaultMaxAge.String()).IsSetByUser(&e.maxAgeSet).DurationVar(&e.maxAge)
}

// validate reads --exporter and --max-age.
func (e *exporterFlags) validate() error {
	u, err := url.Parse(e.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		shown := e.url
		if err == nil {
			shown = u.Redacted()
		}
		return fmt.Errorf("--exporter %q: want the base URL of a running serve, such as http://nats-version-auditor.nats:7779", shown)
	}
	if e.maxAge < 0 {
		return fmt.Errorf("--max-age %s: must not be negative", e.maxAge)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	e.base = u
	return nil
}

// shown is the exporter's URL as messages and documents show it: without
// a password.
func (e *exporterFlags) shown() string {
	return e.base.Redacted()
}

// exporterAnswer is one report an exporter answered with.
type exporterAnswer struct {
	report *findings.Report
	doc    render.Check
	// ageSeconds is the age of its audit when the exporter answered.
	ageSeconds float64
}

// answerOf is the answer r was made of, or nil when r is no exporter's.
func (e *exporterFlags) answerOf(r *findings.Report) *exporterAnswer {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last != nil && e.last.report == r {
		return e.last
	}
	return nil
}

// exporterError is an exporter's answer, or its silence, that is no report
// the gate can judge: its message names the URL and what to fix. final is
// an answer no wait mends (a URL that is no exporter's).
type exporterError struct {
	msg   string
	final bool
	err   error
}

func (e *exporterError) Error() string { return e.msg }
func (e *exporterError) Unwrap() error { return e.err }

// fetch asks the exporter for a report no older than --max-age and makes
// of it the report a local check would print. Unless floor is zero, the
// exporter's floor must be that one. It fails closed: whatever is not a
// complete, consistent and young enough report is an error.
func (e *exporterFlags) fetch(ctx context.Context, floor version.Version) (*findings.Report, error) {
	where := e.shown()
	ctx, cancel := context.WithTimeout(ctx, exporterTimeout)
	defer cancel()
	target := *e.base
	target.Path += "/api/v1/report"
	target.RawQuery = url.Values{"max_age": {e.maxAge.String()}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, &exporterError{msg: fmt.Sprintf("--exporter %s: %v", where, err), final: true, err: err}
	}
	req.Header.Set("Accept", "application/json")
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The url.Error names the request's URL again, with its query.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &exporterError{msg: fmt.Sprintf("the exporter at %s did not answer within %s: check that serve runs there and reaches NATS", where, exporterTimeout), err: err}
		}
		return nil, &exporterError{msg: fmt.Sprintf("cannot reach the exporter at %s: %v: check --exporter and that serve runs there", where, err), err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &exporterError{msg: fmt.Sprintf("the exporter at %s broke off its answer: %v", where, err), err: err}
	}
	took := time.Since(sent)
	if resp.StatusCode != http.StatusOK {
		return nil, e.refused(resp, body)
	}
	doc, err := decodeReport(body)
	if err != nil {
		return nil, &exporterError{msg: fmt.Sprintf("the exporter at %s answered 200 with no report check can judge: %v: is --exporter the base URL of a nats-version-auditor serve?", where, err),
			final: true, err: err}
	}
	// The exporter holds its audit to max_age when it receives the
	// request; the age it gives is at its answer, at most took later.
	if age := time.Duration(doc.AgeSeconds * float64(time.Second)); age-took > e.maxAge {
		return nil, &exporterError{msg: fmt.Sprintf("the exporter at %s answered with an audit that started %.1fs ago, older than --max-age %s: the gate judges no older audit",
			where, doc.AgeSeconds, e.maxAge)}
	}
	r := reportOf(doc.Check)
	if !floor.IsZero() && r.Floor != floor {
		return nil, &exporterError{msg: fmt.Sprintf("the exporter at %s holds the system to floor %s, not --floor %s: set the floor on serve (--floor or --policy.file), or drop --floor to take the exporter's",
			where, r.FloorShown(), floor), final: true}
	}
	e.mu.Lock()
	e.last = &exporterAnswer{report: r, doc: doc.Check, ageSeconds: doc.AgeSeconds}
	e.mu.Unlock()
	return r, nil
}

// refused is the error of an answer other than 200: what serve said
// (exporter.APIError), and what to do about it.
func (e *exporterFlags) refused(resp *http.Response, body []byte) error {
	where := e.shown()
	var apiErr exporter.APIError
	said := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &apiErr) == nil && apiErr.Error != "" {
		said = apiErr.Error
	} else if len(said) > maxQuoted {
		said = said[:maxQuoted] + "..."
	}
	msg := fmt.Sprintf("the exporter at %s answered %s", where, resp.Status)
	if said != "" {
		msg += ": " + said
	}
	switch code := resp.StatusCode; {
	case code == http.StatusServiceUnavailable && apiErr.Audit != nil:
		// Its latest audit is older than max_age and it could not run a
		// fresher one: its --audit.min-interval is longer than --max-age.
		return &exporterError{msg: msg + fmt.Sprintf(": give --max-age more than serve's --audit.min-interval (--max-age is %s)", e.maxAge)}
	case code == http.StatusNotFound:
		return &exporterError{msg: msg + ": is --exporter the base URL of a nats-version-auditor serve (http://host:port, without /api/v1/...)?", final: true}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return &exporterError{msg: msg + ": give the user and password its --web.config.file asks for in the URL (https://user:password@host:port)", final: true}
	case code >= 400 && code < 500:
		return &exporterError{msg: msg, final: true}
	}
	return &exporterError{msg: msg}
}

// maxQuoted is how much of an answer that is no API error a message quotes.
const maxQuoted = 200

// decodeReport reads the exporter's /api/v1/report: check's document and
// its age, every key present, its status the one its findings give.
func decodeReport(body []byte) (exporter.APIReport, error) {
	var doc exporter.APIReport
	if err := json.Unmarshal(body, &doc); err != nil {
		return doc, err
	}
	// Decoding fills what is there: a body of something else, or cut
	// short by a proxy, would be a zero report, status OK.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return doc, err
	}
	for _, k := range []string{"status", "floor", "findings", "servers", "audit", "age_seconds"} {
		if _, ok := keys[k]; !ok {
			return doc, fmt.Errorf("no %q", k)
		}
	}
	if got := findings.StatusOf(doc.Findings); doc.Status != got {
		return doc, fmt.Errorf("status %s, but its findings make it %s", doc.Status, got)
	}
	if doc.Audit.Started.IsZero() {
		return doc, errors.New("no audit.started")
	}
	return doc, nil
}

// reportOf is the report check prints of an exporter's document: what its
// text, Nagios line and progress lines read (the document's JSON is
// printed as it came).
func reportOf(doc render.Check) *findings.Report {
	// A document shows each version as reported; the report compares them
	// parsed. Its findings refer to its notes, which the text writes again.
	for i := range doc.Servers {
		doc.Servers[i].SetVersion(doc.Servers[i].Version)
	}
	r := &findings.Report{Status: doc.Status, ServersExpected: doc.Audit.ServersExpected, Findings: render.Uncited(doc.Findings, doc.Notes), Servers: doc.Servers,
		Snapshot: &snapshot.Snapshot{Started: doc.Audit.Started, Duration: time.Duration(doc.Audit.DurationSeconds * float64(time.Second)),
			Requests: doc.Audit.Requests}}
	if floor, err := version.ParseFloor(doc.Floor); err == nil {
		r.Floor = floor
	} else {
		r.FloorText = doc.Floor
	}
	return r
}
