package collect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"
)

func TestAuditDenied(t *testing.T) {
	servers := []snapshot.Server{{ID: "NID1", Name: "n1"}}
	// As nats.go wraps the server's -ERR (processTransientError).
	violation := func(s string) error { return fmt.Errorf("%w: %s", nats.ErrPermissionViolation, s) }
	for _, tt := range []struct {
		name string
		err  error
		want string // "" for not the audit's
	}{
		{"JSZ", violation(`Permissions Violation for Publish to "$SYS.REQ.SERVER.NID1.JSZ"`),
			`permissions violation: the server does not allow this user to publish to $SYS.REQ.SERVER.NID1.JSZ (the request to n1); allow publish to "$SYS.REQ.SERVER.*.JSZ"`},
		{"the census's JSZ broadcast", violation(`Permissions Violation for Publish to "$SYS.REQ.SERVER.PING.JSZ"`),
			`permissions violation: the server does not allow this user to publish to $SYS.REQ.SERVER.PING.JSZ; allow publish to "$SYS.REQ.SERVER.*.JSZ"`},
		{"LEAFZ of a server not seen", violation(`Permissions Violation for Publish to "$SYS.REQ.SERVER.NID9.LEAFZ"`),
			`permissions violation: the server does not allow this user to publish to $SYS.REQ.SERVER.NID9.LEAFZ; allow publish to "$SYS.REQ.SERVER.*.LEAFZ"`},
		{"the ping", violation(`Permissions Violation for Publish to "$SYS.REQ.SERVER.PING"`),
			`permissions violation: the server does not allow this user to publish to $SYS.REQ.SERVER.PING; allow publish to "$SYS.REQ.SERVER.PING"`},
		{"the inbox", violation(`Permissions Violation for Subscription to "_INBOX.abc.*"`),
			`permissions violation: the server does not allow this user to subscribe to _INBOX.abc.*; allow subscribe to "_INBOX.>"`},
		{"an event subscription is serve's", violation(`Permissions Violation for Subscription to "$SYS.SERVER.*.STATSZ"`), ""},
		{"someone else's subject", violation(`Permissions Violation for Publish to "orders.new"`), ""},
		{"not a violation", errors.New(`Permissions Violation for Publish to "$SYS.REQ.SERVER.PING"`), ""},
		{"another error", nats.ErrTimeout, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := auditDenied(tt.err, "_INBOX", servers)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("got %q, want nil", got)
			case tt.want != "" && (got == nil || got.Error() != tt.want || !errors.Is(got, nats.ErrPermissionViolation)):
				t.Errorf("got %v, want %q wrapping nats.ErrPermissionViolation", got, tt.want)
			}
		})
	}
}
