package snapshot

import (
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
)

func TestWithLeaders(t *testing.T) {
	peers := []string{"n1", "n2", "n3"}
	s := &Snapshot{
		Streams: []Asset{{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n1", Peers: peers}},
		Consumers: []Asset{
			{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "c", Leader: "n1", Peers: peers},
			{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "pinned", Leader: "n1", Peers: peers, Pull: &PullState{}},
		},
	}
	changes := []LeaderChange{
		{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "c", Leader: "n2"},
		{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "c", Leader: "n3"}, // later wins
		{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "pinned", Leader: "n2"},
		{Kind: releases.KindConsumer, Account: "APP", Stream: "S", Consumer: "new", Leader: "n2"}, // not held
		{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n4"},                    // not a peer
		{Kind: releases.KindStream, Account: "OTHER", Stream: "S", Leader: "n2"},                  // another account
	}
	out, unseen, stale := s.WithLeaders(changes)
	if got := out.Consumers[0].Leader; got != "n3" {
		t.Errorf("consumer c led by %s, want n3 (the later change)", got)
	}
	if got := out.Consumers[1].Leader; got != "n2" {
		t.Errorf("consumer pinned led by %s, want n2", got)
	}
	if got := out.Streams[0].Leader; got != "n1" {
		t.Errorf("stream led by %s, want n1: n4 is no peer of it", got)
	}
	if s.Consumers[0].Leader != "n1" || s.Consumers[1].Leader != "n1" {
		t.Errorf("the snapshot given was changed: %+v", s.Consumers)
	}
	var unseenLabels []string
	for _, c := range unseen {
		unseenLabels = append(unseenLabels, string(c.Kind)+" "+c.Label())
	}
	want := []string{"consumer APP > S > new", "stream APP > S", "stream OTHER > S"}
	if len(unseenLabels) != len(want) {
		t.Fatalf("unseen %v, want %v", unseenLabels, want)
	}
	for i := range want {
		if unseenLabels[i] != want[i] {
			t.Errorf("unseen[%d] = %s, want %s", i, unseenLabels[i], want[i])
		}
	}
	if len(stale) != 1 || stale[0].Consumer != "pinned" {
		t.Errorf("stale %+v, want the pinned consumer only: its pull state is its old leader's", stale)
	}

	// Nothing to apply: the asset lists are the snapshot's own.
	same, _, _ := s.WithLeaders([]LeaderChange{{Kind: releases.KindStream, Account: "APP", Stream: "S", Leader: "n1"}})
	if &same.Consumers[0] != &s.Consumers[0] {
		t.Error("consumers copied though no change applied to them")
	}
}
