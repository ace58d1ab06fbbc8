package natstest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Mode is how the servers of a System know their accounts and users.
type Mode string

// The modes a System runs in.
const (
	// Plain defines accounts and users in each server's accounts {} block.
	Plain Mode = "plain"
	// Operator is operator (JWT) mode: an operator, its accounts and their
	// users are keys and JWTs made by the test; every server trusts the
	// operator and finds the account JWTs in a memory resolver.
	Operator Mode = "operator"
)

// Modes lists every Mode, for tests that run in each.
var Modes = []Mode{Plain, Operator}

// TwinUser is the user of the twin account that OperatorConfig.Twin adds.
const TwinUser = "app-twin"

// OperatorConfig varies operator mode.
type OperatorConfig struct {
	// Twin adds a second JetStream account whose JWT is named APP too, with
	// the user TwinUser: an operator does not keep account names unique.
	Twin bool
}

// Start starts specs in mode m (see Start).
func (m Mode) Start(t TB, specs ...Spec) *System {
	t.Helper()
	if m == Operator {
		return StartOperator(t, OperatorConfig{}, specs...)
	}
	return Start(t, specs...)
}

// StartOperator is Start in operator (JWT) mode. The accounts are those of
// plain mode (SYS, APP and each Spec's ExtraAccounts), each an account JWT
// named so and signed by the operator, each user a user JWT signed by its
// account, with a creds file (Creds). Spec.SysUsers keep their permissions;
// NKey users and leafnode remotes are not supported. ShowPulls and
// ShowAssets go into the JWTs (the same for every server, so all specs or
// none must set each): each JetStream account exports PullSubjects
// (AssetSubjects), and the system account imports them under the account's
// public key.
func StartOperator(t TB, cfg OperatorConfig, specs ...Spec) *System {
	t.Helper()
	sys := newSystem(t, specs)
	sys.op = newTrust(t, sys.dir, cfg, specs)
	return sys.startRetrying()
}

// trust is one operator with its accounts and their users.
type trust struct {
	operatorJWT string // path of the operator's JWT
	sysAccount  string // public key of the system account
	accounts    []trustedAccount
	creds       map[string]string // user name -> creds file
	accountOf   map[string]string // user name -> account public key
}

type trustedAccount struct {
	name, key, jwt string
}

func newTrust(t TB, dir string, cfg OperatorConfig, specs []Spec) *trust {
	t.Helper()
	opKey, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opPub, _ := opKey.PublicKey()
	tr := &trust{creds: map[string]string{}, accountOf: map[string]string{}}

	var sysUsers []User
	extra := 0
	var shown []string
	if len(specs) > 0 {
		shown = specs[0].shownSubjects()
	}
	for _, sp := range specs {
		// Every server reads the same account JWTs, so the accounts'
		// exports and the system account's imports are all servers' or
		// none's.
		if !slices.Equal(sp.shownSubjects(), shown) {
			t.Fatalf("server %s: ShowPulls %t, ShowAssets %t, server %s: %t, %t; in operator mode every server has the same accounts",
				sp.Name, sp.ShowPulls, sp.ShowAssets, specs[0].Name, specs[0].ShowPulls, specs[0].ShowAssets)
		}
		if len(sp.LeafRemotes) > 0 {
			t.Fatalf("server %s: leafnode remotes are not supported in operator mode", sp.Name)
		}
		for _, u := range sp.SysUsers {
			if u.NKey != "" {
				t.Fatalf("server %s: NKey users are not supported in operator mode", sp.Name)
			}
			if !slices.ContainsFunc(sysUsers, func(o User) bool { return o.Name == u.Name }) {
				sysUsers = append(sysUsers, u)
			}
		}
		extra = max(extra, sp.ExtraAccounts)
	}

	// The account keys are made first and the claims encoded last: with
	// ShowPulls or ShowAssets the system account's claims name every JetStream account
	// by its public key.
	type pending struct {
		claims    *jwt.AccountClaims
		jetStream bool
	}
	var accounts []pending
	add := func(name string, jetStream bool, users ...User) string {
		accKey, err := nkeys.CreateAccount()
		if err != nil {
			t.Fatal(err)
		}
		accPub, _ := accKey.PublicKey()
		ac := jwt.NewAccountClaims(accPub)
		ac.Name = name
		if jetStream {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
				Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		}
		accounts = append(accounts, pending{claims: ac, jetStream: jetStream})
		for _, u := range users {
			tr.creds[u.Name] = writeCreds(t, dir, accKey, u)
			tr.accountOf[u.Name] = accPub
		}
		return accPub
	}
	tr.sysAccount = add("SYS", false, append([]User{{Name: SysUser}}, sysUsers...)...)
	add("APP", true, User{Name: AppUser})
	if cfg.Twin {
		add("APP", true, User{Name: TwinUser})
	}
	for i := 1; i <= extra; i++ {
		add(fmt.Sprintf("ACC%04d", i), true, User{Name: fmt.Sprintf("acc%04d", i)})
	}

	if len(shown) > 0 {
		i := slices.IndexFunc(accounts, func(a pending) bool { return a.claims.Subject == tr.sysAccount })
		sysClaims := accounts[i].claims
		for _, a := range accounts {
			if !a.jetStream {
				continue
			}
			for _, subj := range shown {
				// Public, as in plain mode: an import of a public export
				// needs no activation token.
				a.claims.Exports.Add(&jwt.Export{Subject: jwt.Subject(subj), Type: jwt.Stream})
				// LocalSubject, not the deprecated To (jwt.Import.Validate
				// warns on To): the server maps a stream import's local
				// subject like a prefix (2.15.2 accounts.go:3721-3726).
				sysClaims.Imports.Add(&jwt.Import{Account: a.claims.Subject, Subject: jwt.Subject(subj),
					LocalSubject: jwt.RenamingSubject(a.claims.Subject + "." + subj), Type: jwt.Stream})
			}
		}
	}
	for _, a := range accounts {
		token, err := a.claims.Encode(opKey)
		if err != nil {
			t.Fatalf("account %s: %v", a.claims.Name, err)
		}
		tr.accounts = append(tr.accounts, trustedAccount{name: a.claims.Name, key: a.claims.Subject, jwt: token})
	}

	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "natstest"
	oc.SystemAccount = tr.sysAccount
	token, err := oc.Encode(opKey)
	if err != nil {
		t.Fatal(err)
	}
	tr.operatorJWT = filepath.Join(dir, "operator.jwt")
	if err := os.WriteFile(tr.operatorJWT, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	return tr
}

// writeCreds makes u a user of the account acc, with u's permissions, and
// writes its creds file.
func writeCreds(t TB, dir string, acc nkeys.KeyPair, u User) string {
	t.Helper()
	userKey, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	userPub, _ := userKey.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	uc.Name = u.Name
	uc.Pub.Allow.Add(u.Publish...)
	uc.Sub.Allow.Add(u.Subscribe...)
	token, err := uc.Encode(acc)
	if err != nil {
		t.Fatalf("user %s: %v", u.Name, err)
	}
	seed, _ := userKey.Seed()
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, u.Name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// config is the trust part of a server's config: the operator, the system
// account and a memory resolver holding every account JWT.
func (tr *trust) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "operator: %q\n", tr.operatorJWT)
	fmt.Fprintf(&b, "system_account: %q\n", tr.sysAccount)
	b.WriteString("resolver: MEMORY\nresolver_preload: {\n")
	for _, a := range tr.accounts {
		fmt.Fprintf(&b, "  %s: %q\n", a.key, a.jwt)
	}
	b.WriteString("}\n")
	return b.String()
}

// Mode is the mode the system runs in.
func (sys *System) Mode() Mode {
	if sys.op != nil {
		return Operator
	}
	return Plain
}

// Creds is the creds file of the named user in operator mode.
func (sys *System) Creds(user string) string {
	sys.t.Helper()
	if sys.op == nil {
		sys.t.Fatalf("creds of %s: the system is not in operator mode", user)
	}
	path, ok := sys.op.creds[user]
	if !ok {
		sys.t.Fatalf("no user %q in the test system", user)
	}
	return path
}

// AccountKey names the account of the named user as the servers' JSZ gives
// its id: the account's public key in operator mode, its name in plain mode.
func (sys *System) AccountKey(user string) string {
	sys.t.Helper()
	if sys.op != nil {
		key, ok := sys.op.accountOf[user]
		if !ok {
			sys.t.Fatalf("no user %q in the test system", user)
		}
		return key
	}
	switch {
	case user == SysUser || slices.Contains(sys.sysUserNames(), user):
		return "SYS"
	case user == AppUser:
		return "APP"
	case strings.HasPrefix(user, "acc"): // ExtraAccounts: acc0001 is in ACC0001
		return strings.ToUpper(user)
	}
	sys.t.Fatalf("no user %q in the test system", user)
	return ""
}

// Auth is the auditor's command-line arguments to log in as the named user:
// --creds in operator mode, --user and --password in plain mode.
func (sys *System) Auth(user string) []string {
	sys.t.Helper()
	if sys.op != nil {
		return []string{"--creds", sys.Creds(user)}
	}
	return []string{"--user", user, "--password", sys.password(user)}
}

// login is the nats.go option that logs in as user: its creds file in
// operator mode, else user and password.
func (sys *System) login(user, password string) nats.Option {
	if sys.op != nil {
		if path, ok := sys.op.creds[user]; ok {
			return nats.UserCredentials(path)
		}
	}
	return nats.UserInfo(user, password)
}

// password is the plain-mode password of the named user.
func (sys *System) password(user string) string {
	sys.t.Helper()
	switch user {
	case SysUser:
		return SysPassword
	case AppUser:
		return AppPassword
	}
	for _, s := range sys.servers {
		for _, u := range s.SysUsers {
			if u.Name == user && u.NKey == "" {
				return u.Password
			}
		}
	}
	if strings.HasPrefix(user, "acc") {
		return "acc"
	}
	sys.t.Fatalf("no user %q with a password in the test system", user)
	return ""
}

func (sys *System) sysUserNames() []string {
	var names []string
	for _, s := range sys.servers {
		for _, u := range s.SysUsers {
			names = append(names, u.Name)
		}
	}
	return names
}
