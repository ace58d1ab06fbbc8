package natstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// apiRequest sends a JetStream API request and decodes the reply into resp,
// turning an API error in the reply into a Go error.
func apiRequest(nc *nats.Conn, subj string, req, resp any, timeout time.Duration) error {
	var body []byte
	if req != nil {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return err
		}
	}
	msg, err := nc.Request(subj, body, timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", subj, err)
	}
	var apiErr struct {
		Error *server.ApiError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &apiErr); err != nil {
		return fmt.Errorf("%s: %w", subj, err)
	}
	if apiErr.Error != nil {
		return fmt.Errorf("%s: %s", subj, apiErr.Error.Error())
	}
	if resp != nil {
		return json.Unmarshal(msg.Data, resp)
	}
	return nil
}

// AddStream creates a stream, retrying while a fresh cluster still drops
// JetStream requests, and while a meta leader just elected does not yet
// count every peer as placeable: seen once, a 2.15.3 leader elected amid
// duplicate-route churn answered "no suitable peers for placement" for a
// tag only its peers carry for more than 20 s.
func AddStream(nc *nats.Conn, cfg server.StreamConfig) error {
	return Eventually(60*time.Second, func() error {
		err := apiRequest(nc, "$JS.API.STREAM.CREATE."+cfg.Name, cfg, nil, 2*time.Second)
		if err != nil && isExists(err) {
			return nil
		}
		return err
	})
}

// UpdateStream changes a stream's config.
func UpdateStream(nc *nats.Conn, cfg server.StreamConfig) error {
	return apiRequest(nc, "$JS.API.STREAM.UPDATE."+cfg.Name, cfg, nil, 10*time.Second)
}

// DeleteConsumer deletes a consumer.
func DeleteConsumer(nc *nats.Conn, stream, consumer string) error {
	return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.DELETE.%s.%s", stream, consumer), nil, nil, 10*time.Second)
}

// AddConsumer creates a durable consumer.
func AddConsumer(nc *nats.Conn, stream string, cfg server.ConsumerConfig) error {
	req := server.CreateConsumerRequest{Stream: stream, Config: cfg}
	return Eventually(20*time.Second, func() error {
		return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.CREATE.%s.%s", stream, cfg.Durable), req, nil, 2*time.Second)
	})
}

func isExists(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "already in use") || strings.Contains(err.Error(), "already exists"))
}

// ConsumerInfo returns the consumer's info as its leader reports it.
func ConsumerInfo(nc *nats.Conn, stream, consumer string) (*server.ConsumerInfo, error) {
	var resp server.JSApiConsumerInfoResponse
	err := apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.INFO.%s.%s", stream, consumer), nil, &resp, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return resp.ConsumerInfo, nil
}

// MoveConsumerLeader steps the consumer's leader down in favour of
// preferred and waits until preferred leads with every peer current.
func MoveConsumerLeader(nc *nats.Conn, stream, consumer, preferred string) error {
	return moveLeader(nc, stream+"/"+consumer, fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, consumer), preferred,
		func() (*server.ClusterInfo, error) {
			ci, err := ConsumerInfo(nc, stream, consumer)
			if err != nil {
				return nil, err
			}
			return ci.Cluster, nil
		})
}

// MoveStreamLeader steps the stream's leader down in favour of preferred
// and waits until preferred leads with every peer current.
func MoveStreamLeader(nc *nats.Conn, stream, preferred string) error {
	return moveLeader(nc, stream, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, preferred, func() (*server.ClusterInfo, error) {
		var resp server.JSApiStreamInfoResponse
		if err := apiRequest(nc, "$JS.API.STREAM.INFO."+stream, nil, &resp, 2*time.Second); err != nil {
			return nil, err
		}
		return resp.Cluster, nil
	})
}

func moveLeader(nc *nats.Conn, what, stepdown, preferred string, cluster func() (*server.ClusterInfo, error)) error {
	req := map[string]any{"placement": map[string]any{"preferred": preferred}}
	return Eventually(30*time.Second, func() error {
		ci, err := cluster()
		if err != nil {
			return err
		}
		if ci != nil && ci.Leader == preferred {
			for _, r := range ci.Replicas {
				if !r.Current {
					return fmt.Errorf("peer %s of %s not current yet", r.Name, what)
				}
			}
			return nil
		}
		if err := apiRequest(nc, stepdown, req, nil, 2*time.Second); err != nil {
			// A 2.10 leader rejects a preferred placement as a bad
			// request; a plain step down moves the leadership somewhere.
			if err := apiRequest(nc, stepdown, nil, nil, 2*time.Second); err != nil {
				return err
			}
		}
		return fmt.Errorf("leader of %s is not %s yet", what, preferred)
	})
}

// ResetConsumer sends $JS.API.CONSUMER.RESET (new in 2.14) and returns what
// happened: nil when the leader answered, nats.ErrTimeout when nobody did.
func ResetConsumer(nc *nats.Conn, stream, consumer string, timeout time.Duration) error {
	return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.RESET.%s.%s", stream, consumer), struct{}{}, nil, timeout)
}

// JSZ asks every server for its JSZ with opts over a system account
// connection and returns the replies by server name, or an error when fewer
// than servers answered (none for wait).
func JSZ(sysConn *nats.Conn, opts server.JSzOptions, servers int, wait time.Duration) (map[string]*server.ServerAPIJszResponse, error) {
	body, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	msgs, err := Gather(sysConn, "$SYS.REQ.SERVER.PING.JSZ", body, servers, wait)
	if err != nil {
		return nil, err
	}
	out := map[string]*server.ServerAPIJszResponse{}
	for _, m := range msgs {
		var resp server.ServerAPIJszResponse
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return nil, err
		}
		if resp.Server != nil {
			out[resp.Server.Name] = &resp
		}
	}
	if len(out) < servers {
		return out, fmt.Errorf("%d of %d servers answered JSZ", len(out), servers)
	}
	return out, nil
}

// MoveMetaLeader steps the JetStream meta leader down in favour of preferred
// (over a system account connection) and waits until preferred leads and
// lists each of peers as a current, online member of the meta group. A
// leader elected amid route churn can lack a server in its peer set for
// longer than a test waits, and refuses to place an asset on it ("no
// suitable peers for placement, tags not matched ['node:n5']" for 30 s in
// one CI run, from selectPeerGroup, which walks only the group's peers).
func MoveMetaLeader(sysConn *nats.Conn, preferred string, peers ...string) error {
	req := map[string]any{"placement": map[string]any{"preferred": preferred}}
	return Eventually(60*time.Second, func() error {
		resp, err := metaLeaderJSZ(sysConn)
		if err != nil {
			return err
		}
		if resp.Server == nil || resp.Server.Name != preferred {
			leader := "none"
			if resp.Server != nil {
				leader = resp.Server.Name
			}
			if err := apiRequest(sysConn, "$JS.API.META.LEADER.STEPDOWN", req, nil, 2*time.Second); err != nil {
				// A leader that will not hand over to preferred ("no
				// replacement peer connected" for 60 s, seen once in 14
				// systems of 2.15.3, 2.14.0, 2.10.27 and 2.12.15 started at
				// once) is asked to step down to anyone: the next may.
				if err := apiRequest(sysConn, "$JS.API.META.LEADER.STEPDOWN", struct{}{}, nil, 2*time.Second); err != nil {
					return fmt.Errorf("meta leader %s does not step down: %w (its peers: %v)", leader, err, replicaNames(resp.Data))
				}
				return fmt.Errorf("meta leader %s would not hand over to %s (its peers: %v); asked it to step down", leader, preferred, replicaNames(resp.Data))
			}
			return fmt.Errorf("meta leader is %s, not %s yet", leader, preferred)
		}
		return metaPeersCurrent(resp.Data, preferred, peers)
	})
}

// MetaLeader names the JetStream meta leader, as the leader itself says:
// the one server that answers a leader_only JSZ. A test that removes or
// restarts a meta member cannot count on the leader it chose before: the
// group may elect another meanwhile.
func MetaLeader(sysConn *nats.Conn) (string, error) {
	resp, err := metaLeaderJSZ(sysConn)
	if err != nil {
		return "", err
	}
	if resp.Server == nil {
		return "", errors.New("the meta leader's JSZ names no server")
	}
	return resp.Server.Name, nil
}

// metaLeaderJSZ asks for the meta leader's JSZ: with leader_only only the
// meta leader answers.
func metaLeaderJSZ(nc *nats.Conn) (*server.ServerAPIJszResponse, error) {
	msg, err := nc.Request("$SYS.REQ.SERVER.PING.JSZ", []byte(`{"leader_only":true}`), 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("no meta leader answers: %w", err)
	}
	var resp server.ServerAPIJszResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("the meta leader's JSZ: %w", err)
	}
	return &resp, nil
}

// metaPeersCurrent says which of peers the meta leader's JSZ does not list
// as a current, online replica.
func metaPeersCurrent(js *server.JSInfo, leader string, peers []string) error {
	listed := map[string]bool{}
	if js != nil && js.Meta != nil {
		for _, r := range js.Meta.Replicas {
			if r != nil {
				listed[r.Name] = r.Current && !r.Offline
			}
		}
	}
	seen := replicaNames(js)
	for _, p := range peers {
		if p != leader && !listed[p] {
			return &notMetaPeerError{name: p, leader: leader, listed: seen}
		}
	}
	return nil
}

// replicaNames lists the meta group's replicas a leader's JSZ names.
func replicaNames(js *server.JSInfo) []string {
	var out []string
	if js != nil && js.Meta != nil {
		for _, r := range js.Meta.Replicas {
			if r != nil {
				out = append(out, fmt.Sprintf("%s(current=%v offline=%v)", r.Name, r.Current, r.Offline))
			}
		}
	}
	return out
}

// notMetaPeerError names a server the meta leader does not list as a
// current peer.
type notMetaPeerError struct {
	name, leader string
	listed       []string
}

func (e *notMetaPeerError) Error() string {
	return fmt.Sprintf("meta leader %s does not list %s as a current peer yet; it lists %v", e.leader, e.name, e.listed)
}

// Statsz pings every server reachable from nc, a system-account
// connection, and decodes the STATSZ replies of want of them.
func Statsz(nc *nats.Conn, want int, wait time.Duration) ([]server.ServerStatsMsg, error) {
	msgs, err := Gather(nc, "$SYS.REQ.SERVER.PING", []byte("{}"), want, wait)
	if err != nil {
		return nil, err
	}
	out := make([]server.ServerStatsMsg, len(msgs))
	for i, m := range msgs {
		if err := json.Unmarshal(m.Data, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
