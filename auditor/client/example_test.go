package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/natsaudit/nats-version-auditor/auditor/client"
)

// The "For application authors" example of docs/api.md, line for line
// (TestReadmeExampleCompiles, in the project's module under
// internal/clientdoc, holds them together): an application that
// resets its durables asks the auditor at start about every one of them,
// in one request, and again, from a fresh audit, right before each RESET.

func verifyNATSTopology(ctx context.Context, account, stream string, shardDurables []string) error {
	auditor := &client.Client{
		BaseURL:  "https://nats-version-auditor.nats.svc:7779",
		Username: "wavehouse", Password: os.Getenv("AUDITOR_PASSWORD"), // basic_auth_users, if set
		Domain: client.DefaultDomain, // JetStream without a domain; or client.InDomain("hub"), client.AnyDomain
		// MaxAge: 30 * time.Second is the default; HTTPClient: one with a TLSClientConfig, for a private CA
	}

	// At start, in verifyNATSTopology instead of ConnectedServerVersion():
	// every durable the process may reset, in one request.
	refs := make([]client.Ref, len(shardDurables))
	for i, durable := range shardDurables {
		refs[i] = client.Ref{Account: account, Stream: stream, Consumer: durable}
	}
	decisions, err := auditor.ConsumerResets(ctx, refs...)
	if err != nil {
		return fmt.Errorf("cannot ask the auditor whether RESET is safe: %w", err)
	}
	for i, d := range decisions {
		if !d.Safe() {
			return fmt.Errorf("RESET of %s is not safe: %s", refs[i], d) // crashes_follower: leader n2 runs 2.14.0 ...
		}
	}
	return resetOrphaned(ctx, auditor, account, stream, shardDurables[0])
}

func resetOrphaned(ctx context.Context, auditor *client.Client, account, stream, durable string) error {
	// And in ResetOrphaned, just before sending it: from an audit that
	// started after the question.
	fresh := *auditor
	fresh.Fresh = true
	if d, err := fresh.ConsumerReset(ctx, account, stream, durable); err != nil || !d.Safe() {
		return fmt.Errorf("not resetting %s > %s: %s", stream, durable, d) // retry later
	}
	return nil // send $JS.API.CONSUMER.RESET
}

// Example is docs/api.md's; it compiles with the package's tests and does
// not run (no auditor listens at that address).
func Example() {
	_ = verifyNATSTopology(context.Background(), "APP", "ORDERS", []string{"shard-0", "shard-1"})
}
