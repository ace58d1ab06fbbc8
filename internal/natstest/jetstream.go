package natstest

import (
	"encoding/json"
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
// JetStream requests.
func AddStream(nc *nats.Conn, cfg server.StreamConfig) error {
	return Eventually(20*time.Second, func() error {
		err := apiRequest(nc, "$JS.API.STREAM.CREATE."+cfg.Name, cfg, nil, 2*time.Second)
		if err != nil && isExists(err) {
			return nil
		}
		return err
	})
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
	req := map[string]any{"placement": map[string]any{"preferred": preferred}}
	subj := fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", stream, consumer)
	return Eventually(30*time.Second, func() error {
		ci, err := ConsumerInfo(nc, stream, consumer)
		if err != nil {
			return err
		}
		if ci.Cluster != nil && ci.Cluster.Leader == preferred {
			for _, r := range ci.Cluster.Replicas {
				if !r.Current {
					return fmt.Errorf("peer %s of %s/%s not current yet", r.Name, stream, consumer)
				}
			}
			return nil
		}
		if err := apiRequest(nc, subj, req, nil, 2*time.Second); err != nil {
			return err
		}
		return fmt.Errorf("leader of %s/%s is not %s yet", stream, consumer, preferred)
	})
}

// ResetConsumer sends $JS.API.CONSUMER.RESET (new in 2.14) and returns what
// happened: nil when the leader answered, nats.ErrTimeout when nobody did.
func ResetConsumer(nc *nats.Conn, stream, consumer string, timeout time.Duration) error {
	return apiRequest(nc, fmt.Sprintf("$JS.API.CONSUMER.RESET.%s.%s", stream, consumer), struct{}{}, nil, timeout)
}

// MoveMetaLeader steps the JetStream meta leader down in favour of preferred
// (over a system account connection) and waits until preferred leads.
func MoveMetaLeader(sysConn *nats.Conn, preferred string) error {
	req := map[string]any{"placement": map[string]any{"preferred": preferred}}
	return Eventually(30*time.Second, func() error {
		// With leader_only only the meta leader answers JSZ.
		msg, err := sysConn.Request("$SYS.REQ.SERVER.PING.JSZ", []byte(`{"leader_only":true}`), 2*time.Second)
		if err != nil {
			return err
		}
		var resp server.ServerAPIJszResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			return err
		}
		if resp.Server != nil && resp.Server.Name == preferred {
			return nil
		}
		if err := apiRequest(sysConn, "$JS.API.META.LEADER.STEPDOWN", req, nil, 2*time.Second); err != nil {
			return err
		}
		return fmt.Errorf("meta leader is not %s yet", preferred)
	})
}
