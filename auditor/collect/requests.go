package collect

import (
	"fmt"

	"github.com/nats-io/nats.go"
	json "github.com/segmentio/encoding/json"
)

// The $SYS subjects the auditor uses, each spelled here only (nats-server
// server/events.go names them in its comments).
const (
	// PingSubject is serverStatsPingReqSubj: every server answers it with
	// its STATSZ on the reply subject or, when there is none, publishes its
	// STATSZ heartbeat on StatszEventSubject at once (statszReq).
	PingSubject = "$SYS.REQ.SERVER.PING"
	// serverSubject is serverDirectReqSubj: server id, endpoint.
	serverSubject = "$SYS.REQ.SERVER.%s.%s"
	// pingEndpointSubject is serverPingReqSubj: an endpoint asked of every
	// server at once.
	pingEndpointSubject = PingSubject + ".%s"
)

// The system-account events the auditor follows (serverStatsSubj,
// shutdownEventSubj, lameDuckEventSubj, connectEventSubj and
// disconnectEventSubj, with the server id or account as a wildcard). Every
// server publishes a STATSZ heartbeat (first after 250 ms, backing off to
// every 10 s by default), a SHUTDOWN as it stops, a LAMEDUCK as it enters
// lame duck mode, and an account CONNECT or DISCONNECT for each client and
// leafnode connection.
const (
	StatszEventSubject     = "$SYS.SERVER.*.STATSZ"
	ShutdownEventSubject   = "$SYS.SERVER.*.SHUTDOWN"
	LameDuckEventSubject   = "$SYS.SERVER.*.LAMEDUCK"
	ConnectEventSubject    = "$SYS.ACCOUNT.*.CONNECT"
	DisconnectEventSubject = "$SYS.ACCOUNT.*.DISCONNECT"
)

// EventSubjects are the event subscriptions a watcher of the servers' events
// needs, in the order docs/permissions.md lists them.
var EventSubjects = []string{StatszEventSubject, ShutdownEventSubject, LameDuckEventSubject, ConnectEventSubject, DisconnectEventSubject,
	StreamLeaderElectedSubject, ConsumerLeaderElectedSubject}

// ServerSubject is the subject of a request for endpoint (STATSZ, LEAFZ,
// JSZ, ...) directed at the server with that id.
func ServerSubject(id, endpoint string) string {
	return fmt.Sprintf(serverSubject, id, endpoint)
}

// PingEndpointSubject is the subject of a request for endpoint that every
// server answers.
func PingEndpointSubject(endpoint string) string {
	return fmt.Sprintf(pingEndpointSubject, endpoint)
}

// jszRequest is server.JSzOptions: every account with its streams,
// consumers and their configs, a page of accounts at a time, or Account's.
type jszRequest struct {
	Account  string `json:"account,omitempty"`
	Accounts bool   `json:"accounts,omitempty"`
	Streams  bool   `json:"streams,omitempty"`
	Consumer bool   `json:"consumer,omitempty"`
	Config   bool   `json:"config,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// jszPage asks for one page of accounts from offset on.
func jszPage(offset, limit int) jszRequest {
	return jszRequest{Accounts: true, Streams: true, Consumer: true, Config: true, Offset: offset, Limit: limit}
}

// pingRequest is the census: every server answers on inbox with its STATSZ.
func pingRequest(inbox string) *nats.Msg {
	m := nats.NewMsg(PingSubject)
	m.Reply = inbox
	m.Data = []byte("{}")
	return m
}

// summaryPing asks every server at once for its JSZ without accounts (the
// counts that size its pages), replies on inbox. PING fills the server id's
// place in the subject, so the directed JSZ's permission allows it.
func summaryPing(inbox string) *nats.Msg {
	m := nats.NewMsg(PingEndpointSubject("JSZ"))
	m.Reply = inbox
	m.Data = []byte("{}") // jszSummaryRequest
	return m
}

// serverRequest is a request of endpoint to one server, body encoded as
// JSON; compress asks it for a snappy-compressed reply.
func serverRequest(id, endpoint string, body any, compress bool) (*nats.Msg, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(ServerSubject(id, endpoint))
	m.Data = data
	if compress {
		m.Header.Set("Accept-Encoding", "snappy")
	}
	return m, nil
}
