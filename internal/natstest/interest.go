package natstest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// A stream or a consumer answers through its leader alone: the leader, once
// elected, subscribes to the stream's subjects or to the consumer's pull
// subject, and each route carries that interest to its peers a moment later.
// A create answers when the leader is elected, before its peers know: a
// JetStream publish sent through another server meanwhile gets "no
// responders", and a pull is dropped the same way. The waits below ask the
// server the client is connected to whether it knows someone subscribes,
// as it would route the message: its own subscriptions (SUBSZ) and what
// each route's peer asked for (ROUTEZ). Interest that comes over a gateway
// or a leafnode link is not looked at.

// WaitInterest waits up to timeout until the named server knows a
// subscriber in account (its name; the public key in operator mode, see
// AccountKey) to the literal subject: one of its own, JetStream's among
// them, or one a route brought from a peer. Its error says what the server
// knew last.
func (sys *System) WaitInterest(name, account, subject string, timeout time.Duration) error {
	s := sys.Server(name)
	nc, err := nats.Connect(sys.URL(name), sys.login(SysUser, SysPassword), s.tlsOption())
	if err != nil {
		return fmt.Errorf("interest in %s on %s: %w", subject, name, err)
	}
	defer nc.Close()
	id := nc.ConnectedServerId()
	return Eventually(timeout, func() error {
		known, err := interest(nc, id, account, subject)
		if err != nil {
			return fmt.Errorf("interest in %s on %s: %w", subject, name, err)
		}
		if known.local == 0 && len(known.routedFrom) == 0 {
			return fmt.Errorf("%s knows no subscriber to %s in account %s yet (routes to %v)", name, subject, account, known.routes)
		}
		return nil
	})
}

// WaitPullable waits up to timeout until a pull sent through the named
// server reaches the consumer's leader: the server knows the leader's
// subscription to the consumer's pull subject.
func (sys *System) WaitPullable(name, account, stream, consumer string, timeout time.Duration) error {
	return sys.WaitInterest(name, account, PullSubject(stream, consumer), timeout)
}

// PullSubject is the subject a pull request for the consumer goes to, to
// which only the consumer's leader subscribes.
func PullSubject(stream, consumer string) string {
	return fmt.Sprintf("$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, consumer)
}

// knownInterest is what one server knows of the subscribers to a subject.
type knownInterest struct {
	local      int      // its own subscriptions that match
	routedFrom []string // the peers whose route carries a matching one
	routes     []string // every peer it has a route to, one per route
}

// interest asks the server with the given id, over a system-account
// connection, for its subscriptions in account that match subject.
func interest(nc *nats.Conn, id, account, subject string) (*knownInterest, error) {
	var subsz server.ServerAPISubszResponse
	err := sysRequest(nc, "$SYS.REQ.SERVER."+id+".SUBSZ",
		server.SubszEventOptions{SubszOptions: server.SubszOptions{Account: account, Subscriptions: true, Test: subject}}, &subsz)
	if err != nil {
		return nil, err
	}
	if subsz.Error != nil || subsz.Data == nil {
		return nil, fmt.Errorf("SUBSZ: %v", subsz.Error)
	}
	var routez server.ServerAPIRoutezResponse
	err = sysRequest(nc, "$SYS.REQ.SERVER."+id+".ROUTEZ",
		server.RoutezEventOptions{RoutezOptions: server.RoutezOptions{SubscriptionsDetail: true}}, &routez)
	if err != nil {
		return nil, err
	}
	if routez.Error != nil || routez.Data == nil {
		return nil, fmt.Errorf("ROUTEZ: %v", routez.Error)
	}
	known := &knownInterest{local: subsz.Data.Total}
	for _, r := range routez.Data.Routes {
		known.routes = append(known.routes, r.RemoteName)
		for _, sd := range r.SubsDetail {
			if routedAccount(r.Account, sd) == account && server.SubjectMatchesFilter(subject, sd.Subject) {
				known.routedFrom = append(known.routedFrom, r.RemoteName)
				break
			}
		}
	}
	return known, nil
}

// routedAccount is the account of a subscription a route's peer asked for:
// the route's own account when the route is pinned to one, else the field
// before the subject in the key the server keeps it under ("R APP work.>"
// in 2.10.27 and 2.15.3 alike).
func routedAccount(routeAccount string, sd server.SubDetail) string {
	if routeAccount != "" {
		return routeAccount
	}
	fields := strings.Fields(sd.Sid)
	for i := 1; i < len(fields); i++ {
		if fields[i] == sd.Subject {
			return fields[i-1]
		}
	}
	return ""
}

// sysRequest sends a $SYS request that one server answers and decodes its
// reply into resp.
func sysRequest(nc *nats.Conn, subject string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	msg, err := nc.Request(subject, body, 2*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, resp); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	return nil
}
