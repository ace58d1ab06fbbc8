package collect_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestCollectPagesOverAccounts puts more JetStream accounts on a server than
// one JSZ page holds and checks that the assets of every account are found,
// with one request per page and none per asset, in plain and operator mode.
func TestCollectPagesOverAccounts(t *testing.T) {
	tests := []struct {
		name      string
		version   string
		extra     int // accounts besides APP
		pageSize  int
		withAsset []string // accounts given a stream and a consumer
		pages     int
	}{
		{"small pages", natstest.Floor, 7, 3, []string{"ACC0001", "ACC0003", "ACC0004", "ACC0006", "ACC0007", "APP"}, 3},
		{"default page", natstest.Floor, 1030, 0, []string{"ACC0001", "ACC1024", "ACC1025", "ACC1030", "APP"}, 2},
		// 2.10 sends no total and leaves its first page unsorted: one full
		// page, then every account in one.
		{"2.10 without a total", natstest.NoLevels, 7, 3, []string{"ACC0001", "ACC0003", "ACC0004", "ACC0006", "ACC0007", "APP"}, 2},
		// 2.10 takes a limit of 0 as 1024: every account at once is asked
		// by number, or the accounts past the 1024th go unseen.
		{"2.10 past 1024 accounts", natstest.NoLevels, 1030, 0, []string{"ACC0001", "ACC1025", "ACC1030", "APP"}, 2},
		// 9 accounts in pages of 3: the third page ends the paging by the
		// total, with no empty fourth.
		{"pages that divide the accounts", natstest.Floor, 8, 3, []string{"ACC0001", "ACC0008", "APP"}, 3},
	}
	for _, mode := range natstest.Modes {
		for _, tt := range tests {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				sys := mode.Start(t, natstest.Spec{Name: "solo", Version: tt.version, JetStream: true, ExtraAccounts: tt.extra})
				// In operator mode a server only validates the preloaded JWTs at
				// start (server.go checkResolvePreloads) and loads an account at
				// its first use, and JSZ lists the JetStream accounts loaded
				// (monitor.go Jsz, js.accounts): a connection to each puts them
				// all on the pages, as plain mode has them from the start.
				if mode == natstest.Operator {
					for i := 1; i <= tt.extra; i++ {
						sys.Connect("solo", fmt.Sprintf("acc%04d", i), "acc").Close()
					}
				}
				// JSZ names an account by its id: the name in plain mode, the
				// public key in operator mode, with the JWT's name beside it.
				var want []string
				names := map[string]string{}
				for _, acc := range tt.withAsset {
					user, pass := natstest.AppUser, natstest.AppPassword
					if acc != "APP" {
						user, pass = "acc"+acc[3:], "acc"
					}
					key := sys.AccountKey(user)
					want = append(want, key)
					if mode == natstest.Operator {
						names[key] = acc
					}
					nc := sys.Connect("solo", user, pass)
					if err := natstest.AddStream(nc, server.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: server.MemoryStorage}); err != nil {
						t.Fatal(err)
					}
					if err := natstest.AddConsumer(nc, "S", server.ConsumerConfig{Durable: "C", AckPolicy: server.AckExplicit}); err != nil {
						t.Fatal(err)
					}
				}
				slices.Sort(want)

				nc := sys.Connect("solo", natstest.SysUser, natstest.SysPassword)
				snap, err := collect.Collect(context.Background(), nc, collect.Options{JSZPageSize: tt.pageSize})
				if err != nil {
					t.Fatal(err)
				}
				if len(snap.Problems) != 0 {
					t.Fatalf("problems: %+v", snap.Problems)
				}
				var got []string
				for _, c := range snap.Consumers {
					if slices.Contains(got, c.Account) {
						continue // a 2.10 server's first page is asked again
					}
					got = append(got, c.Account)
					if c.Leader != "solo" || len(c.Peers) != 1 {
						t.Errorf("consumer %s: leader %q peers %v, want solo alone", c.Account, c.Leader, c.Peers)
					}
					if c.AccountName != names[c.Account] {
						t.Errorf("consumer of account %s: account name %q, want %q", c.Account, c.AccountName, names[c.Account])
					}
				}
				slices.Sort(got)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("consumers found in %v, want %v (%v)", got, want, tt.withAsset)
				}
				// One STATSZ ping, then LEAFZ, the JSZ counts and the JSZ pages
				// of the one server.
				if want := 1 + 1 + 1 + tt.pages; snap.Requests != want {
					t.Errorf("%d requests, want %d", snap.Requests, want)
				}
			})
		}
	}
}
