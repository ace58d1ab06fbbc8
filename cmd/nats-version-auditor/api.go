package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// api is serve's read-only JSON API. It answers from the scheduler's audits,
// so its requests share them with scrapes: however many arrive, the servers
// see at most one audit per --audit.min-interval.
type api struct {
	sched *auditor.Scheduler
	log   *slog.Logger

	mu      sync.Mutex // serialises index builds
	indexed atomic.Pointer[indexedReport]
}

type indexedReport struct {
	report *auditor.Report
	index  *auditor.Index
	// complete is the report's completeness, which takes a pass over its
	// findings: once per audit, not once per lookup.
	complete bool
}

// registerAPI adds the API's endpoints to mux.
func registerAPI(mux *http.ServeMux, sched *auditor.Scheduler, logger *slog.Logger) {
	a := &api{sched: sched, log: logger}
	mux.HandleFunc("GET /api/v1/report", a.report)
	mux.HandleFunc("GET /api/v1/consumers/{account}/{stream}/{consumer}", a.consumer)
}

// reportAPIOutput is `check --format json`'s document plus its age.
type reportAPIOutput struct {
	checkOutput
	AgeSeconds float64 `json:"age_seconds"`
}

// apiAudit says which audit an answer comes from.
type apiAudit struct {
	Started    time.Time `json:"started"`
	AgeSeconds float64   `json:"age_seconds"`
	// Complete is false when some request of the audit failed or some
	// expected server did not answer.
	Complete bool `json:"complete"`
}

// consumerOutput is the answer of /api/v1/consumers/{account}/{stream}/{consumer}.
type consumerOutput struct {
	Domain        string               `json:"domain"`
	Account       string               `json:"account"`
	AccountName   string               `json:"account_name,omitempty"`
	Stream        string               `json:"stream"`
	Consumer      string               `json:"consumer"`
	Reset         auditor.ResetVerdict `json:"reset"`
	Reason        string               `json:"reason"`
	Leader        string               `json:"leader"`
	Replicas      int                  `json:"replicas"`
	RequiredLevel int                  `json:"required_level"`
	Peers         []auditor.Peer       `json:"peers"`
	// ResetBy are the mirrors and sources that RESET it by themselves.
	ResetBy []string `json:"reset_by,omitempty"`
	// Crashes are the servers that cannot decode it and crash on it.
	Crashes []auditor.Crash `json:"crashes,omitempty"`
	Audit   apiAudit        `json:"audit"`
}

// apiError is the body of every answer but 200.
type apiError struct {
	Error string `json:"error"`
	// Reset is "unknown" on every error of the consumer endpoint.
	Reset   auditor.ResetVerdict `json:"reset,omitempty"`
	Domains []string             `json:"domains,omitempty"`
	// Accounts are the ids of the accounts an ambiguous account name names.
	Accounts []string  `json:"accounts,omitempty"`
	Audit    *apiAudit `json:"audit,omitempty"`
}

func (a *api) report(w http.ResponseWriter, r *http.Request) {
	maxAge, bounded, err := maxAgeOf(r)
	if err != nil {
		a.write(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	res, fresh := a.result(r.Context(), maxAge, bounded)
	if res.Report == nil {
		a.write(w, http.StatusServiceUnavailable, apiError{Error: "no audit has finished yet"})
		return
	}
	info := auditOf(res.Report, complete(res.Report))
	if !fresh {
		a.write(w, http.StatusServiceUnavailable, apiError{Error: staleMessage(info, maxAge), Audit: &info})
		return
	}
	a.write(w, http.StatusOK, reportAPIOutput{checkOutput: checkJSON(res.Report), AgeSeconds: info.AgeSeconds})
}

func (a *api) consumer(w http.ResponseWriter, r *http.Request) {
	key := auditor.ConsumerKey{Account: r.PathValue("account"), Stream: r.PathValue("stream"), Consumer: r.PathValue("consumer")}
	maxAge, bounded, err := maxAgeOf(r)
	if err != nil {
		a.write(w, http.StatusBadRequest, apiError{Error: err.Error(), Reset: auditor.ResetUnknown})
		return
	}
	res, fresh := a.result(r.Context(), maxAge, bounded)
	if res.Report == nil {
		a.write(w, http.StatusServiceUnavailable, apiError{Error: "no audit has finished yet", Reset: auditor.ResetUnknown})
		return
	}
	ir := a.index(res.Report)
	idx, info := ir.index, auditOf(res.Report, ir.complete)
	if len(res.Report.Snapshot.Servers) == 0 {
		a.write(w, http.StatusServiceUnavailable, apiError{Error: "the last audit reached no server: " + firstProblem(res.Report),
			Reset: auditor.ResetUnknown, Audit: &info})
		return
	}
	name := key.Account + " > " + key.Stream + " > " + key.Consumer
	// The account is asked for by id or by name; a name two accounts share
	// (operator mode) must not answer for either.
	switch ids := idx.Accounts(key.Account); len(ids) {
	case 0:
	case 1:
		key.Account = ids[0]
	default:
		a.write(w, http.StatusConflict, apiError{Error: fmt.Sprintf("account name %q names %d accounts (%s): ask by public key",
			key.Account, len(ids), strings.Join(ids, ", ")), Reset: auditor.ResetUnknown, Accounts: ids, Audit: &info})
		return
	}
	if q := r.URL.Query(); q.Has("domain") {
		key.Domain = q.Get("domain")
	} else {
		switch domains := idx.Domains(key.Account, key.Stream, key.Consumer); len(domains) {
		case 0:
		case 1:
			key.Domain = domains[0]
		default:
			a.write(w, http.StatusConflict, apiError{Error: fmt.Sprintf("consumer %s exists in %d JetStream domains: name one with ?domain=", name, len(domains)),
				Reset: auditor.ResetUnknown, Domains: domains, Audit: &info})
			return
		}
	}
	v, found := idx.Consumer(key)
	if !found {
		msg := fmt.Sprintf("consumer %s was not seen in the last audit", name)
		if key.Domain != "" {
			msg = fmt.Sprintf("consumer %s was not seen in JetStream domain %q in the last audit", name, key.Domain)
		}
		if !info.Complete {
			msg += " (which was incomplete: it may be on a server that did not answer)"
		}
		a.write(w, http.StatusNotFound, apiError{Error: msg, Reset: auditor.ResetUnknown, Audit: &info})
		return
	}
	if !fresh {
		v.Reset, v.Reason = auditor.ResetUnknown, staleMessage(info, maxAge)
	}
	a.write(w, http.StatusOK, consumerOutput{Domain: v.Domain, Account: v.Account, AccountName: v.AccountName, Stream: v.Stream, Consumer: v.Consumer,
		Reset: v.Reset, Reason: v.Reason, Leader: v.Leader, Replicas: v.Replicas, RequiredLevel: v.RequiredLevel,
		Peers: nonNil(v.Peers), ResetBy: v.ResetBy, Crashes: v.Crashes, Audit: info})
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
func (a *api) result(ctx context.Context, maxAge time.Duration, bounded bool) (auditor.Result, bool) {
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
		res = a.sched.Get(ctx)
	}
	return res, fresh()
}

// index returns the report's consumer index, built once per report.
func (a *api) index(r *auditor.Report) *indexedReport {
	if ir := a.indexed.Load(); ir != nil && ir.report == r {
		return ir
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ir := a.indexed.Load(); ir != nil && ir.report == r {
		return ir
	}
	start := time.Now()
	ir := &indexedReport{report: r, index: auditor.NewIndex(r.Snapshot), complete: complete(r)}
	a.indexed.Store(ir)
	a.log.Debug("audit indexed", "consumers", len(r.Snapshot.Consumers), "duration", time.Since(start))
	return ir
}

func complete(r *auditor.Report) bool {
	return r.Complete() && len(r.Snapshot.Problems) == 0
}

func auditOf(r *auditor.Report, complete bool) apiAudit {
	return apiAudit{Started: r.Snapshot.Started.UTC(), AgeSeconds: time.Since(r.Snapshot.Started).Seconds(), Complete: complete}
}

func staleMessage(info apiAudit, maxAge time.Duration) string {
	return fmt.Sprintf("the last audit started %.1fs ago, before max_age %s, and no fresher one could run (at most one per --audit.min-interval)",
		info.AgeSeconds, maxAge)
}

func firstProblem(r *auditor.Report) string {
	for _, f := range r.Findings {
		if f.Code == auditor.AuditIncomplete {
			return f.Message
		}
	}
	return "no server answered"
}

func (a *api) write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := writeJSON(w, v); err != nil {
		a.log.Debug("API response not written", "err", err)
	}
}
