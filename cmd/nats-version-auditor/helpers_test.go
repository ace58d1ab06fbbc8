package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/exporter/exportertest"
	"github.com/natsaudit/nats-version-auditor/cmd/nats-version-auditor/internal/render"
	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// The test helpers of this package, in one place. Whatever starts, builds or
// asks nats-server is internal/natstest's; these run the command and read
// what it did.

// --- Running the command: check, report and check --wait.

// A test that starts a system of its own and waits on its servers runs in
// parallel (t.Parallel): it spends its time waiting, not computing. A test
// stays sequential, and so runs with no other test of this package beside
// it, when it asserts how long something took (the fault tests, the
// deadlines of check --wait, the refused requests that must not wait out
// --timeout) or changes what the whole process shares (os.Stderr, the
// environment, make build).

// faultTimeout is the --timeout of the audits that run during a fault;
// margin is how much longer than that one may take.
const (
	faultTimeout = 2 * time.Second
	margin       = 1500 * time.Millisecond
)

// checkDuringFault runs check and asserts it failed closed, in time.
func checkDuringFault(t *testing.T, sys *natstest.System, server string, extra ...string) render.Check {
	t.Helper()
	res, out := checkJSONOf(t, sys, server, append([]string{"--timeout", faultTimeout.String()}, extra...)...)
	if res.code == exitOK {
		t.Fatalf("check exited 0 during the fault; findings:%s", codes(out.Findings))
	}
	if res.elapsed > faultTimeout+margin {
		t.Errorf("check took %s with --timeout %s", res.elapsed, faultTimeout)
	}
	return out
}

// result is what one run of the command left behind.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func runCmd(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
}

// processStderr runs fn and returns what it wrote to the process's own
// stderr, which run's stderr does not catch (nats.go's default error
// handler writes there). It swaps a process-wide file, so a test that calls
// it is not parallel, and then runs alone: Go starts the parallel tests
// only after every sequential one has finished.
func processStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	defer func() { os.Stderr = saved }()
	fn()
	os.Stderr = saved
	w.Close()
	return <-got
}

// checkJSONOf runs `check --format json` as the system user of the named server.
func checkJSONOf(t *testing.T, sys *natstest.System, server string, extra ...string) (result, render.Check) {
	t.Helper()
	return runCheckJSON(t, append(sys.SysArgs(server), extra...)...)
}

// runCheckJSON runs `check --format json` with args.
func runCheckJSON(t *testing.T, args ...string) (result, render.Check) {
	t.Helper()
	res := runCmd(t, append([]string{"check", "--format", "json"}, args...)...)
	var out render.Check
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("check printed no JSON (exit %d): %v\nstdout: %s\nstderr: %s", res.code, err, res.stdout, res.stderr)
	}
	return res, out
}

// withCode returns the findings of one code.
func withCode(fs []findings.Finding, code findings.Code) []findings.Finding {
	var out []findings.Finding
	for _, f := range fs {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

func codes(fs []findings.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + string(f.Code) + ": " + f.Message)
	}
	return b.String()
}

// awaitComplete polls check until it is complete and clean again, with
// every one of the system's servers answering.
func awaitComplete(t *testing.T, sys *natstest.System, server string, servers int) {
	t.Helper()
	err := natstest.Eventually(30*time.Second, func() error {
		res, out := checkJSONOf(t, sys, server, "--timeout", faultTimeout.String(), "--expect", fmt.Sprint(servers))
		if res.code != exitOK {
			return fmt.Errorf("exit %d:%s", res.code, codes(out.Findings))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("no complete audit after recovery: %v", err)
	}
}

// background is a check --wait running inside the test process.
type background struct {
	cancel context.CancelFunc
	done   chan int
	stdout *lockedBuffer
	stderr *lockedBuffer
}

func startCheck(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	go func() { b.done <- run(ctx, append([]string{"check"}, args...), b.stdout, b.stderr) }()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

// waitFor polls stderr until it matches re.
func (b *background) waitFor(t *testing.T, timeout time.Duration, re string) {
	t.Helper()
	err := natstest.Eventually(timeout, func() error {
		select {
		case code := <-b.done:
			b.done <- code
			return fmt.Errorf("check exited %d", code)
		default:
		}
		if !regexp.MustCompile(re).MatchString(b.stderr.String()) {
			return fmt.Errorf("no line matching %s", re)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, b.stderr)
	}
}

func (b *background) exit(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case code := <-b.done:
		b.done <- code
		return code
	case <-time.After(timeout):
		t.Fatalf("check --wait still running after %s; stderr:\n%s", timeout, b.stderr)
		return -1
	}
}

// --- Running serve in the test process, and reading what it exports.

// lockedBuffer is a bytes.Buffer safe for a daemon writing and a test reading.
type lockedBuffer = natstest.LockedBuffer

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// running fails the test if serve has exited: the point is that it never has to.
func (d *daemon) running(t *testing.T) {
	t.Helper()
	select {
	case code := <-d.done:
		d.done <- code
		t.Fatalf("serve exited %d: %s", code, d.stderr)
	default:
	}
}

// daemon is a `serve` running inside the test process.
type daemon struct {
	*exportertest.API
	cancel context.CancelFunc
	done   chan int
	stderr *lockedBuffer
}

// startServe runs `serve` with args and waits until it answers /healthz.
func startServe(t *testing.T, args ...string) *daemon {
	t.Helper()
	addr := natstest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{API: &exportertest.API{Base: "http://" + addr}, cancel: cancel, done: make(chan int, 1), stderr: &lockedBuffer{}}
	go func() {
		d.done <- run(ctx, append([]string{"serve", "--web.listen-address", addr}, args...), io.Discard, d.stderr)
	}()
	t.Cleanup(func() { d.stop(t) })
	err := natstest.Eventually(10*time.Second, func() error {
		select {
		case code := <-d.done:
			d.done <- code
			return fmt.Errorf("serve exited %d: %s", code, d.stderr.String())
		default:
		}
		resp, err := http.Get(d.Base + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stop sends the equivalent of SIGTERM and returns the exit code.
// waitReady waits until serve's /readyz answers 200: its first audit is done.
func (d *daemon) waitReady(t *testing.T, within time.Duration) {
	t.Helper()
	err := natstest.Eventually(within, func() error {
		if code, body := d.Get(t, "/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", code, body)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("never ready after the first audit: %v", err)
	}
}

// waitEventsDenied waits until serve has logged, for each subject, that
// its user may not subscribe to it, and checks that audits go on while
// event watching is down.
func (d *daemon) waitEventsDenied(t *testing.T, subjects ...string) {
	t.Helper()
	err := natstest.Eventually(30*time.Second, func() error {
		for _, subj := range subjects {
			if want := "allow the user to subscribe to " + subj; !strings.Contains(d.stderr.String(), want) {
				return fmt.Errorf("no log line says %q", want)
			}
		}
		if v := value(d.scrape(t), "nats_version_auditor_up"); v != 1 {
			return fmt.Errorf("up = %v: a missing event permission must not stop audits", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, d.stderr)
	}
	if v := value(d.scrape(t), "nats_version_auditor_events_up"); v != 0 {
		t.Errorf("events_up = %v without the permission to subscribe to %v, want 0", v, subjects)
	}
}

func (d *daemon) stop(t *testing.T) int {
	d.cancel()
	select {
	case code := <-d.done:
		d.done <- code
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit within 10s of SIGTERM")
		return -1
	}
}

func (d *daemon) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := d.Get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// series renders every series of a family as name{label=value,...} value.
func series(mfs map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range mfs[name].GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(labels, ","), m.GetGauge().GetValue()))
	}
	sort.Strings(out)
	return out
}

func value(mfs map[string]*dto.MetricFamily, name string) float64 {
	return natstest.Metrics(mfs).Value(name)
}

func peersOf(c client.Consumer) string {
	var out []string
	for _, p := range c.Peers {
		s := p.Name + "=" + p.Version + "/" + fmt.Sprint(p.APILevel)
		if p.Leader {
			s += "*"
		}
		if !p.Answered {
			s += "(silent)"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// labelled returns the value of the series of family name whose labels
// include every label=value of want, or -1 when there is none.
func labelled(mfs map[string]*dto.MetricFamily, name string, want ...string) float64 {
	for _, m := range mfs[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			match = match && have[k] == v
		}
		if match {
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// serverVersion is the version server_info gives the named server, or "".
func serverVersion(mfs map[string]*dto.MetricFamily, name string) string {
	return natstest.Metrics(mfs).ServerVersion(name)
}

// eventServe starts serve on n1 (eventServeOn: on server) with an hour-long --audit.min-interval
// (unless args give one): a scrape then never audits, so only events can
// refresh what it shows. It waits until the first audit is complete and
// events arrive.
func eventServe(t *testing.T, sys *natstest.System, args ...string) *daemon {
	t.Helper()
	return eventServeOn(t, sys, "n1", args...)
}

func eventServeOn(t *testing.T, sys *natstest.System, server string, args ...string) *daemon {
	t.Helper()
	base := append(sys.SysArgs(server), "--timeout", "2s")
	if !slices.Contains(args, "--audit.min-interval") {
		base = append(base, "--audit.min-interval", "1h")
	}
	d := startServe(t, append(base, args...)...)
	err := natstest.Eventually(30*time.Second, func() error {
		mfs := d.scrape(t)
		if v := value(mfs, "nats_version_auditor_events_up"); v != 1 {
			return fmt.Errorf("events_up = %v", v)
		}
		if v := value(mfs, "nats_version_auditor_audits_total"); v < 1 {
			return fmt.Errorf("no audit yet")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, d.stderr)
	}
	return d
}

// --- The systems the tests audit.

func node(name, version string) natstest.Spec { return natstest.Node(name, version, "c1") }

func addStreamAndConsumer(t *testing.T, nc *nats.Conn, stream, consumer string, replicas int, tags ...string) {
	t.Helper()
	cfg := server.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"}, Replicas: replicas, Storage: server.FileStorage}
	if len(tags) > 0 {
		cfg.Placement = &server.Placement{Tags: tags}
	}
	if err := natstest.AddStream(nc, cfg); err != nil {
		t.Fatal(err)
	}
	if err := natstest.AddConsumer(nc, stream, server.ConsumerConfig{Durable: consumer, AckPolicy: server.AckExplicit, Replicas: replicas}); err != nil {
		t.Fatal(err)
	}
}

// streamOnServers returns the APP stream's details as each of the four
// servers that lists it reports them.
func streamOnServers(sysConn *nats.Conn, stream string) (map[string]server.StreamDetail, error) {
	jsz, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true}, 4, 2*time.Second)
	if err != nil {
		return nil, err
	}
	hosts := map[string]server.StreamDetail{}
	for name, resp := range jsz {
		for _, acc := range resp.Data.AccountDetails {
			for _, sd := range acc.Streams {
				if acc.Name == "APP" && sd.Name == stream {
					hosts[name] = sd
				}
			}
		}
	}
	return hosts, nil
}

func streamFindings(out render.Check, code findings.Code, stream string) []findings.Finding {
	var got []findings.Finding
	for _, f := range withCode(out.Findings, code) {
		if f.Stream == stream {
			got = append(got, f)
		}
	}
	return got
}

func newCluster(t *testing.T) *natstest.System {
	sys := natstest.Start(t, node("n1", natstest.New), node("n2", natstest.New), node("n3", natstest.New))
	addStreamAndConsumer(t, sys.Connect("n1", natstest.AppUser, natstest.AppPassword), "ORDERS", "worker", 3)
	awaitComplete(t, sys, "n1", 3)
	return sys
}

// stopGracefully stops servers with SIGTERM and waits until the rest no
// longer route to them, as after any rolling restart's step.
func stopGracefully(t *testing.T, sys *natstest.System, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := sys.Stop(n, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// systemSeries maps every series of the auditor's own families that is not
// about the auditor itself, rendered as name{labels}, to its value.
func systemSeries(mfs map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range mfs {
		fam, ok := strings.CutPrefix(name, "nats_version_auditor_")
		if !ok || slices.Contains(selfFamilies, fam) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out[name+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}

// without returns leastPrivilege less one permission, named after it.
func without(perm string) natstest.User {
	u := leastPrivilege
	u.Name = "without-" + strings.NewReplacer("$", "", ".", "-", "*", "x", ">", "all").Replace(perm)
	u.Publish = slices.DeleteFunc(slices.Clone(u.Publish), func(p string) bool { return p == perm })
	u.Subscribe = slices.DeleteFunc(slices.Clone(u.Subscribe), func(p string) bool { return p == perm })
	return u
}

// --- Files the tests write: credentials, certificates, configs.

// writeAtomically replaces path's content at once, as a Secret or ConfigMap
// volume update does: no reader sees half a file.
func writeAtomically(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// throwawayCreds writes a well-formed creds file that no server trusts.
func throwawayCreds(t *testing.T) (path, jwtText, seed string) {
	t.Helper()
	acc, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	upub, _ := user.PublicKey()
	claims := jwt.NewUserClaims(upub)
	token, err := claims.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(token, s)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, token, string(s)
}

// selfSigned writes a certificate and key for 127.0.0.1.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "auditor"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// tlsWebConfig writes an exporter-toolkit web config that serves TLS with a
// self-signed certificate and lets in one basic-auth user; it returns the
// file and the pool that trusts the certificate.
func tlsWebConfig(t *testing.T, user, password string) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	certPath, keyPath, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		certPath, keyPath, user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	return webConfig, pool
}

// configMapVolume lays files out as the kubelet does for a ConfigMap volume:
// each key a symlink through ..data to a timestamped directory, updated by
// swapping the ..data symlink.
type configMapVolume struct {
	t   *testing.T
	dir string
	gen int
}

func (v *configMapVolume) write(key, content string) {
	v.t.Helper()
	v.gen++
	ts := fmt.Sprintf("..2026_11_30_%06d", v.gen)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o755); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.dir, ts, key), []byte(content), 0o644); err != nil {
		v.t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
	link := filepath.Join(v.dir, key)
	if _, err := os.Lstat(link); os.IsNotExist(err) {
		if err := os.Symlink(filepath.Join("..data", key), link); err != nil {
			v.t.Fatal(err)
		}
	}
}

// --- The Dockerfile and make build.

// stage is one FROM of a Dockerfile and the instructions up to the next.
type stage struct {
	platform, image string
	body            string // continuation lines joined
}

func dockerfileStages(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	from := regexp.MustCompile(`(?m)^FROM\s+(?:--platform=(\S+)\s+)?(\S+)`)
	locs := from.FindAllStringSubmatchIndex(text, -1)
	var stages []stage
	for i, l := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		st := stage{image: text[l[4]:l[5]], body: text[l[1]:end]}
		if l[2] >= 0 {
			st.platform = text[l[2]:l[3]]
		}
		stages = append(stages, st)
	}
	return stages
}

// declaresArgs reports whether body declares every ARG in names: an ARG is
// scoped to its stage, and one not declared there expands to nothing.
func declaresArgs(body string, names ...string) bool {
	declared := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^ARG\s+(.+)$`).FindAllStringSubmatch(body, -1) {
		for _, f := range strings.Fields(m[1]) {
			declared[strings.SplitN(f, "=", 2)[0]] = true
		}
	}
	for _, n := range names {
		if !declared[n] {
			return false
		}
	}
	return true
}

// makeBuild runs `make build` with env added and returns the binary.
func makeBuild(t *testing.T, env []string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed")
	}
	bin := filepath.Join(t.TempDir(), "nats-version-auditor")
	cmd := exec.Command("make", append([]string{"-C", "../..", "build", "BIN=" + bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s make build: %v\n%s", strings.Join(env, " "), err, out)
	}
	return bin
}

// openStatic opens bin as ELF and fails unless it is statically linked:
// distroless static has no dynamic loader and no libc.
func openStatic(t *testing.T, bin string) *elf.File {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("make build wrote a dynamically linked binary (%s): distroless static cannot run it", p.Type)
		}
	}
	return f
}

// createAsync sends a JetStream create request and logs the replies that
// come within a second, but does not judge them: which server answers first
// is a race (an old server that cannot decode the request answers "invalid
// JSON" although the meta leader creates the asset), so the test looks at
// the servers instead.
func createAsync(t *testing.T, nc *nats.Conn, subject string, body any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := natstest.Gather(nc, subject, b, 8, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(string(m.Data), `"error"`) {
			t.Logf("%s answered: %s", subject, m.Data)
		}
	}
}

// logLines returns the lines of the server's log holding every one of words.
func logLines(sys *natstest.System, name string, words ...string) []string {
	var out []string
	for line := range strings.SplitSeq(sys.Log(name), "\n") {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// assetsOn returns, per server, the APP consumers ("STREAM/consumer")
// its JSZ lists, and the APP streams.
func assetsOn(sysConn *nats.Conn, servers int) (map[string]map[string]bool, error) {
	jsz, err := natstest.JSZ(sysConn, server.JSzOptions{Accounts: true, Streams: true, Consumer: true}, servers, 2*time.Second)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for name, resp := range jsz {
		out[name] = map[string]bool{}
		for _, acc := range resp.Data.AccountDetails {
			if acc.Name != "APP" {
				continue
			}
			for _, sd := range acc.Streams {
				out[name][sd.Name] = true
				for _, ci := range sd.Consumer {
					out[name][sd.Name+"/"+ci.Name] = true
				}
			}
		}
	}
	return out, nil
}

// roundS rounds a duration to the second for the logs.
func roundS(d time.Duration) string { return d.Round(time.Second).String() }

// report fetches /api/v1/report from an audit started after the request.
func (d *daemon) report(t *testing.T) exporter.APIReport {
	t.Helper()
	code, body := d.Get(t, "/api/v1/report?max_age=0s")
	var rep exporter.APIReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK {
		t.Fatalf("/api/v1/report: %d %v\n%.300s", code, err, body)
	}
	return rep
}
