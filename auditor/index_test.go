package auditor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

func TestIndexConsumer(t *testing.T) {
	snap := &snapshot.Snapshot{
		Servers: []snapshot.Server{
			{Name: "n1", Version: "2.15.3", Parsed: version.Must("2.15.3"), APILevel: 5},
			{Name: "n2", Version: "2.14.0", Parsed: version.Must("2.14.0"), APILevel: 4},
			{Name: "n3", Version: "2.12.15", Parsed: version.Must("2.12.15"), APILevel: 3},
			{Name: "leaf", Domain: "edge", Version: "2.14.0", Parsed: version.Must("2.14.0"), APILevel: 4},
		},
		Consumers: []snapshot.Asset{
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "led-by-old", Leader: "n3", Peers: []string{"n1", "n2", "n3"}, Replicas: 3},
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "followed", Leader: "n1", Peers: []string{"n1", "n2", "n3"}, Replicas: 3, RequiredLevel: 1},
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "fine", Leader: "n2", Peers: []string{"n1", "n2"}, Replicas: 2},
			// A follower reported a leader that is not in its replica list.
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "leader-unlisted", Leader: "n1", Peers: []string{"n2"}, Replicas: 2},
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "short", Leader: "n1", Peers: []string{"n1", "n2"}, Replicas: 3},
			{Kind: releases.KindConsumer, Account: "APP", Stream: "ORDERS", Consumer: "gone-peer", Leader: "n1", Peers: []string{"n1", "n4"}, Replicas: 2},
			{Kind: releases.KindConsumer, Domain: "edge", Account: "APP", Stream: "ORDERS", Consumer: "fine", Leader: "leaf", Peers: []string{"leaf"}, Replicas: 1},
		},
	}
	x := NewIndex(snap)
	tests := []struct {
		key   ConsumerKey
		found bool
		want  findings.ResetVerdict
		peers string
	}{
		{ConsumerKey{"", "APP", "ORDERS", "led-by-old"}, true, findings.ResetUnanswered, "n1:2.15.3:5 n2:2.14.0:4 n3*:2.12.15:3"},
		{ConsumerKey{"", "APP", "ORDERS", "followed"}, true, findings.ResetCrashesFollower, "n1*:2.15.3:5 n2:2.14.0:4 n3:2.12.15:3"},
		{ConsumerKey{"", "APP", "ORDERS", "fine"}, true, findings.ResetSafe, "n1:2.15.3:5 n2*:2.14.0:4"},
		{ConsumerKey{"", "APP", "ORDERS", "leader-unlisted"}, true, findings.ResetSafe, "n1*:2.15.3:5 n2:2.14.0:4"},
		{ConsumerKey{"", "APP", "ORDERS", "short"}, true, findings.ResetUnknown, "n1*:2.15.3:5 n2:2.14.0:4"},
		{ConsumerKey{"", "APP", "ORDERS", "gone-peer"}, true, findings.ResetUnknown, "n1*:2.15.3:5 n4:-:0"},
		{ConsumerKey{"edge", "APP", "ORDERS", "fine"}, true, findings.ResetSafe, "leaf*:2.14.0:4"},
		{ConsumerKey{"", "APP", "ORDERS", "nope"}, false, findings.ResetUnknown, ""},
		{ConsumerKey{"other", "APP", "ORDERS", "led-by-old"}, false, findings.ResetUnknown, ""},
		{ConsumerKey{"", "ACC", "ORDERS", "fine"}, false, findings.ResetUnknown, ""},
	}
	for _, tt := range tests {
		v, found := x.Consumer(tt.key)
		var peers []string
		for _, p := range v.Peers {
			star, ver := "", p.Version
			if p.Leader {
				star = "*"
			}
			if !p.Answered {
				ver = "-"
			}
			peers = append(peers, fmt.Sprintf("%s%s:%s:%d", p.Name, star, ver, p.APILevel))
		}
		if found != tt.found || v.Reset != tt.want || strings.Join(peers, " ") != tt.peers || v.ConsumerKey != tt.key {
			t.Errorf("%+v: found=%v %s (%s) peers %q, want found=%v %s peers %q", tt.key, found, v.Reset, v.Reason, strings.Join(peers, " "), tt.found, tt.want, tt.peers)
		}
	}
	if got := x.Domains("APP", "ORDERS", "fine"); strings.Join(got, ",") != ",edge" {
		t.Errorf("Domains(fine) = %q, want the default domain and edge", got)
	}
	if got := x.Domains("APP", "ORDERS", "nope"); len(got) != 0 {
		t.Errorf("Domains(nope) = %q, want none", got)
	}

	// A stream's consumers, each with the verdict Consumer gives it.
	var all []string
	for _, v := range x.StreamConsumers(StreamKey{"", "APP", "ORDERS"}) {
		one, _ := x.Consumer(v.ConsumerKey)
		if v.Reset != one.Reset || v.Reason != one.Reason || len(v.Peers) != len(one.Peers) {
			t.Errorf("StreamConsumers %+v differs from Consumer %+v", v, one)
		}
		all = append(all, v.Consumer+":"+string(v.Reset))
	}
	if got, want := strings.Join(all, " "), "led-by-old:unanswered followed:crashes_follower fine:safe leader-unlisted:safe short:unknown gone-peer:unknown"; got != want {
		t.Errorf("StreamConsumers(ORDERS) = %s, want %s", got, want)
	}
	if got := x.StreamConsumers(StreamKey{"edge", "APP", "ORDERS"}); len(got) != 1 || got[0].Consumer != "fine" || got[0].Domain != "edge" {
		t.Errorf("StreamConsumers(edge ORDERS) = %+v", got)
	}
	if got := x.StreamConsumers(StreamKey{"", "APP", "NOPE"}); len(got) != 0 {
		t.Errorf("StreamConsumers(NOPE) = %+v, want none", got)
	}
	if got := x.StreamDomains("APP", "ORDERS"); strings.Join(got, ",") != ",edge" {
		t.Errorf("StreamDomains(ORDERS) = %q", got)
	}

	// A failed request to one server makes every consumer it is a peer of
	// unknown, and only those; one that concerned no server, every consumer.
	snap.Problems = []snapshot.Problem{{Server: "n2", Request: "JSZ", Err: "timeout"}}
	x = NewIndex(snap)
	if v, _ := x.Consumer(ConsumerKey{"", "APP", "ORDERS", "fine"}); v.Reset != findings.ResetUnknown || !v.Peers[1].Incomplete {
		t.Errorf("with n2's JSZ failed, fine is %s, peers %+v; want unknown", v.Reset, v.Peers)
	}
	if v, _ := x.Consumer(ConsumerKey{"edge", "APP", "ORDERS", "fine"}); v.Reset != findings.ResetSafe {
		t.Errorf("with n2's JSZ failed, edge's fine (no peer on n2) is %s, want safe", v.Reset)
	}
	snap.Problems = []snapshot.Problem{{Request: "permissions", Err: "violation"}}
	x = NewIndex(snap)
	if v, _ := x.Consumer(ConsumerKey{"edge", "APP", "ORDERS", "fine"}); v.Reset != findings.ResetUnknown {
		t.Errorf("after a permissions violation, %s; want unknown", v.Reset)
	}
}

func TestIndexOfFailedAudit(t *testing.T) {
	x := NewIndex(findings.Failed(errors.New("not connected"), version.DefaultFloor, "", time.Now(), 0).Snapshot)
	if v, found := x.Consumer(ConsumerKey{"", "APP", "S", "C"}); found || v.Reset != findings.ResetUnknown {
		t.Errorf("a failed audit found %v with %s", found, v.Reset)
	}
}
