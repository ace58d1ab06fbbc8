package collect

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	"github.com/nats-io/nats.go"
)

// permissionPoll is how often a running audit looks for a permissions
// violation on its connection: the server refuses a publish or subscribe
// asynchronously, with an -ERR that no request sees.
const permissionPoll = 20 * time.Millisecond

// PermissionError is a request or subscription of the audit that the
// server refused the user. It wraps nats.ErrPermissionViolation.
type PermissionError struct {
	// Op is "publish" or "subscribe"; Subject is the subject refused.
	Op, Subject string
	// Allow is the permission to grant, as docs/permissions.md spells
	// it; Server names the server a directed request was
	// for, when the audit knew it.
	Allow, Server string
	err           error
}

func (e *PermissionError) Error() string {
	what := e.Subject
	if e.Server != "" {
		what += " (the request to " + e.Server + ")"
	}
	return fmt.Sprintf("permissions violation: the server does not allow this user to %s to %s; allow %s to %q",
		e.Op, what, e.Op, e.Allow)
}

func (e *PermissionError) Unwrap() error { return e.err }

// violationRe reads nats-server's -ERR 'Permissions Violation for Publish
// to "subject"' (and for Subscription to).
var violationRe = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]+)"`)

// auditDenied returns the violation err names when it refuses one of the
// audit's own subjects (its requests, or its inbox), and nil otherwise: a
// refused event subscription is serve's to report, not an audit's.
func auditDenied(err error, inbox string, servers []snapshot.Server) *PermissionError {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	subject := m[2]
	if strings.EqualFold(m[1], "subscription") {
		if !strings.HasPrefix(subject, inbox+".") {
			return nil
		}
		return &PermissionError{Op: "subscribe", Subject: subject, Allow: inbox + ".>", err: err}
	}
	if subject == PingSubject {
		return &PermissionError{Op: "publish", Subject: subject, Allow: PingSubject, err: err}
	}
	rest, ok := strings.CutPrefix(subject, "$SYS.REQ.SERVER.")
	id, endpoint, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return nil
	}
	pe := &PermissionError{Op: "publish", Subject: subject, Allow: ServerSubject("*", endpoint), err: err}
	for _, s := range servers {
		if s.ID == id {
			pe.Server = s.Name
		}
	}
	return pe
}

// inboxPrefix is the prefix of nc's reply subjects.
func inboxPrefix(nc *nats.Conn) string {
	if p := nc.Opts.InboxPrefix; p != "" {
		return p
	}
	return strings.TrimSuffix(nats.InboxPrefix, ".")
}
