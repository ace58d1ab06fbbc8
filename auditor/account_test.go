package auditor

import (
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Two operator-mode accounts whose JWTs are both named APP, as JSZ reports
// them (TestFactOperatorModeAccounts): name is the JWT's name, id the key.
const (
	keyA = "ACZKYJ4AQUB7PPJ6GDYP5LJUSEUZPY5IXCC4ETGAQV5IZXK4TLBYGN3Y"
	keyB = "ADD4QGJQZQSCIRZ5ILWQUV4I6BNS5M4Q2UKUXTM6BM7HVJYE3XZXP7WE"
)

// twinsJSZ is one server's JSZ page: n1 hosts ORDERS > worker of each
// account, led by n3 (2.12.15) in keyA and by n1 in keyB.
func twinsJSZ() []byte {
	return []byte(`{"data": {"account_details": [
		{"name": "APP", "id": "` + keyA + `", "stream_detail": [{"name": "ORDERS", "cluster": {"leader": "n3", "replicas": [{"name": "n3"}]},
			"config": {"num_replicas": 2}, "consumer_detail": [{"name": "worker", "cluster": {"leader": "n3", "replicas": [{"name": "n3"}]}, "config": {"num_replicas": 2}}]}]},
		{"name": "APP", "id": "` + keyB + `", "stream_detail": [{"name": "ORDERS", "cluster": {"leader": "n1", "replicas": [{"name": "n3"}]},
			"config": {"num_replicas": 2}, "consumer_detail": [{"name": "worker", "cluster": {"leader": "n1", "replicas": [{"name": "n3"}]}, "config": {"num_replicas": 2}}]}]},
		{"name": "PLAIN", "id": "PLAIN", "stream_detail": [{"name": "LOGS", "cluster": {"leader": "n1"}, "config": {"num_replicas": 1}}]}
	], "total": 3}}`)
}

func twinsSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	snap := fromPages(t, map[string][]byte{"n1": twinsJSZ()})
	snap.Servers = []snapshot.Server{{Name: "n1", Cluster: "c1", Version: "2.14.0", Parsed: version.Must("2.14.0"), JetStream: true, APILevel: 4},
		{Name: "n3", Cluster: "c1", Version: "2.12.15", Parsed: version.Must("2.12.15"), JetStream: true, APILevel: 3}}
	return snap
}

func TestAccountsOfOneNameStayApart(t *testing.T) {
	snap := twinsSnapshot(t)
	var got []string
	for _, a := range append(slices.Clone(snap.Streams), snap.Consumers...) {
		got = append(got, a.Account+"|"+a.AccountName+"|"+a.Stream+"|"+a.Consumer+"|"+a.Leader)
	}
	slices.Sort(got)
	want := []string{
		keyA + "|APP|ORDERS|worker|n3", keyA + "|APP|ORDERS||n3",
		keyB + "|APP|ORDERS|worker|n1", keyB + "|APP|ORDERS||n1",
		// Plain mode: the id is the name, and no name is kept beside it.
		"PLAIN||LOGS||n1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged assets\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	t.Run("findings", func(t *testing.T) {
		r := Evaluate(snap, Policy{Floor: version.DefaultFloor})
		var got []string
		for _, f := range r.Findings {
			if f.Consumer != "" {
				got = append(got, string(f.Code)+" "+f.Account+" "+f.AccountName+" | "+f.Message)
			}
		}
		want := []string{
			"CONSUMER_LEADER_BELOW_FLOOR " + keyA + " APP | consumer APP (" + keyA + ") > ORDERS > worker is led by n3 running 2.12.15: RESET (first in 2.14.0) to it goes unanswered",
			"CONSUMER_REPLICA_BELOW_FLOOR " + keyB + " APP | consumer APP (" + keyB + ") > ORDERS > worker has follower n3 running 2.12.15: a RESET answered by a leader at 2.14.0 or later crashes it",
		}
		if !slices.Equal(got, want) {
			t.Errorf("consumer findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("--account matches a name or a key", func(t *testing.T) {
		for _, tt := range []struct {
			pattern string
			want    int
		}{{"APP", 2}, {keyA, 1}, {"AD*", 1}, {"PLAIN", 0}, {"NOPE", 0}} {
			n := 0
			for _, f := range Evaluate(snap, Policy{Floor: version.DefaultFloor, Accounts: []string{tt.pattern}}).Findings {
				if f.Consumer != "" {
					n++
				}
			}
			if n != tt.want {
				t.Errorf("--account %s: %d consumer findings, want %d", tt.pattern, n, tt.want)
			}
		}
	})

	t.Run("index", func(t *testing.T) {
		x := NewIndex(snap)
		for _, tt := range []struct {
			account string
			want    []string
		}{{"APP", []string{keyA, keyB}}, {keyA, []string{keyA}}, {keyB, []string{keyB}}, {"PLAIN", []string{"PLAIN"}}, {"NOPE", nil}} {
			if got := x.Accounts(tt.account); !slices.Equal(got, tt.want) {
				t.Errorf("Accounts(%s) = %v, want %v", tt.account, got, tt.want)
			}
		}
		for key, want := range map[string]findings.ResetVerdict{keyA: findings.ResetUnanswered, keyB: findings.ResetCrashesFollower} {
			v, ok := x.Consumer(ConsumerKey{Account: key, Stream: "ORDERS", Consumer: "worker"})
			if !ok || v.Reset != want || v.AccountName != "APP" {
				t.Errorf("%s > ORDERS > worker: found %v, %s (name %q), want %s (APP)", key, ok, v.Reset, v.AccountName, want)
			}
		}
		if _, ok := x.Consumer(ConsumerKey{Account: "APP", Stream: "ORDERS", Consumer: "worker"}); ok {
			t.Error("the index found a consumer by an account name: names are resolved by Accounts, never guessed")
		}
	})
}
