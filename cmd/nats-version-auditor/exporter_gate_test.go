package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestCheckFromExporter: `check --exporter` asks a real serve, auditing a
// real cluster mid-upgrade, for its report, and prints it as a check on
// NATS would: the same text and Nagios line, the API's JSON document, the
// same exit codes, --accept applying. It fails closed on a floor other
// than --floor and on an audit older than --max-age.
func TestCheckFromExporter(t *testing.T) {
	t.Parallel()
	sys := mixedButAtFloor(t)
	// One audit, at start: every answer below comes from it.
	d := startServe(t, append(sys.SysArgs("n1"), "--audit.min-interval", "1h", "--no-audit.events")...)
	d.waitReady(t, 10*time.Second)
	remote := func(args ...string) result {
		return runCmd(t, append([]string{"check", "--exporter", d.Base}, args...)...)
	}
	fromLine := regexp.QuoteMeta("\nfrom the exporter at "+d.Base+": its audit started ") + `\d+\.\ds before it answered\n`

	t.Run("text and nagios as on NATS", func(t *testing.T) {
		local := runCmd(t, append([]string{"check"}, sys.SysArgs("n1")...)...)
		res := remote()
		if res.code != int(findings.Warning) || local.code != res.code {
			t.Fatalf("exit %d from the exporter, %d on NATS, want 1 from both\n%s%s", res.code, local.code, res.stdout, res.stderr)
		}
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(local.stdout) + fromLine + `$`).MatchString(res.stdout) {
			t.Errorf("text from the exporter:\n%s\nwant check's on NATS:\n%s\nand where it came from", res.stdout, local.stdout)
		}
		local = runCmd(t, append([]string{"check", "--format", "nagios"}, sys.SysArgs("n1")...)...)
		res = remote("--format", "nagios")
		head := func(s string) string { h, _, _ := strings.Cut(s, " | "); return h }
		if res.code != int(findings.Warning) || head(res.stdout) != head(local.stdout) || strings.Count(res.stdout, "\n") != 1 {
			t.Errorf("nagios from the exporter: exit %d %q, want 1 and the line of check on NATS %q", res.code, res.stdout, local.stdout)
		}
	})

	t.Run("json is the API's document", func(t *testing.T) {
		code, body := d.Get(t, "/api/v1/report")
		var want map[string]any
		if err := json.Unmarshal([]byte(body), &want); code != http.StatusOK || err != nil {
			t.Fatalf("/api/v1/report %d %v: %s", code, err, body)
		}
		delete(want, "age_seconds")
		res := remote("--format", "json")
		var got map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != int(findings.Warning) {
			t.Fatalf("exit %d (%v): %s", res.code, err, res.stdout)
		}
		from, _ := got["exporter"].(map[string]any)
		delete(got, "exporter")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("check --exporter --format json:\n%s\nwant the API's report without its age:\n%s", res.stdout, body)
		}
		if age, ok := from["age_seconds"].(float64); from["url"] != d.Base || !ok || age < 0 {
			t.Errorf("exporter block %v, want url %s and age_seconds", from, d.Base)
		}
	})

	t.Run("accept", func(t *testing.T) {
		res := remote("--accept", "warning")
		if res.code != exitOK || !strings.HasPrefix(res.stdout, "WARNING: ") ||
			!strings.HasSuffix(res.stdout, "before it answered\naccepted: WARNING passes the gate under --accept warning (exit 0)\n") {
			t.Errorf("--accept warning: exit %d, want 0, printed WARNING and accepted:\n%s%s", res.code, res.stdout, res.stderr)
		}
		res = remote("--accept", "warning", "--format", "json")
		var doc gateOf
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != exitOK || doc.Status != findings.Warning || doc.Gate == nil || doc.Gate.ExitCode != exitOK {
			t.Errorf("--accept warning --format json: exit %d (%v): %s", res.code, err, res.stdout)
		}
	})

	t.Run("critical is never accepted", func(t *testing.T) {
		strict := startServe(t, append(sys.SysArgs("n1"), "--floor", "2.15.0", "--audit.min-interval", "1h", "--no-audit.events")...)
		res := runCmd(t, "check", "--exporter", strict.Base, "--accept", "warning", "--format", "nagios")
		if res.code != int(findings.Critical) || !strings.HasPrefix(res.stdout, "NATS VERSIONS CRITICAL - ") {
			t.Errorf("exit %d %q, want 2 and CRITICAL", res.code, res.stdout)
		}
	})

	t.Run("floor", func(t *testing.T) {
		if res := remote("--floor", "2.14"); res.code != int(findings.Warning) {
			t.Errorf("--floor 2.14, the exporter's: exit %d, want 1\n%s", res.code, res.stderr)
		}
		res := remote("--floor", "2.15.0")
		want := "error: the exporter at " + d.Base + " holds the system to floor 2.14.0, not --floor 2.15.0: set the floor on serve (--floor or --policy.file), or drop --floor to take the exporter's\n"
		if res.code != exitUnknown || !strings.HasSuffix(res.stderr, want) {
			t.Errorf("--floor 2.15.0: exit %d, stderr %q, want 3 and %q", res.code, res.stderr, want)
		}
	})

	t.Run("stale", func(t *testing.T) {
		// The one audit started before the request, and serve runs no
		// other within its --audit.min-interval: it answers 503.
		res := remote("--max-age", "1ms", "--format", "json")
		want := regexp.MustCompile(`^the exporter at ` + regexp.QuoteMeta(d.Base) + ` answered 503 Service Unavailable: the last audit started \d+\.\ds ago, before max_age 1ms, ` +
			`and no fresher one could run \(at most one per --audit\.min-interval\): give --max-age more than serve's --audit\.min-interval \(--max-age is 1ms\)$`)
		var doc render.Check
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != exitUnknown || doc.Status != findings.Unknown || !want.MatchString(doc.Error) {
			t.Errorf("--max-age 1ms: exit %d (%v), want 3, UNKNOWN and an error matching %s:\n%s%s", res.code, err, want, res.stdout, res.stderr)
		}
	})

	// Answers no serve gives, from a server that passes the real report on
	// changed, or answers in its place.
	code, body := d.Get(t, "/api/v1/report")
	if code != http.StatusOK {
		t.Fatalf("/api/v1/report %d: %s", code, body)
	}
	for _, tt := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"an audit older than --max-age", http.StatusOK, regexp.MustCompile(`"age_seconds":[0-9.e+-]+`).ReplaceAllString(body, `"age_seconds":600`),
			`answered with an audit that started 600.0s ago, older than --max-age 2m0s: the gate judges no older audit`},
		{"no report", http.StatusOK, `{}`, `answered 200 with no report check can judge: no "status": is --exporter the base URL of a nats-version-auditor serve?`},
		{"not JSON", http.StatusOK, `<html>hello</html>`, `answered 200 with no report check can judge: invalid character '<' looking for beginning of value`},
		{"cut short", http.StatusOK, body[:len(body)/2], `answered 200 with no report check can judge: unexpected end of JSON input`},
		{"a status its findings deny", http.StatusOK, strings.Replace(body, `"status":"WARNING"`, `"status":"OK"`, 1),
			`answered 200 with no report check can judge: status OK, but its findings make it WARNING`},
		{"not found", http.StatusNotFound, "404 page not found",
			`answered 404 Not Found: 404 page not found: is --exporter the base URL of a nats-version-auditor serve (http://host:port, without /api/v1/...)?`},
		{"basic auth", http.StatusUnauthorized, "Unauthorized",
			`answered 401 Unauthorized: Unauthorized: give the user and password its --web.config.file asks for in the URL (https://user:password@host:port)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/report" || r.URL.Query().Get("max_age") != "2m0s" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			}))
			defer fake.Close()
			// A wait does not wait out an answer no wait mends, nor
			// accepts one; an old audit may be followed by a young one.
			res := runCmd(t, "check", "--exporter", fake.URL+"/", "--wait", "1s", "--audit.min-interval", "300ms", "--accept", "warning")
			want := "error: the exporter at " + fake.URL + " " + tt.want
			if res.code != exitUnknown || !strings.Contains(res.stderr, want) {
				t.Errorf("exit %d, stderr %q, want 3 and %q", res.code, res.stderr, want)
			}
			final := tt.name != "an audit older than --max-age"
			if gaveUp := strings.Contains(res.stderr, "the wait gave up"); gaveUp == final {
				t.Errorf("the wait gave up: %v, want %v (after %s)", gaveUp, !final, res.elapsed)
			}
		})
	}

	t.Run("basic auth in the URL", func(t *testing.T) {
		const password = "s3cret-pw"
		guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "gate" || p != password {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, body)
		}))
		defer guarded.Close()
		withAuth := strings.Replace(guarded.URL, "http://", "http://gate:"+password+"@", 1)
		shown := strings.Replace(guarded.URL, "http://", "http://gate:xxxxx@", 1)
		for _, format := range []string{"text", "json"} {
			res := runCmd(t, "check", "--exporter", withAuth, "--format", format)
			if res.code != int(findings.Warning) || !strings.Contains(res.stdout, shown) || strings.Contains(res.stdout+res.stderr, password) {
				t.Errorf("%s: exit %d, want 1, the URL shown as %s and the password nowhere:\n%s%s", format, res.code, shown, res.stdout, res.stderr)
			}
		}
		res := runCmd(t, "check", "--exporter", strings.Replace(withAuth, password, "wrong-"+password, 1))
		if res.code != exitUnknown || !strings.Contains(res.stderr, "the exporter at "+shown+" answered 401 Unauthorized") || strings.Contains(res.stderr, password) {
			t.Errorf("a wrong password: exit %d, stderr %q", res.code, res.stderr)
		}
	})
}

// TestCheckFromExporterWaits: a gate with --wait polls the exporter no
// more than once per --audit.min-interval, waits while it does not answer
// (a serve restarting), and ends once its report is accepted. Unreachable
// to the end, it gives up, UNKNOWN, naming the URL.
func TestCheckFromExporterWaits(t *testing.T) {
	t.Parallel()
	res := runCmd(t, "check", "--exporter", "http://"+natstest.FreeAddr(t), "--wait", "1s", "--audit.min-interval", "200ms")
	unreachable := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d UNKNOWN cannot reach the exporter at http://127\.0\.0\.1:\d+: dial tcp 127\.0\.0\.1:\d+: connect: connection refused: ` +
		`check --exporter and that serve runs there; still waiting$`)
	if res.code != exitUnknown || !unreachable.MatchString(res.stderr) ||
		!regexp.MustCompile(`error: cannot reach the exporter at .*; the wait gave up after 1(\.\d)?s of --wait 1s`).MatchString(res.stderr) {
		t.Errorf("unreachable: exit %d, want 3, a progress line matching %s and the gave-up error:\n%s", res.code, unreachable, res.stderr)
	}

	sys := mixedButAtFloor(t)
	d := startServe(t, sys.SysArgs("n1")...)
	backend, err := url.Parse(d.Base)
	if err != nil {
		t.Fatal(err)
	}
	// A proxy in front of serve: down (502) until up is set, and the time
	// of every request.
	var (
		mu    sync.Mutex
		up    bool
		times []time.Time
	)
	proxy := httputil.NewSingleHostReverseProxy(backend)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		ok := up
		mu.Unlock()
		if !ok {
			http.Error(w, "no endpoints available", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	b := startCheck(t, "--exporter", front.URL, "--wait", "1m", "--audit.min-interval", "200ms", "--accept", "warning")
	b.waitFor(t, 20*time.Second, `(?m)^\d\d:\d\d:\d\d UNKNOWN the exporter at `+regexp.QuoteMeta(front.URL)+` answered 502 Bad Gateway: no endpoints available; still waiting$`)
	if err := natstest.Eventually(20*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(times) < 3 {
			return fmt.Errorf("%d requests", len(times))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	up = true
	mu.Unlock()
	if code := b.exit(t, 20*time.Second); code != exitOK {
		t.Fatalf("exit %d once the exporter answered WARNING under --accept warning, want 0\n%s", code, b.stderr)
	}
	if !strings.HasPrefix(b.stdout.String(), "WARNING: 3 of 3 expected servers answered") {
		t.Errorf("stdout is not the exporter's report:\n%s", b.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(times); i++ {
		// The wait starts each request at least --audit.min-interval after
		// the one before; a little less may pass between their arrivals.
		if gap := times[i].Sub(times[i-1]); gap < 150*time.Millisecond {
			t.Errorf("request %d came %s after the one before, with --audit.min-interval 200ms", i, gap)
		}
	}
}

// TestCheckExporterRefusesNATSFlags: --exporter with a flag of the audit
// on NATS is refused (exit 3), naming it, and so are what an exporter's
// report cannot answer, a bad URL, and --max-age without --exporter. Each
// still prints its one document. It sets the environment, so it is not
// parallel.
func TestCheckExporterRefusesNATSFlags(t *testing.T) {
	const url = "http://127.0.0.1:1"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--exporter", url, "--server", "nats://nats:4222", "--creds", "sys.creds"},
			"--exporter asks a running serve, which audits NATS with its own connection and flags: --creds, --server would not be used; drop them, or drop --exporter to audit NATS directly"},
		{[]string{"--exporter", url, "-s", "nats://nats:4222"}, "--server would not be used; drop it,"},
		{[]string{"--exporter", url, "--context", "sys"}, "--context would not be used; drop it,"},
		{[]string{"--exporter", url, "--timeout", "3s", "--expect", "3"}, "--expect, --timeout would not be used; drop them,"},
		{[]string{"--exporter", url, "--audit.compress"}, "--audit.compress would not be used"},
		{[]string{"--exporter", url, "--stream", "ORDERS"},
			"--stream cannot narrow an exporter's report, which does not list the assets its audit saw (a pattern that matches nothing would pass): drop it, or drop --exporter to audit NATS narrowed"},
		{[]string{"--exporter", url, "--assume", "n1=2.14.0"}, "--assume needs the audit's snapshot, which an exporter's report does not carry"},
		{[]string{"--exporter", url, "--unpulled-after", "1m"}, "--unpulled-after is the exporter's to set"},
		{[]string{"--exporter", "nats-version-auditor.nats:7779"}, `--exporter "nats-version-auditor.nats:7779": want the base URL of a running serve, such as http://nats-version-auditor.nats:7779`},
		{[]string{"--exporter", url + "/api/v1/report?max_age=1m"}, `want the base URL of a running serve`},
		{[]string{"--exporter", url, "--max-age=-1s"}, "--max-age -1s: must not be negative"},
		{[]string{"--max-age", "1m", "-s", url}, "--max-age bounds the age of an exporter's audit: it needs --exporter"},
	} {
		res := runCmd(t, append([]string{"check", "--format", "nagios"}, tt.args...)...)
		if res.code != exitUnknown || !strings.Contains(res.stderr, tt.want) || !strings.HasPrefix(res.stdout, "NATS VERSIONS UNKNOWN - ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want 3, the UNKNOWN line and %q", tt.args, res.code, res.stdout, res.stderr, tt.want)
		}
	}
	// The environment is not the command line: a pod's NATS_URL does not
	// stop a gate that asks the exporter.
	t.Setenv("NATS_URL", "nats://nats:4222")
	res := runCmd(t, "check", "--exporter", url)
	if res.code != exitUnknown || !strings.Contains(res.stderr, "cannot reach the exporter at "+url) {
		t.Errorf("with NATS_URL set: exit %d, stderr %q, want the exporter asked", res.code, res.stderr)
	}
}
