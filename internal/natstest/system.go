package natstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Users every server's config defines. SysUser is in the system account,
// AppUser in the JetStream-enabled APP account.
const (
	SysUser     = "sys"
	SysPassword = "sys-secret"
	AppUser     = "app"
	AppPassword = "app-secret"
)

// Spec describes one server.
type Spec struct {
	Name    string
	Version string
	// Cluster names the cluster; servers with the same Cluster route to
	// each other. Empty runs the server outside any cluster.
	Cluster   string
	Tags      []string
	JetStream bool
	// Domain is the JetStream domain, for servers in a leafnode topology.
	Domain string
	// Gateway joins the server's cluster to every other gateway cluster.
	Gateway bool
	// LeafListen accepts leafnode connections.
	LeafListen bool
	// LeafRemotes are leafnode links this server makes.
	LeafRemotes []Remote
	// ExtraAccounts adds that many JetStream accounts (ACC0001, ...).
	ExtraAccounts int
	// ShowPulls gives the system account sight of the pulls: every
	// JetStream account exports its pull requests and pin advisories as
	// streams, and the system account imports them prefixed by the
	// account's name (docs/pulls.md's step, in server-config form). In
	// operator mode the step is in the JWTs, the prefix the account's
	// public key (docs/pulls.md's nsc form; see StartOperator).
	ShowPulls bool
	// ShowAssets gives the system account the advisories of its accounts'
	// streams and consumers created, deleted and updated (AssetSubjects),
	// by the same step as ShowPulls: exports, and imports prefixed.
	ShowAssets bool
	// SysUsers are more users of the system account, with permissions.
	SysUsers []User
	// TLSCert and TLSKey, when set, make clients connect with TLS.
	TLSCert, TLSKey string
	// LameDuckDuration and LameDuckGracePeriod, when set, replace the
	// server's defaults (2m and 10s). In lame duck mode a server waits the
	// grace period before it closes its first client, then spreads the
	// closes over the rest of the duration; the grace period must be
	// shorter than the duration.
	LameDuckDuration, LameDuckGracePeriod time.Duration
	// FeatureFlags, when set, are written as the config's feature_flags
	// block (read from 2.14.0; older servers refuse to start with it).
	FeatureFlags map[string]bool
}

// User is a user with publish and subscribe allow lists (none: all allowed).
// A user with an NKey (a public user key) authenticates with it, by
// signing the server's nonce with the seed, instead of Name and Password.
type User struct {
	Name, Password     string
	NKey               string
	Publish, Subscribe []string
}

// Remote is a leafnode link to Hub, binding the listed local accounts (each
// logged in as the same account on the hub).
type Remote struct {
	Hub      string
	Accounts []string
}

// Server is a running (or stopped) nats-server process.
type Server struct {
	Spec
	ClientPort, ClusterPort, GatewayPort, LeafPort int
	conf, log, store                               string
	cmd                                            *exec.Cmd
	exited                                         chan struct{}
	exitErr                                        error
}

// System is a set of servers started together.
type System struct {
	t       TB
	dir     string
	servers []*Server
	op      *trust // nil in plain mode
}

// Start writes configs for specs, starts every server and waits until each
// accepts clients and every JetStream server sees a meta leader.
//
// Ports are picked free, then bound by the servers a moment later: another
// process can take one in between. A start that fails that way is retried
// on new ports.
func Start(t TB, specs ...Spec) *System {
	t.Helper()
	return newSystem(t, specs).startRetrying()
}

func newSystem(t TB, specs []Spec) *System {
	sys := &System{t: t, dir: t.TempDir()}
	for _, sp := range specs {
		s := &Server{Spec: sp}
		s.conf = filepath.Join(sys.dir, sp.Name+".conf")
		s.log = filepath.Join(sys.dir, sp.Name+".log")
		s.store = filepath.Join(sys.dir, sp.Name+"-js")
		sys.servers = append(sys.servers, s)
	}
	return sys
}

func (sys *System) startRetrying() *System {
	t := sys.t
	t.Helper()
	t.Cleanup(sys.shutdown)
	for attempt := 1; ; attempt++ {
		err := sys.start()
		if err == nil {
			return sys
		}
		clash := false
		for _, s := range sys.servers {
			clash = clash || strings.Contains(sys.Log(s.Name), "address already in use")
			sys.Kill(s.Name)
		}
		if !clash || attempt == 3 {
			t.Fatalf("start: %v", err)
		}
		t.Logf("a port was taken between picking and binding it; starting again on new ports (%v)", err)
	}
}

func (sys *System) start() error {
	for _, s := range sys.servers {
		s.ClientPort, s.ClusterPort, s.GatewayPort, s.LeafPort = FreePort(sys.t), FreePort(sys.t), FreePort(sys.t), FreePort(sys.t)
		_ = os.Remove(s.log)
	}
	for _, s := range sys.servers {
		if err := os.WriteFile(s.conf, []byte(sys.config(s)), 0o600); err != nil {
			return err
		}
	}
	for _, s := range sys.servers {
		sys.launch(s)
	}
	for _, s := range sys.servers {
		if err := sys.waitReady(s.Name); err != nil {
			return fmt.Errorf("server %s not ready: %w\n%s", s.Name, err, sys.LogTail(s.Name, 20))
		}
	}
	if err := sys.waitFormed(); err != nil {
		return err
	}
	return sys.waitMetaPeers()
}

// metaPeerGrace is how long a server may stay out of the meta group's peer
// set before waitMetaPeers restarts it.
const metaPeerGrace = 10 * time.Second

// waitMetaPeers waits, in a system of one JetStream cluster, until the meta
// leader lists every server as a current peer. A server left out for
// metaPeerGrace is restarted once: a 2.10.27 server whose routes came up
// after the first meta leader was elected stayed out of the peer set of a
// 2.14.0 or 2.15.3 leader for over 60 s, in 2 of 14 systems started at once
// here, though it followed that leader; placement walks only the peer set
// (2.14.0 jetstream_cluster.go selectPeerGroup), so every asset placed on
// it was refused. Restarted, it joined within a second, every time.
func (sys *System) waitMetaPeers() error {
	first := sys.servers[0]
	for _, s := range sys.servers {
		if !s.JetStream || s.Cluster != first.Cluster || s.Cluster == "" || s.Domain != "" || s.Gateway || len(s.LeafRemotes) > 0 {
			return nil
		}
	}
	nc, err := nats.Connect(sys.URL(first.Name), sys.login(SysUser, SysPassword), first.tlsOption())
	if err != nil {
		return err
	}
	defer nc.Close()
	var names []string
	for _, s := range sys.servers {
		names = append(names, s.Name)
	}
	outSince := map[string]time.Time{}
	restarted := map[string]bool{}
	var noLeaderSince time.Time
	return Eventually(60*time.Second, func() error {
		resp, err := metaLeaderJSZ(nc)
		if err != nil {
			// A 2-node 2.10.27 cluster once stayed without a meta leader for
			// over a minute under CI's load, both servers logging "no
			// metadata leader": a restart of one starts a fresh election.
			if noLeaderSince.IsZero() {
				noLeaderSince = time.Now()
			} else if last := sys.servers[len(sys.servers)-1].Name; time.Since(noLeaderSince) > 2*metaPeerGrace && !restarted[last] {
				restarted[last] = true
				sys.t.Logf("no meta leader after %s: restarting %s (%v)", 2*metaPeerGrace, last, err)
				if err := sys.restart(last); err != nil {
					return err
				}
			}
			return err
		}
		noLeaderSince = time.Time{}
		if resp.Server == nil {
			return errors.New("the meta leader's JSZ names no server")
		}
		err = metaPeersCurrent(resp.Data, resp.Server.Name, names)
		if err == nil {
			return sys.leaderHeardStats(resp.Server.Name, names)
		}
		var out *notMetaPeerError
		if !errors.As(err, &out) {
			return err
		}
		since, ok := outSince[out.name]
		if !ok {
			outSince[out.name] = time.Now()
			return err
		}
		if time.Since(since) > metaPeerGrace && !restarted[out.name] {
			restarted[out.name] = true
			sys.t.Logf("%s is not in the meta group's peer set after %s: restarting it (%v)", out.name, metaPeerGrace, err)
			if err := sys.restart(out.name); err != nil {
				return err
			}
		}
		return err
	})
}

// leaderHeardStats asks every server to broadcast its statistics and waits
// until the meta leader has passed on each one. A current meta peer is not
// yet placeable: a leader refuses placement with "peer offline" on a peer
// it holds no statistics of (2.15.3 server.go:410 nodeInfo.selectable,
// jetstream_cluster.go:11231), and a server broadcasts them on a backing-off
// timer, so an R3 stream created a second after start failed in CI. A ping
// with no reply makes each server broadcast on its usual subject (2.15.3
// events.go:2250; the same since 2.10); a subscriber on the leader sees each
// broadcast only once the leader has it. It hands a remote server's
// statistics to its one internal receive loop, though, after passing them
// on (noInlineCallback(s.remoteServerUpdate), 2.15.3 events.go:1240; one
// goroutine per queue, server.go:1920): a request to the leader served on
// that loop (VARZ, events.go:1355), answered, says they were taken in,
// where a create right after the broadcasts still found a peer offline.
func (sys *System) leaderHeardStats(leader string, names []string) error {
	nc, err := nats.Connect(sys.URL(leader), sys.login(SysUser, SysPassword), sys.Server(leader).tlsOption())
	if err != nil {
		return err
	}
	defer nc.Close()
	heard := make(chan server.ServerInfo, 4*len(names))
	sub, err := nc.Subscribe("$SYS.SERVER.*.STATSZ", func(m *nats.Msg) {
		var msg server.ServerStatsMsg
		if json.Unmarshal(m.Data, &msg) == nil && msg.Stats.JetStream != nil {
			// Never block the connection's delivery: a broadcast past what
			// the wait reads (a timer's, after it returned) is dropped.
			select {
			case heard <- msg.Server:
			default:
			}
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return err
	}
	if err := nc.Publish("$SYS.REQ.SERVER.PING.STATSZ", nil); err != nil {
		return err
	}
	missing := map[string]bool{}
	for _, n := range names {
		missing[n] = true
	}
	timeout := time.After(2 * time.Second)
	leaderID := ""
	for len(missing) > 0 {
		select {
		case si := <-heard:
			delete(missing, si.Name)
			if si.Name == leader {
				leaderID = si.ID
			}
		case <-timeout:
			return fmt.Errorf("meta leader %s has not heard the statistics of %v", leader, slices.Sorted(maps.Keys(missing)))
		}
	}
	if _, err := nc.Request("$SYS.REQ.SERVER."+leaderID+".VARZ", nil, 2*time.Second); err != nil {
		return fmt.Errorf("meta leader %s has not taken in the statistics it passed on: VARZ: %w", leader, err)
	}
	return nil
}

// waitFormed waits until every server answers a $SYS ping sent through the
// first one: each server being ready alone says nothing of its routes,
// gateways and leafnode links. A system where a leafnode link leaves the
// system account out is never whole from one side, so it is not waited for.
func (sys *System) waitFormed() error {
	for _, s := range sys.servers {
		for _, r := range s.LeafRemotes {
			if !slices.Contains(r.Accounts, "SYS") {
				return nil
			}
		}
	}
	first := sys.servers[0]
	nc, err := nats.Connect(sys.URL(first.Name), sys.login(SysUser, SysPassword), first.tlsOption())
	if err != nil {
		return err
	}
	defer nc.Close()
	want := len(sys.servers)
	return Eventually(30*time.Second, func() error {
		msgs, err := Gather(nc, "$SYS.REQ.SERVER.PING", nil, want, 500*time.Millisecond)
		if err != nil {
			return err
		}
		if len(msgs) < want {
			return fmt.Errorf("%d of %d servers answer a $SYS ping through %s", len(msgs), want, first.Name)
		}
		return nil
	})
}

// Gather sends a request that several servers answer and collects replies
// until want have come or none came for wait. A caller that needs every
// server must compare the count with want: a slow server looks like a
// missing one.
func Gather(nc *nats.Conn, subject string, body []byte, want int, wait time.Duration) ([]*nats.Msg, error) {
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // the inbox is never used again
	if err := nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, err
	}
	var msgs []*nats.Msg
	for len(msgs) < want {
		msg, err := sub.NextMsg(wait)
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr is FreePort as a listen address.
func FreeAddr(t TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// Node is a JetStream server of cluster, tagged node:<name> so that tests
// can place assets on it.
func Node(name, version, cluster string) Spec {
	return Spec{Name: name, Version: version, Cluster: cluster, JetStream: true, Tags: []string{"node:" + name}}
}

// SysArgs are the auditor's command-line arguments to connect to url as the
// system-account user.
func SysArgs(url string) []string {
	return []string{"-s", url, "--user", SysUser, "--password", SysPassword}
}

// SysArgs are the auditor's arguments to connect to the named server as the
// system-account user, in the system's mode.
func (sys *System) SysArgs(name string) []string {
	return sys.ArgsAs(name, SysUser)
}

// ArgsAs are the auditor's arguments to connect to the named server as user.
func (sys *System) ArgsAs(name, user string) []string {
	return append([]string{"-s", sys.URL(name)}, sys.Auth(user)...)
}

// Server returns the server named name.
func (sys *System) Server(name string) *Server {
	for _, s := range sys.servers {
		if s.Name == name {
			return s
		}
	}
	sys.t.Fatalf("no server %q in the test system", name)
	return nil
}

// URL is the client URL of the named server.
func (sys *System) URL(name string) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", sys.Server(name).ClientPort)
}

// Connect connects to the named server as user. In operator mode the user
// logs in with its creds file and password is not used.
func (sys *System) Connect(name, user, password string, opts ...nats.Option) *nats.Conn {
	sys.t.Helper()
	opts = append([]nats.Option{sys.login(user, password), nats.MaxReconnects(-1), sys.Server(name).tlsOption()}, opts...)
	nc, err := nats.Connect(sys.URL(name), opts...)
	if err != nil {
		sys.t.Fatalf("connect to %s as %s: %v", name, user, err)
	}
	sys.t.Cleanup(nc.Close)
	return nc
}

// tlsOption trusts the server's own (self-signed) certificate, if it has one.
func (s *Server) tlsOption() nats.Option {
	if s.TLSCert == "" {
		return func(*nats.Options) error { return nil }
	}
	return nats.RootCAs(s.TLSCert)
}

func (sys *System) config(s *Server) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("server_name: %q", s.Name)
	w("listen: \"127.0.0.1:%d\"", s.ClientPort)
	if s.TLSCert != "" {
		w("tls { cert_file: %q, key_file: %q }", s.TLSCert, s.TLSKey)
	}
	if len(s.Tags) > 0 {
		w("server_tags: [%s]", quoteAll(s.Tags))
	}
	if s.LameDuckDuration > 0 {
		w("lame_duck_duration: %q", s.LameDuckDuration.String())
	}
	if s.LameDuckGracePeriod > 0 {
		w("lame_duck_grace_period: %q", s.LameDuckGracePeriod.String())
	}
	if len(s.FeatureFlags) > 0 {
		w("feature_flags {")
		for _, name := range slices.Sorted(maps.Keys(s.FeatureFlags)) {
			w("  %s: %t", name, s.FeatureFlags[name])
		}
		w("}")
	}
	if s.JetStream {
		w("jetstream { store_dir: %q", s.store)
		if s.Domain != "" {
			w("  domain: %q", s.Domain)
		}
		w("}")
	}
	if s.Cluster != "" {
		var routes []string
		for _, o := range sys.servers {
			if o != s && o.Cluster == s.Cluster {
				routes = append(routes, fmt.Sprintf("%q", fmt.Sprintf("nats-route://127.0.0.1:%d", o.ClusterPort)))
			}
		}
		w("cluster { name: %q, listen: \"127.0.0.1:%d\", routes: [%s] }", s.Cluster, s.ClusterPort, strings.Join(routes, ", "))
	}
	if s.Gateway {
		var gws []string
		seen := map[string]bool{s.Cluster: true}
		for _, o := range sys.servers {
			if o.Gateway && !seen[o.Cluster] {
				seen[o.Cluster] = true
				gws = append(gws, fmt.Sprintf("{name: %q, urls: [\"nats://127.0.0.1:%d\"]}", o.Cluster, o.GatewayPort))
			}
		}
		w("gateway { name: %q, listen: \"127.0.0.1:%d\", gateways: [%s] }", s.Cluster, s.GatewayPort, strings.Join(gws, ", "))
	}
	if s.LeafListen || len(s.LeafRemotes) > 0 {
		w("leafnodes {")
		if s.LeafListen {
			w("  listen: \"127.0.0.1:%d\"", s.LeafPort)
		}
		if len(s.LeafRemotes) > 0 {
			w("  remotes: [")
			for _, r := range s.LeafRemotes {
				hub := sys.Server(r.Hub)
				for _, acc := range r.Accounts {
					user, pass := AppUser, AppPassword
					if acc == "SYS" {
						user, pass = SysUser, SysPassword
					}
					w("    {url: \"nats://%s:%s@127.0.0.1:%d\", account: %q}", user, pass, hub.LeafPort, acc)
				}
			}
			w("  ]")
		}
		w("}")
	}
	if sys.op != nil {
		b.WriteString(sys.op.config())
		return b.String()
	}
	w("accounts {")
	users := []string{fmt.Sprintf("{user: %q, password: %q}", SysUser, SysPassword)}
	for _, u := range s.SysUsers {
		id := fmt.Sprintf("user: %q, password: %q", u.Name, u.Password)
		if u.NKey != "" {
			id = fmt.Sprintf("nkey: %q", u.NKey)
		}
		users = append(users, fmt.Sprintf("{%s, permissions: {publish: {allow: [%s]}, subscribe: {allow: [%s]}}}",
			id, quoteAll(u.Publish), quoteAll(u.Subscribe)))
	}
	jsAccounts := []string{"APP"}
	for i := 1; i <= s.ExtraAccounts; i++ {
		jsAccounts = append(jsAccounts, fmt.Sprintf("ACC%04d", i))
	}
	exports, sysImports := "", ""
	if shown := s.shownSubjects(); len(shown) > 0 {
		var ex, im []string
		for _, subj := range shown {
			ex = append(ex, fmt.Sprintf("{stream: %q}", subj))
		}
		for _, acc := range jsAccounts {
			for _, subj := range shown {
				im = append(im, fmt.Sprintf("{stream: {account: %s, subject: %q}, prefix: %s}", acc, subj, acc))
			}
		}
		exports, sysImports = ", exports: ["+strings.Join(ex, ", ")+"]", ", imports: ["+strings.Join(im, ", ")+"]"
	}
	w("  SYS { users: [%s]%s }", strings.Join(users, ", "), sysImports)
	w("  APP { jetstream: enabled, users: [{user: %q, password: %q}]%s }", AppUser, AppPassword, exports)
	for i := 1; i <= s.ExtraAccounts; i++ {
		w("  ACC%04d { jetstream: enabled, users: [{user: \"acc%04d\", password: \"acc\"}]%s }", i, i, exports)
	}
	w("}")
	w("system_account: SYS")
	return b.String()
}

// shownSubjects are what each JetStream account exports and the system
// account imports: PullSubjects with ShowPulls, AssetSubjects with
// ShowAssets.
func (s Spec) shownSubjects() []string {
	var out []string
	if s.ShowPulls {
		out = append(out, PullSubjects...)
	}
	if s.ShowAssets {
		out = append(out, AssetSubjects...)
	}
	return out
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func (sys *System) launch(s *Server) {
	sys.t.Helper()
	bin := Binary(sys.t, s.Version)
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		sys.t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", s.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		sys.t.Fatalf("start %s (%s): %v", s.Name, s.Version, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		s.exitErr = cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
}

// WaitReady waits until the named server accepts clients and, with JetStream,
// answers JetStream API requests (which needs a meta leader).
func (sys *System) WaitReady(name string) {
	sys.t.Helper()
	if err := sys.waitReady(name); err != nil {
		sys.t.Fatalf("server %s not ready: %v\n%s", name, err, sys.LogTail(name, 20))
	}
}

func (sys *System) waitReady(name string) error {
	s := sys.Server(name)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("exited: %v", s.exitErr)
		default:
		}
		err := sys.probe(s)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probe connects to a server and, with JetStream, asks the JetStream API.
func (sys *System) probe(s *Server) error {
	nc, err := nats.Connect(sys.URL(s.Name), sys.login(AppUser, AppPassword), s.tlsOption())
	if err != nil {
		return err
	}
	defer nc.Close()
	if !s.JetStream {
		return nil
	}
	return askAgainUntilAnswered(nc, "$JS.API.INFO", time.Second)
}

// askAgainUntilAnswered sends a request every probeInterval, all with one
// reply subject, until any of them is answered or timeout passes. Only the
// JetStream meta leader answers $JS.API.INFO, and a server with none says so
// only after 10 s (2.14.0 jetstream_api.go:1294-1309, raft.go:287): a
// request sent before the first leader is elected is never answered, and
// the leader comes a moment later. Asked again, it answers then, not at the
// end of a timeout; a slow answer to an earlier request counts all the same.
func askAgainUntilAnswered(nc *nats.Conn, subject string, timeout time.Duration) error {
	sub, err := nc.SubscribeSync(nats.NewInbox())
	if err != nil {
		return err
	}
	defer sub.Unsubscribe() //nolint:errcheck // the connection is closed next
	deadline := time.Now().Add(timeout)
	for {
		if err := nc.PublishRequest(subject, sub.Subject, nil); err != nil {
			return err
		}
		_, err := sub.NextMsg(min(probeInterval, time.Until(deadline)))
		if !errors.Is(err, nats.ErrTimeout) || !time.Now().Before(deadline) {
			return err
		}
	}
}

// probeInterval is how often a server not ready yet is asked again.
const probeInterval = 100 * time.Millisecond

// Kill ends the named server with SIGKILL and waits for it to exit. A paused
// server dies without running again: resuming it first (as this once did)
// let it answer everything queued for it in the moment before SIGKILL
// landed, which on a loaded machine is long enough for a whole audit.
func (sys *System) Kill(name string) {
	s := sys.Server(name)
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Stop ends the named server with SIGTERM, the way a rolling upgrade or a
// Kubernetes pod deletion stops it, and waits up to timeout for it to exit.
// A server stopped so says goodbye to its routes: the others forget it at
// once, unlike a killed one.
func (sys *System) Stop(name string, timeout time.Duration) error {
	s := sys.Server(name)
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return sys.WaitExit(name, timeout)
}

// LameDuck sends the named server SIGUSR2: it hands its leaderships over and
// then closes its clients over its lame_duck_duration.
func (sys *System) LameDuck(name string) {
	if err := sys.Server(name).cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		sys.t.Fatal(err)
	}
}

// Pause stops the named server with SIGSTOP: its sockets stay open but it
// answers nothing. Resume undoes it. It returns once the kernel reports the
// process stopped: a signal is only queued when kill(2) returns, and on a
// loaded machine the server can go on answering for a moment after that,
// long enough for an audit started next to hear it.
func (sys *System) Pause(name string) {
	sys.t.Helper()
	pid := sys.Server(name).cmd.Process.Pid
	if err := sys.Server(name).cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		sys.t.Fatal(err)
	}
	if err := Eventually(10*time.Second, func() error { return stopped(pid) }); err != nil {
		sys.t.Fatalf("pausing %s: %v", name, err)
	}
}

// stopped reports whether every thread of the process is stopped by a
// signal: state "T" in /proc/PID/task/TID/stat (proc(5)). A group stop
// reaches the threads one by one.
func stopped(pid int) error {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return fmt.Errorf("no threads of process %d: %v", pid, err)
	}
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses and
		// may itself hold spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return fmt.Errorf("unreadable %s", stat)
		}
		if state := b[i+2]; state != 'T' {
			return fmt.Errorf("%s: state %c, not stopped", stat, state)
		}
	}
	return nil
}

// Resume continues a paused server.
func (sys *System) Resume(name string) {
	if err := sys.Server(name).cmd.Process.Signal(syscall.SIGCONT); err != nil {
		sys.t.Fatal(err)
	}
}

// Restart stops the named server and starts it again with the given
// version (its own when empty) on the same ports and store.
func (sys *System) Restart(name, version string) {
	sys.t.Helper()
	if version != "" {
		sys.Server(name).Version = version
	}
	if err := sys.restart(name); err != nil {
		sys.t.Fatalf("server %s not ready: %v\n%s", name, err, sys.LogTail(name, 20))
	}
}

// TryRestart is Restart that returns, rather than fails the test on, a
// server that does not come up: for a test that knows why one may not.
func (sys *System) TryRestart(name, version string) error {
	if version != "" {
		sys.Server(name).Version = version
	}
	return sys.restart(name)
}

// restart kills the named server and starts it again on its own ports and
// store, and waits until it is ready.
func (sys *System) restart(name string) error {
	sys.Kill(name)
	sys.launch(sys.Server(name))
	return sys.waitReady(name)
}

// Relaunch starts the named server's process again, on the same ports and
// store, without waiting for it to be ready: a server that crashes during
// its recovery never is.
func (sys *System) Relaunch(name string) {
	sys.t.Helper()
	sys.Kill(name)
	sys.launch(sys.Server(name))
}

// WaitExit waits up to timeout for the named server's process to end on its own.
func (sys *System) WaitExit(name string, timeout time.Duration) error {
	select {
	case <-sys.Server(name).exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("server %s still running after %s", name, timeout)
	}
}

// Running reports whether the named server's process is alive.
func (sys *System) Running(name string) bool {
	select {
	case <-sys.Server(name).exited:
		return false
	default:
		return true
	}
}

// Log returns what the named server has logged.
func (sys *System) Log(name string) string {
	b, _ := os.ReadFile(sys.Server(name).log)
	return string(b)
}

// StoreDir is the named server's JetStream store directory, which outlives
// a restart.
func (sys *System) StoreDir(name string) string {
	return sys.Server(name).store
}

// LogTail returns the last n lines the named server logged.
func (sys *System) LogTail(name string, n int) string {
	lines := strings.Split(strings.TrimRight(sys.Log(name), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (sys *System) shutdown() {
	for _, s := range sys.servers {
		sys.Kill(s.Name)
	}
	if sys.t.Failed() {
		for _, s := range sys.servers {
			sys.t.Logf("--- %s (%s) log tail:\n%s", s.Name, s.Version, sys.LogTail(s.Name, 15))
		}
	}
}

// Eventually polls cond until it returns nil or timeout passes, and returns
// its last error.
func Eventually(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PID is the process id of the named server, 0 when it is not running.
func (sys *System) PID(name string) int {
	s := sys.Server(name)
	if s.cmd == nil || s.cmd.Process == nil || !sys.Running(name) {
		return 0
	}
	return s.cmd.Process.Pid
}
