package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestNotSystemAccountNamesTheUser: a user outside the system account is
// told so in one clause naming the user as it was given (name, creds file,
// server URL) and the natscli context it came from.
func TestNotSystemAccountNamesTheUser(t *testing.T) {
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.Floor})
	op := natstest.StartOperator(t, natstest.OperatorConfig{}, natstest.Spec{Name: "op", Version: natstest.Floor})
	url := sys.URL("solo")
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("NATS_CONTEXT", "")
	ctx, err := json.Marshal(map[string]string{"url": url, "user": natstest.AppUser, "password": natstest.AppPassword})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg, "nats", "context"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "nats", "context", "apps.json"), ctx, 0o600); err != nil {
		t.Fatal(err)
	}
	creds := op.Creds(natstest.AppUser)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-s", url, "--user", natstest.AppUser, "--password", natstest.AppPassword}, `user "app" is not in the system account`},
		{[]string{"--context", "apps"}, `user "app" (context "apps") is not in the system account`},
		{[]string{"-s", strings.Replace(url, "nats://", "nats://app:"+natstest.AppPassword+"@", 1)}, `user "app" of the server URL is not in the system account`},
		{[]string{"-s", op.URL("op"), "--creds", creds}, "the user of creds file " + creds + " is not in the system account"},
	} {
		for _, cmd := range []string{"check", "report"} {
			res := runCmd(t, append([]string{cmd}, tt.args...)...)
			if want := appName + ": error: " + tt.want + "\n"; res.code != exitUnknown || res.stderr != want {
				t.Errorf("%s %q: exit %d, stderr %q; want 3 and %q", cmd, tt.args, res.code, res.stderr, want)
			}
		}
	}
}

// TestBadCredsFileIsNamed: a creds file that cannot log in is named with
// what is wrong with it, before any connection is tried (the server here
// does not exist), and no wait is spent on it.
func TestBadCredsFileIsNamed(t *testing.T) {
	account, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	user := func() (token string, seed []byte, pub string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ = kp.PublicKey()
		seed, _ = kp.Seed()
		token, err = jwt.NewUserClaims(pub).Encode(account)
		if err != nil {
			t.Fatal(err)
		}
		return token, seed, pub
	}
	format := func(token string, seed []byte) string {
		b, err := jwt.FormatUserConfig(token, seed)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	token, seed, _ := user()
	otherToken, _, otherPub := user()
	good := format(token, seed)
	jwtOnly, seedOnly, _ := strings.Cut(good, "************************* IMPORTANT")
	seedOnly = "************************* IMPORTANT" + seedOnly
	accountSeed, _ := account.Seed()
	kp, _ := nkeys.FromSeed(seed)
	pub, _ := kp.PublicKey()
	dir := t.TempDir()
	for _, tt := range []struct {
		name, body, want string
	}{
		{"empty", "", "holds no nkey seed (want the USER NKEY SEED block nsc writes after the JWT)"},
		{"the JWT alone", jwtOnly, "holds no nkey seed (want the USER NKEY SEED block nsc writes after the JWT)"},
		{"the seed alone", seedOnly, "holds no user JWT (want the NATS USER JWT block nsc writes before the seed)"},
		{"a broken seed", strings.Replace(good, string(seed), string(seed[:len(seed)-4])+"AAAA", 1), "holds an nkey seed that does not decode: nkeys: invalid checksum"},
		{"an account's seed", strings.Replace(good, string(seed), string(accountSeed), 1), "holds the seed of an account, not of a user (a user's seed begins SU, not SA)"},
		{"a broken JWT", strings.Replace(good, token, "eyJub3QiOiJhIEpXVCJ9.e30.AAAA", 1), "holds a user JWT that does not decode: "},
		{"another user's JWT", strings.Replace(good, token, otherToken, 1), "holds the JWT of user " + otherPub + " but the seed of user " + pub + ": both must be the same user's"},
		{"not there", "", "cannot be read: open "},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".creds")
		if tt.name != "not there" {
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		res := runCmd(t, "check", "--no-context", "-s", "nats://127.0.0.1:1", "--creds", path, "--wait", "1m")
		if want := appName + ": error: creds file " + path + " " + tt.want; res.code != exitUnknown || !strings.HasPrefix(res.stderr, want) || strings.Count(res.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 3 and one line starting %q", tt.name, res.code, res.stderr, want)
		}
		if res.elapsed > margin {
			t.Errorf("%s: --wait waited %s for a creds file no wait mends", tt.name, res.elapsed)
		}
	}
	// A good one passes, to the connection.
	path := filepath.Join(dir, "good.creds")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkCredsFile(path); err != nil {
		t.Errorf("a creds file nsc would write: %v", err)
	}
	res := runCmd(t, "check", "--no-context", "-s", "nats://127.0.0.1:1", "--creds", path)
	if !strings.Contains(res.stderr, "cannot reach NATS at nats://127.0.0.1:1") {
		t.Errorf("a good creds file: %q, want the connection tried", res.stderr)
	}
}

// TestWaitTimeoutIsOneLine: a --wait that gives up says so in one line,
// with what its last audit found, or why that audit could not run (then as
// the one error line, while the document keeps the audit's own error);
// progress lines are only those of audits before it.
func TestWaitTimeoutIsOneLine(t *testing.T) {
	sys := natstest.Start(t, natstest.Spec{Name: "solo", Version: natstest.Floor})
	const unreachable = "cannot reach NATS at nats://127.0.0.1:1: nats: no servers available for connection"
	for _, tt := range []struct {
		name  string
		args  []string
		code  int
		lines []string // regexps, one a line
	}{
		{"one audit that could not run", []string{"--wait", "1s", "--audit.min-interval", "5s", "-s", "nats://127.0.0.1:1"}, exitUnknown, []string{
			`^` + appName + `: error: ` + regexp.QuoteMeta(unreachable) + `; the wait gave up after 0s of --wait 1s: the next audit could not start before the deadline \(at most one per --audit\.min-interval 5s\); status UNKNOWN, wanted OK$`}},
		{"audits that could not run", []string{"--wait", "1s", "--audit.min-interval", "200ms", "-s", "nats://127.0.0.1:1"}, exitUnknown, []string{
			`^\d\d:\d\d:\d\d UNKNOWN ` + regexp.QuoteMeta(unreachable) + `; still waiting$`,
			`^` + appName + `: error: ` + regexp.QuoteMeta(unreachable) + `; the wait gave up after 1(\.\d)?s of --wait 1s: .*; status UNKNOWN, wanted OK$`}},
		{"one audit below the floor", append([]string{"--wait", "1s", "--audit.min-interval", "5s", "--floor", "2.15"}, sys.SysArgs("solo")...), 2, []string{
			`^` + appName + `: the wait gave up after 0s of --wait 1s: the next audit could not start before the deadline \(at most one per --audit\.min-interval 5s\); status CRITICAL, wanted OK: 0 of 1 servers at or above 2\.15\.0$`}},
	} {
		res := runCmd(t, append([]string{"check", "--no-context", "--format", "json", "--timeout", "500ms"}, tt.args...)...)
		lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
		if res.code != tt.code || len(lines) != len(tt.lines) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit %d and %d lines", tt.name, res.code, res.stderr, tt.code, len(tt.lines))
			continue
		}
		for i, re := range tt.lines {
			if !regexp.MustCompile(re).MatchString(lines[i]) {
				t.Errorf("%s: stderr line %d %q, want %s", tt.name, i+1, lines[i], re)
			}
		}
		var doc struct{ Status, Error string }
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || (tt.code == exitUnknown && doc.Error != unreachable) {
			t.Errorf("%s: the document's error %q (%v), want the last audit's own, %q", tt.name, doc.Error, err, unreachable)
		}
	}
}
