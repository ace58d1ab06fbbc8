package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestServeWaitsForCredentials starts serve before its credentials file
// exists, as a sidecar whose Secret is not (yet) mounted: it keeps serving,
// exports up 0, logs the missing file by name, and picks the file up when it
// appears, with no restart. Each kind of file is one that the connection
// cannot be made without, in plain and in operator (JWT) mode.
func TestServeWaitsForCredentials(t *testing.T) {
	t.Parallel()
	for _, mode := range natstest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			testServeWaitsForCredentials(t, mode)
		})
	}
}

func testServeWaitsForCredentials(t *testing.T, mode natstest.Mode) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	certPath, keyPath, _ := selfSigned(t, t.TempDir())
	caPEM, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	spec := natstest.Spec{Name: "solo", Version: natstest.New, JetStream: true, TLSCert: certPath, TLSKey: keyPath}
	if mode == natstest.Plain {
		spec.SysUsers = []natstest.User{{NKey: pub}}
	}
	sys := mode.Start(t, spec)
	url := strings.Replace(sys.URL("solo"), "nats://", "tls://", 1)
	sysArgs := append([]string{"-s", url}, sys.Auth(natstest.SysUser)...)

	type credsCase struct {
		name    string
		content []byte
		args    func(missing string) []string
	}
	var cases []credsCase
	if mode == natstest.Plain {
		credsFile, _, _ := throwawayCreds(t)
		creds, err := os.ReadFile(credsFile)
		if err != nil {
			t.Fatal(err)
		}
		userURL := strings.Replace(url, "tls://", "tls://"+natstest.SysUser+":"+natstest.SysPassword+"@", 1)
		cases = append(cases,
			// The server verifies the nonce signed with this seed: without
			// the file there is no login.
			credsCase{"nkey", seed, func(missing string) []string {
				return []string{"-s", url, "--tlsca", certPath, "--nkey", missing}
			}},
			// The server is not in operator mode and logs the user in by the
			// password in the URL; the creds file must still be read (nats.go
			// signs the nonce with its seed) before there is a connection.
			credsCase{"creds", creds, func(missing string) []string {
				return []string{"-s", userURL, "--tlsca", certPath, "--creds", missing}
			}})
	} else {
		creds, err := os.ReadFile(sys.Creds(natstest.SysUser))
		if err != nil {
			t.Fatal(err)
		}
		// The server knows the user only by the JWT in this file, and
		// verifies the nonce signed with its seed.
		cases = append(cases, credsCase{"creds", creds, func(missing string) []string {
			return []string{"-s", url, "--tlsca", certPath, "--creds", missing}
		}})
	}
	// The server's certificate is verified against this CA alone.
	cases = append(cases, credsCase{"tlsca", caPEM, func(missing string) []string {
		return append(slices.Clone(sysArgs), "--tlsca", missing)
	}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "mounted-later", tc.name)
			d := startServe(t, append(tc.args(missing), "--audit.min-interval", "0s", "--timeout", "2s")...)

			if code, _ := d.Get(t, "/healthz"); code != http.StatusOK {
				t.Errorf("/healthz %d without the %s file, want 200", code, tc.name)
			}
			mfs := d.scrape(t)
			if v := value(mfs, "nats_version_auditor_up"); v != 0 {
				t.Errorf("up = %v without the %s file, want 0", v, tc.name)
			}
			if v := value(mfs, "nats_version_auditor_status"); v != 3 {
				t.Errorf("status = %v without the %s file, want 3 (UNKNOWN)", v, tc.name)
			}
			if got := series(mfs, "nats_version_auditor_floor_info"); len(got) != 1 || !strings.Contains(got[0], "floor=2.14.0") {
				t.Errorf("floor_info %v, want the floor 2.14.0 in force", got)
			}
			if err := natstest.Eventually(10*time.Second, func() error {
				if !strings.Contains(d.stderr.String(), missing) {
					return fmt.Errorf("no log line names %s:\n%s", missing, d.stderr)
				}
				return nil
			}); err != nil {
				t.Error(err)
			}
			audits := value(mfs, "nats_version_auditor_audits_total")

			if err := os.MkdirAll(filepath.Dir(missing), 0o700); err != nil {
				t.Fatal(err)
			}
			writeAtomically(t, missing, tc.content)
			err := natstest.Eventually(30*time.Second, func() error {
				mfs = d.scrape(t)
				if v := value(mfs, "nats_version_auditor_up"); v != 1 {
					return fmt.Errorf("up = %v after the %s file appeared\n%s", v, tc.name, d.stderr)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			d.running(t)
			if v := value(mfs, "nats_version_auditor_audits_total"); v <= audits {
				t.Errorf("audits_total %v, not beyond the %v before the file appeared: the process restarted?", v, audits)
			}
			if v := value(mfs, "nats_version_auditor_status"); v != 0 {
				t.Errorf("status = %v on a single 2.15.3 server, want 0", v)
			}
		})
	}
}

// TestServeStartsWithoutNATS: no server listens where serve is pointed. It
// runs anyway, answers /healthz, exports up 0 and logs the address it tried.
func TestServeStartsWithoutNATS(t *testing.T) {
	t.Parallel()
	url := "nats://" + natstest.FreeAddr(t)
	d := startServe(t, "-s", url, "--audit.min-interval", "0s", "--timeout", "1s")
	if code, _ := d.Get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d, want 200", code)
	}
	mfs := d.scrape(t)
	if v := value(mfs, "nats_version_auditor_up"); v != 0 {
		t.Errorf("up = %v with no server, want 0", v)
	}
	if v := value(mfs, "nats_version_auditor_last_success_timestamp_seconds"); v != 0 {
		t.Errorf("last_success = %v with no server, want 0", v)
	}
	if !strings.Contains(d.stderr.String(), "cannot reach NATS at "+url) {
		t.Errorf("no log line names %s:\n%s", url, d.stderr)
	}
	d.running(t)
}
