package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/jwt/v2"

	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter/exportertest"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// leastPrivilege is what docs/permissions.md and deploy/ document as the
// smallest permissions an auditing user needs: an audit needs the publish
// permissions and the inbox (auditSubscribe); serve's event watching needs
// the rest (eventSubscribe).
var leastPrivilege = natstest.User{
	Name: "auditor", Password: "auditor-secret",
	Publish:   []string{"$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.*.LEAFZ", "$SYS.REQ.SERVER.*.JSZ"},
	Subscribe: append([]string{auditSubscribe}, eventSubscribe...),
}

const auditSubscribe = "_INBOX.>"

var eventSubscribe = []string{"$SYS.SERVER.*.STATSZ", "$SYS.SERVER.*.SHUTDOWN", "$SYS.SERVER.*.LAMEDUCK",
	"$SYS.ACCOUNT.*.CONNECT", "$SYS.ACCOUNT.*.DISCONNECT",
	"$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.>", "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.>"}

// startWithSysUsers starts three servers of version in mode whose system
// account has users besides natstest.SysUser.
func startWithSysUsers(t *testing.T, mode natstest.Mode, version string, users []natstest.User) *natstest.System {
	spec := func(name string) natstest.Spec {
		s := node(name, version)
		s.SysUsers = users
		return s
	}
	return mode.Start(t, spec("n1"), spec("n2"), spec("n3"))
}

func TestLeastPrivilege(t *testing.T) {
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			var users []natstest.User
			users = append(users, leastPrivilege)
			for _, perm := range append(slices.Clone(leastPrivilege.Publish), auditSubscribe) {
				users = append(users, without(perm))
			}
			sys := startWithSysUsers(t, mode, natstest.New, users)
			addStreamAndConsumer(t, sys.Connect("n1", natstest.AppUser, natstest.AppPassword), "ORDERS", "worker", 3)

			as := func(u natstest.User) (result, render.Check) {
				return runCheckJSON(t, append(sys.ArgsAs("n1", u.Name), "--timeout", "2s")...)
			}
			var res result
			var out render.Check
			err := natstest.Eventually(20*time.Second, func() error {
				res, out = as(leastPrivilege)
				if res.code != exitOK {
					return fmt.Errorf("exit %d:%s", res.code, codes(out.Findings))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("with exactly the documented permissions: %v", err)
			}
			if out.Audit.ServersResponded != 3 {
				t.Fatalf("with the documented permissions the audit saw %d servers", out.Audit.ServersResponded)
			}

			// Without any one of them the audit ends at once (the server
			// refuses the request with an -ERR; it used to wait out --timeout
			// for replies that cannot come) with one line naming the
			// permission to grant, and nats.go's raw error line no longer
			// reaches stderr.
			allow := []string{`allow publish to "$SYS.REQ.SERVER.PING"`, `allow publish to "$SYS.REQ.SERVER.*.LEAFZ"`,
				`allow publish to "$SYS.REQ.SERVER.*.JSZ"`, `allow subscribe to "_INBOX.>"`}
			for i, u := range users[1:] {
				t.Run(u.Name, func(t *testing.T) {
					var res result
					var out render.Check
					raw := processStderr(t, func() { res, out = as(u) })
					if res.code != exitUnknown {
						t.Fatalf("publish %v subscribe %v: exit %d, want 3:%s", u.Publish, u.Subscribe, res.code, codes(out.Findings))
					}
					if len(out.Findings) != 1 || out.Findings[0].Code != findings.AuditIncomplete || !strings.HasPrefix(out.Findings[0].Message, "permissions violation: ") ||
						!strings.Contains(out.Findings[0].Message, allow[i]) || out.Error != out.Findings[0].Message {
						t.Errorf("want one finding naming the permission (%s):%s", allow[i], codes(out.Findings))
					}
					if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], allow[i]) {
						t.Errorf("stderr %q, want one line naming the permission", res.stderr)
					}
					if raw != "" {
						t.Errorf("nats.go wrote to the process's stderr: %q", raw)
					}
					if res.elapsed >= 2*time.Second {
						t.Errorf("the audit took %s: it waited out --timeout 2s for replies the server refused", res.elapsed)
					}
				})
			}
		})
	}
}

// TestLeastPrivilegeEvents proves each event subscription needed: serve with
// exactly the documented permissions watches events; without any one of
// them it still audits on scrapes (up 1) but reports events_up 0 and logs
// which subscription is missing.
func TestLeastPrivilegeEvents(t *testing.T) {
	t.Parallel()
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			users := []natstest.User{leastPrivilege}
			for _, perm := range eventSubscribe {
				users = append(users, without(perm))
			}
			sys := startWithSysUsers(t, mode, natstest.Floor, users)
			serve := func(t *testing.T, u natstest.User) *daemon {
				return startServe(t, append(sys.ArgsAs("n1", u.Name), "--timeout", "2s", "--audit.min-interval", "1h")...)
			}
			full := serve(t, leastPrivilege)
			err := natstest.Eventually(30*time.Second, func() error {
				mfs := full.scrape(t)
				if v := value(mfs, "nats_version_auditor_up"); v != 1 {
					return fmt.Errorf("up = %v", v)
				}
				if v := value(mfs, "nats_version_auditor_events_up"); v != 1 {
					return fmt.Errorf("events_up = %v", v)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("with exactly the documented permissions: %v\n%s", err, full.stderr)
			}

			// Each serve is a client of its own on the one system: they
			// watch side by side.
			for i, perm := range eventSubscribe {
				t.Run(users[i+1].Name, func(t *testing.T) {
					t.Parallel()
					d := serve(t, users[i+1])
					d.waitEventsDenied(t, perm)
				})
			}
		})
	}
}

// TestSecretsNeverLeave logs in with each kind of credential, right and
// wrong, in plain and operator (JWT) mode, and finds none of the secrets in
// anything check or serve prints, exports or logs.
func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			testSecretsNeverLeave(t, mode)
		})
	}
}

func testSecretsNeverLeave(t *testing.T, mode natstest.Mode) {
	sys := mode.Start(t, natstest.Spec{Name: "solo", Version: natstest.New, JetStream: true})
	credsPath, credsJWT, credsSeed := throwawayCreds(t)
	const token = "tok-SECRET-7f3a9c"
	secrets := []string{natstest.SysPassword, "wrong-SECRET-pw", token, credsJWT, credsSeed}

	cases := [][]string{
		{"--user", natstest.SysUser, "--password", "wrong-SECRET-pw"},
		{"--token", token},
		{"--creds", credsPath},
	}
	if mode == natstest.Operator {
		// The creds the servers trust: their JWT and seed are secrets too.
		creds, err := os.ReadFile(sys.Creds(natstest.SysUser))
		if err != nil {
			t.Fatal(err)
		}
		token, err := jwt.ParseDecoratedJWT(creds)
		if err != nil {
			t.Fatal(err)
		}
		kp, err := jwt.ParseDecoratedUserNKey(creds)
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		secrets = append(secrets, token, string(seed))
	}
	cases = append(cases, sys.Auth(natstest.SysUser))
	leaked := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains a secret (%.6s...): %s", where, s, text)
			}
		}
	}
	for _, auth := range cases {
		for _, format := range []string{"text", "json", "nagios"} {
			res := runCmd(t, append([]string{"check", "--log.level", "debug", "--format", format, "-s", sys.URL("solo"), "--timeout", "1s"}, auth...)...)
			leaked(fmt.Sprintf("check %s %s stdout", auth[0], format), res.stdout)
			leaked(fmt.Sprintf("check %s %s stderr", auth[0], format), res.stderr)
		}
		d := startServe(t, append([]string{"--log.level", "debug", "-s", sys.URL("solo"), "--timeout", "1s", "--audit.min-interval", "0s"}, auth...)...)
		_, body := d.Get(t, "/metrics")
		leaked(fmt.Sprintf("serve %s /metrics", auth[0]), body)
		_, body = d.Get(t, "/")
		leaked(fmt.Sprintf("serve %s landing page", auth[0]), body)
		d.stop(t)
		leaked(fmt.Sprintf("serve %s logs", auth[0]), d.stderr.String())
	}
	// The password in a server URL is a secret too.
	res := runCmd(t, "check", "-s", "nats://sys:wrong-SECRET-pw@"+strings.TrimPrefix(sys.URL("solo"), "nats://"))
	leaked("check with a password in the URL", res.stdout+res.stderr)
}

func TestMetricsBehindTLSAndBasicAuth(t *testing.T) {
	t.Parallel()
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.New, JetStream: true})
	webConfig, pool := tlsWebConfig(t, "prometheus", "scrape-pass")

	addr := natstest.FreeAddr(t)
	d := &daemon{API: &exportertest.API{Base: "https://" + addr}, done: make(chan int, 1), stderr: &lockedBuffer{}}
	ctx, cancel := contextWithCancel()
	d.cancel = cancel
	go func() {
		d.done <- run(ctx, append([]string{"serve", "--web.listen-address", addr, "--web.config.file", webConfig}, sys.SysArgs("solo")...), io.Discard, d.stderr)
	}()
	t.Cleanup(func() { d.stop(t) })

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	get := func(user, pass string) (int, string, error) {
		req, _ := http.NewRequest("GET", d.Base+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	var code int
	var err error
	err = natstest.Eventually(10*time.Second, func() error {
		code, _, err = get("", "")
		return err
	})
	if err != nil {
		t.Fatalf("no TLS endpoint: %v\n%s", err, d.stderr)
	}
	if code != http.StatusUnauthorized {
		t.Errorf("without credentials: %d, want 401", code)
	}
	if code, _, _ := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("with a wrong password: %d, want 401", code)
	}
	code, body, err := get("prometheus", "scrape-pass")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "nats_version_auditor_up 1") {
		t.Errorf("with credentials: %d %v, up 1 missing from:\n%.300s", code, err, body)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("/metrics answered over plain HTTP")
		}
	}
}

func TestTLSFailureIsNamed(t *testing.T) {
	t.Parallel()
	certPath, keyPath, _ := selfSigned(t, t.TempDir())
	sys := natstest.Start(t, natstest.Spec{Name: "secure", Version: natstest.Floor, TLSCert: certPath, TLSKey: keyPath})
	url := strings.Replace(sys.URL("secure"), "nats://", "tls://", 1)
	auth := []string{"--user", natstest.SysUser, "--password", natstest.SysPassword}

	res := runCmd(t, append([]string{"check", "-s", url}, auth...)...)
	if res.code != exitUnknown || !strings.Contains(res.stderr, "TLS failure connecting to "+url) {
		t.Errorf("a server certificate nobody vouches for: exit %d, %q", res.code, res.stderr)
	}
	res = runCmd(t, append([]string{"check", "-s", url, "--tlsca", certPath}, auth...)...)
	if res.code != exitOK {
		t.Errorf("with --tlsca: exit %d, %s%s", res.code, res.stdout, res.stderr)
	}
}
