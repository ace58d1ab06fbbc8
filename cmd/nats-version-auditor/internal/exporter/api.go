package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
)

// api is serve's read-only JSON API. It answers from the scheduler's audits,
// so its requests share them with scrapes: however many arrive, the servers
// see at most one audit per --audit.min-interval.
type api struct {
	sched *Scheduler
	log   *slog.Logger

	mu      sync.Mutex // serialises index builds
	indexed atomic.Pointer[indexedReport]
}

type indexedReport struct {
	report *findings.Report
	index  *auditor.Index
	// complete is the report's completeness, which takes a pass over its
	// findings: once per audit, not once per lookup.
	complete bool
	// findings are the report's findings about each consumer.
	findings map[auditor.ConsumerKey][]findings.Finding
}

// consumerFindings indexes the findings about consumers by the consumer
// they name. A finding names no domain: it is the domain of the server it
// names, and one whose server the audit did not see (or names none) is
// filed under no domain, which every domain's lookup reads too.
func consumerFindings(r *findings.Report) map[auditor.ConsumerKey][]findings.Finding {
	domainOf := map[string]string{}
	for _, s := range r.Servers {
		domainOf[s.Name] = s.Domain
	}
	out := map[auditor.ConsumerKey][]findings.Finding{}
	for _, f := range r.Findings {
		if f.Consumer != "" {
			k := auditor.ConsumerKey{Domain: domainOf[f.Server], Account: f.Account, Stream: f.Stream, Consumer: f.Consumer}
			out[k] = append(out[k], f)
		}
	}
	return out
}

// findingsOf are the findings about the consumer k names.
func (ir *indexedReport) findingsOf(k auditor.ConsumerKey) []findings.Finding {
	out := ir.findings[k]
	if k.Domain != "" {
		k.Domain = ""
		out = append(slices.Clip(out), ir.findings[k]...)
	}
	return out
}

// registerAPI adds the API's endpoints to mux.
func registerAPI(mux *http.ServeMux, sched *Scheduler, logger *slog.Logger) {
	a := &api{sched: sched, log: logger}
	mux.HandleFunc("GET /api/v1/report", a.report)
	mux.HandleFunc("GET /api/v1/consumers/{account}/{stream}/{consumer}", a.consumer)
	mux.HandleFunc("GET /api/v1/consumers/{account}/{stream}", a.stream)
	mux.HandleFunc("POST /api/v1/consumers", a.consumers)
}

// APIReport is the answer of /api/v1/report: `check --format json`'s
// document plus its age.
type APIReport struct {
	render.Check
	AgeSeconds float64 `json:"age_seconds"`
}

// apiAudit says which audit an answer comes from.
type apiAudit struct {
	Started    time.Time `json:"started"`
	AgeSeconds float64   `json:"age_seconds"`
	// LeadersHeard is when the answer last took in leader changes the
	// servers announced after the audit started (their LEADER_ELECTED
	// advisories); absent when it rests on the audit alone.
	LeadersHeard *time.Time `json:"leaders_heard,omitempty"`
	// Checked is when a check last found every server's JetStream counts
	// as the audit counted them (--audit.full-interval); absent when none
	// has since the audit.
	Checked *time.Time `json:"checked,omitempty"`
	// Complete is false when some request of the audit failed or some
	// expected server did not answer.
	Complete bool `json:"complete"`
}

// APIConsumer is the answer of /api/v1/consumers/{account}/{stream}/{consumer}.
type APIConsumer struct {
	consumerVerdict
	Audit apiAudit `json:"audit"`
}

// consumerVerdict is what every answer says of one consumer.
type consumerVerdict struct {
	Domain        string                `json:"domain"`
	Account       string                `json:"account"`
	AccountName   string                `json:"account_name,omitempty"`
	Stream        string                `json:"stream"`
	Consumer      string                `json:"consumer"`
	Reset         findings.ResetVerdict `json:"reset"`
	Reason        string                `json:"reason"`
	Leader        string                `json:"leader"`
	Replicas      int                   `json:"replicas"`
	RequiredLevel int                   `json:"required_level"`
	Peers         []auditor.Peer        `json:"peers"`
	// ResetBy are the mirrors and sources that RESET it by themselves.
	ResetBy []string `json:"reset_by,omitempty"`
	// Crashes are the servers that cannot decode it and crash on it.
	Crashes []auditor.Crash `json:"crashes,omitempty"`
	// Pull is who pulls a consumer with a priority policy.
	Pull *render.Pull `json:"pull,omitempty"`
	// Findings are the last audit's findings about the consumer, as
	// check lists them (CONSUMER_PULLED_BY_NOBODY among them).
	Findings []findings.Finding `json:"findings,omitempty"`
}

func verdictOf(v auditor.ConsumerView) consumerVerdict {
	return consumerVerdict{Domain: v.Domain, Account: v.Account, AccountName: v.AccountName, Stream: v.Stream, Consumer: v.Consumer,
		Reset: v.Reset, Reason: v.Reason, Leader: v.Leader, Replicas: v.Replicas, RequiredLevel: v.RequiredLevel,
		Peers: render.NonNil(v.Peers), ResetBy: v.ResetBy, Crashes: v.Crashes, Pull: render.PullOf(v.Pull)}
}

// APIBatch is the answer about many consumers: GET
// /api/v1/consumers/{account}/{stream} (every consumer of the stream) and
// POST /api/v1/consumers (a list).
type APIBatch struct {
	Consumers []batchEntry `json:"consumers"`
	Audit     apiAudit     `json:"audit"`
}

// batchEntry is one consumer of a batch: what the one-consumer endpoint
// would answer about it, its status code included.
type batchEntry struct {
	consumerVerdict
	Status   int      `json:"status"`
	Error    string   `json:"error,omitempty"`
	Domains  []string `json:"domains,omitempty"`
	Accounts []string `json:"accounts,omitempty"`
}

// batchRequest is the body of POST /api/v1/consumers.
type batchRequest struct {
	Consumers []struct {
		Account  string `json:"account"`
		Stream   string `json:"stream"`
		Consumer string `json:"consumer"`
	} `json:"consumers"`
}

// Bounds of POST /api/v1/consumers: the most consumers one request may
// name, and the bytes that many take with room to spare.
const (
	maxBatchConsumers = 10_000
	maxBatchBytes     = 2 << 20
)

// APIError is the body of every answer of the API but 200.
type APIError struct {
	Error string `json:"error"`
	// Reset is "unknown" on every error of the consumer endpoint.
	Reset   findings.ResetVerdict `json:"reset,omitempty"`
	Domains []string              `json:"domains,omitempty"`
	// Accounts are the ids of the accounts an ambiguous account name names.
	Accounts []string  `json:"accounts,omitempty"`
	Audit    *apiAudit `json:"audit,omitempty"`
}

func (a *api) report(w http.ResponseWriter, r *http.Request) {
	maxAge, bounded, err := maxAgeOf(r)
	if err != nil {
		a.write(w, http.StatusBadRequest, APIError{Error: err.Error()})
		return
	}
	res, fresh := a.result(r.Context(), maxAge, bounded)
	if res.Report == nil {
		a.write(w, http.StatusServiceUnavailable, APIError{Error: "no audit has finished yet"})
		return
	}
	info := auditOf(res, complete(res.Report))
	if !fresh {
		a.write(w, http.StatusServiceUnavailable, APIError{Error: staleMessage(info, maxAge), Audit: &info})
		return
	}
	a.write(w, http.StatusOK, APIReport{Check: render.CheckOf(res.Report, nil), AgeSeconds: info.AgeSeconds})
}

func (a *api) consumer(w http.ResponseWriter, r *http.Request) {
	key := auditor.ConsumerKey{Account: r.PathValue("account"), Stream: r.PathValue("stream"), Consumer: r.PathValue("consumer")}
	l, ok := a.latest(w, r)
	if !ok {
		return
	}
	domain, domainGiven := domainOf(r)
	e := l.lookup(key, domain, domainGiven)
	if e.Status != http.StatusOK {
		a.write(w, e.Status, APIError{Error: e.Error, Reset: findings.ResetUnknown, Domains: e.Domains, Accounts: e.Accounts, Audit: &l.info})
		return
	}
	a.write(w, http.StatusOK, APIConsumer{consumerVerdict: e.consumerVerdict, Audit: l.info})
}

// stream answers about every consumer of one stream the last audit saw.
func (a *api) stream(w http.ResponseWriter, r *http.Request) {
	account, stream := r.PathValue("account"), r.PathValue("stream")
	l, ok := a.latest(w, r)
	if !ok {
		return
	}
	name := account + " > " + stream
	// The account is asked for by id or by name; a name two accounts share
	// (operator mode) must not answer for either.
	switch ids := l.ir.index.Accounts(account); len(ids) {
	case 0:
	case 1:
		account = ids[0]
	default:
		a.write(w, http.StatusConflict, APIError{Error: ambiguousAccount(account, ids), Reset: findings.ResetUnknown, Accounts: ids, Audit: &l.info})
		return
	}
	key := auditor.StreamKey{Account: account, Stream: stream}
	if domain, given := domainOf(r); given {
		key.Domain = domain
	} else {
		switch domains := l.ir.index.StreamDomains(account, stream); len(domains) {
		case 0:
		case 1:
			key.Domain = domains[0]
		default:
			a.write(w, http.StatusConflict, APIError{Error: fmt.Sprintf("stream %s exists in %d JetStream domains: name one with ?domain=", name, len(domains)),
				Reset: findings.ResetUnknown, Domains: domains, Audit: &l.info})
			return
		}
	}
	views := l.ir.index.StreamConsumers(key)
	if len(views) == 0 {
		msg := fmt.Sprintf("no consumer of stream %s was seen in the last audit", name)
		if key.Domain != "" {
			msg = fmt.Sprintf("no consumer of stream %s was seen in JetStream domain %q in the last audit", name, key.Domain)
		}
		a.write(w, http.StatusNotFound, APIError{Error: msg + l.incomplete(), Reset: findings.ResetUnknown, Audit: &l.info})
		return
	}
	out := APIBatch{Consumers: make([]batchEntry, len(views)), Audit: l.info}
	for i, v := range views {
		out.Consumers[i] = l.entry(v)
	}
	a.write(w, http.StatusOK, out)
}

// consumers answers about a list of consumers, each as the one-consumer
// endpoint would; ?domain= and ?max_age= apply to all of them.
func (a *api) consumers(w http.ResponseWriter, r *http.Request) {
	var req batchRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBatchBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		a.write(w, http.StatusBadRequest, APIError{Error: `want {"consumers": [{"account": ..., "stream": ..., "consumer": ...}, ...]}: ` + err.Error(), Reset: findings.ResetUnknown})
		return
	}
	if n := len(req.Consumers); n == 0 || n > maxBatchConsumers {
		a.write(w, http.StatusBadRequest, APIError{Error: fmt.Sprintf("%d consumers asked for: want 1 to %d", n, maxBatchConsumers), Reset: findings.ResetUnknown})
		return
	}
	for i, c := range req.Consumers {
		if c.Account == "" || c.Stream == "" || c.Consumer == "" {
			a.write(w, http.StatusBadRequest, APIError{Error: fmt.Sprintf("consumers[%d]: account, stream and consumer must all be named", i), Reset: findings.ResetUnknown})
			return
		}
	}
	l, ok := a.latest(w, r)
	if !ok {
		return
	}
	domain, domainGiven := domainOf(r)
	out := APIBatch{Consumers: make([]batchEntry, len(req.Consumers)), Audit: l.info}
	for i, c := range req.Consumers {
		out.Consumers[i] = l.lookup(auditor.ConsumerKey{Account: c.Account, Stream: c.Stream, Consumer: c.Consumer}, domain, domainGiven)
	}
	a.write(w, http.StatusOK, out)
}

// latestAudit is the audit a request is answered from.
type latestAudit struct {
	ir     *indexedReport
	info   apiAudit
	fresh  bool
	maxAge time.Duration
}

// latest returns the audit to answer r from, or writes the error that
// there is none (and returns false): a bad ?max_age=, no audit yet, or an
// audit that reached no server.
func (a *api) latest(w http.ResponseWriter, r *http.Request) (latestAudit, bool) {
	maxAge, bounded, err := maxAgeOf(r)
	if err != nil {
		a.write(w, http.StatusBadRequest, APIError{Error: err.Error(), Reset: findings.ResetUnknown})
		return latestAudit{}, false
	}
	res, fresh := a.result(r.Context(), maxAge, bounded)
	if res.Report == nil {
		a.write(w, http.StatusServiceUnavailable, APIError{Error: "no audit has finished yet", Reset: findings.ResetUnknown})
		return latestAudit{}, false
	}
	ir := a.index(res.Report)
	l := latestAudit{ir: ir, info: auditOf(res, ir.complete), fresh: fresh, maxAge: maxAge}
	if len(res.Report.Snapshot.Servers) == 0 {
		a.write(w, http.StatusServiceUnavailable, APIError{Error: "the last audit reached no server: " + firstProblem(res.Report),
			Reset: findings.ResetUnknown, Audit: &l.info})
		return latestAudit{}, false
	}
	return l, true
}

// domainOf reads ?domain=; given is false without one.
func domainOf(r *http.Request) (domain string, given bool) {
	q := r.URL.Query()
	return q.Get("domain"), q.Has("domain")
}

// lookup answers about one consumer as the one-consumer endpoint does: 200
// with its verdict, 409 when it exists in several domains and none was
// named, 404 when the audit did not see it.
func (l latestAudit) lookup(key auditor.ConsumerKey, domain string, domainGiven bool) batchEntry {
	name := key.Account + " > " + key.Stream + " > " + key.Consumer
	unknown := consumerVerdict{Domain: domain, Account: key.Account, Stream: key.Stream, Consumer: key.Consumer,
		Reset: findings.ResetUnknown, Peers: []auditor.Peer{}}
	// The account is asked for by id or by name; a name two accounts share
	// (operator mode) must not answer for either.
	switch ids := l.ir.index.Accounts(key.Account); len(ids) {
	case 0:
	case 1:
		key.Account = ids[0]
	default:
		msg := ambiguousAccount(key.Account, ids)
		unknown.Reason = msg
		return batchEntry{consumerVerdict: unknown, Status: http.StatusConflict, Error: msg, Accounts: ids}
	}
	if domainGiven {
		key.Domain = domain
	} else {
		switch domains := l.ir.index.Domains(key.Account, key.Stream, key.Consumer); len(domains) {
		case 0:
		case 1:
			key.Domain = domains[0]
		default:
			msg := fmt.Sprintf("consumer %s exists in %d JetStream domains: name one with ?domain=", name, len(domains))
			unknown.Reason = msg
			return batchEntry{consumerVerdict: unknown, Status: http.StatusConflict, Error: msg, Domains: domains}
		}
	}
	v, found := l.ir.index.Consumer(key)
	if !found {
		msg := fmt.Sprintf("consumer %s was not seen in the last audit", name)
		if key.Domain != "" {
			msg = fmt.Sprintf("consumer %s was not seen in JetStream domain %q in the last audit", name, key.Domain)
		}
		msg += l.incomplete()
		unknown.Domain, unknown.Reason = key.Domain, msg
		return batchEntry{consumerVerdict: unknown, Status: http.StatusNotFound, Error: msg}
	}
	return l.entry(v)
}

// entry is a consumer the audit saw, held to the request's max_age.
func (l latestAudit) entry(v auditor.ConsumerView) batchEntry {
	if !l.fresh {
		v.Reset, v.Reason = findings.ResetUnknown, staleMessage(l.info, l.maxAge)
	}
	cv := verdictOf(v)
	cv.Findings = l.ir.findingsOf(v.ConsumerKey)
	return batchEntry{consumerVerdict: cv, Status: http.StatusOK}
}

func ambiguousAccount(name string, ids []string) string {
	return fmt.Sprintf("account name %q names %d accounts (%s): ask by public key", name, len(ids), strings.Join(ids, ", "))
}

// incomplete is what a "not seen" adds when the audit was incomplete.
func (l latestAudit) incomplete() string {
	if l.info.Complete {
		return ""
	}
	return " (which was incomplete: it may be on a server that did not answer)"
}

// maxAgeOf reads ?max_age=; bounded is false without one.
func maxAgeOf(r *http.Request) (maxAge time.Duration, bounded bool, err error) {
	q := r.URL.Query()
	if !q.Has("max_age") {
		return 0, false, nil
	}
	d, err := time.ParseDuration(q.Get("max_age"))
	if err != nil || d < 0 {
		return 0, false, fmt.Errorf("max_age %q: want a duration such as 30s", q.Get("max_age"))
	}
	return d, true, nil
}

// result returns the latest audit and whether it meets the bound: without
// one, any audit; with one, an audit that started no earlier than maxAge
// before the request. A result too old waits for a fresh audit through the
// scheduler, which starts one only when --audit.min-interval has passed
// since the last; one that joined an audit already running but started too
// early asks once more.
func (a *api) result(ctx context.Context, maxAge time.Duration, bounded bool) (findings.Result, bool) {
	asked := time.Now()
	oldest := asked.Add(-maxAge)
	res := a.sched.Latest()
	if res.Report == nil {
		res = a.sched.Get(ctx)
	}
	if !bounded {
		return res, res.Report != nil
	}
	fresh := func() bool { return res.Report != nil && !res.Report.Snapshot.Started.Before(oldest) }
	for i := 0; i < 2 && !fresh() && ctx.Err() == nil; i++ {
		res = a.sched.GetFull(ctx)
	}
	return res, fresh()
}

// index returns the report's consumer index, built once per report.
func (a *api) index(r *findings.Report) *indexedReport {
	if ir := a.indexed.Load(); ir != nil && ir.report == r {
		return ir
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ir := a.indexed.Load(); ir != nil && ir.report == r {
		return ir
	}
	start := time.Now()
	ir := &indexedReport{report: r, index: auditor.NewIndex(r.Snapshot), complete: complete(r), findings: consumerFindings(r)}
	a.indexed.Store(ir)
	a.log.Debug("audit indexed", "consumers", len(r.Snapshot.Consumers), "duration", time.Since(start))
	return ir
}

func complete(r *findings.Report) bool {
	return r.Complete() && len(r.Snapshot.Problems) == 0
}

func auditOf(res findings.Result, complete bool) apiAudit {
	r := res.Report
	info := apiAudit{Started: r.Snapshot.Started.UTC(), AgeSeconds: time.Since(r.Snapshot.Started).Seconds(), Complete: complete}
	if !res.Amended.IsZero() {
		t := res.Amended.UTC()
		info.LeadersHeard = &t
	}
	if t := res.LastCheck(); !t.IsZero() {
		t = t.UTC()
		info.Checked = &t
	}
	return info
}

func staleMessage(info apiAudit, maxAge time.Duration) string {
	return fmt.Sprintf("the last audit started %.1fs ago, before max_age %s, and no fresher one could run (at most one per --audit.min-interval)",
		info.AgeSeconds, maxAge)
}

func firstProblem(r *findings.Report) string {
	for _, f := range r.Findings {
		if f.Code == findings.AuditIncomplete {
			return f.Message
		}
	}
	return "no server answered"
}

func (a *api) write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := render.WriteJSON(w, v); err != nil {
		a.log.Debug("API response not written", "err", err)
	}
}
