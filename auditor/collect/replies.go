package collect

import (
	"errors"
	"fmt"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	json "github.com/segmentio/encoding/json"
)

// The $SYS replies an audit reads, projected onto the fields it uses. The
// JSON names are nats-server's own (events.go, monitor.go,
// jetstream_errors.go); the projection tests decode live replies of every
// version both ways and compare. Nothing of ours outside the tests imports
// nats-server: decoding into its types would tie every reply to that
// 140,000-line package's release. The binary still links it, through
// jsm.go's natscontext, which reads natscli's contexts.

// serverInfo is server.ServerInfo: who sent a reply.
type serverInfo struct {
	Name      string    `json:"name"`
	Host      string    `json:"host"`
	ID        string    `json:"id"`
	Cluster   string    `json:"cluster,omitempty"`
	Domain    string    `json:"domain,omitempty"`
	Version   string    `json:"ver"`
	Tags      []string  `json:"tags,omitempty"`
	JetStream bool      `json:"jetstream"`
	Flags     uint64    `json:"flags"`
	Time      time.Time `json:"time"`
	// FeatureFlags is sent from 2.14.0 (events.go:258, filled :541).
	FeatureFlags map[string]bool `json:"feature_flags,omitempty"`
}

// jetStreamEnabled is server.ServerInfo.JetStreamEnabled: the capability
// flag, or the boolean older servers set.
func (si *serverInfo) jetStreamEnabled() bool {
	const jetStreamEnabled = 1 // server.JetStreamEnabled, the first capability bit
	return si.Flags&jetStreamEnabled != 0 || si.JetStream
}

// statszReply is server.ServerStatsMsg.
type statszReply struct {
	Server serverInfo `json:"server"`
	Stats  struct {
		Start         time.Time   `json:"start"`
		Routes        []namedPeer `json:"routes,omitempty"`
		Gateways      []namedPeer `json:"gateways,omitempty"`
		ActiveServers int         `json:"active_servers,omitempty"`
		JetStream     *struct {
			Stats *struct {
				API struct {
					Level int `json:"level"`
				} `json:"api"`
			} `json:"stats,omitempty"`
		} `json:"jetstream,omitempty"`
	} `json:"statsz"`
}

// namedPeer is the name of a server.RouteStat or GatewayStat.
type namedPeer struct {
	Name string `json:"name"`
}

// replicaPeer is a server.PeerInfo of an asset's RAFT group: its name, and,
// as the group's leader sees it, whether it is current and how long since
// the leader last heard from it (Active, in nanoseconds; 0 when it never
// has: clusterInfo, 2.14.0 jetstream_cluster.go:10673-10692).
type replicaPeer struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Active  int64  `json:"active"`
}

// leafzReply is server.ServerAPILeafzResponse.
type leafzReply struct {
	Data *struct {
		Leafs []*struct {
			Name    string `json:"name"`
			Account string `json:"account"`
		} `json:"leafs"`
	} `json:"data,omitempty"`
	Error *apiError `json:"error,omitempty"`
}

// clusterInfo is server.ClusterInfo: an asset's RAFT group as one of its
// peers reports it.
type clusterInfo struct {
	Leader   string         `json:"leader,omitempty"`
	Replicas []*replicaPeer `json:"replicas,omitempty"`
}

// metaClusterInfo is server.MetaClusterInfo.
type metaClusterInfo struct {
	Name     string      `json:"name,omitempty"`
	Leader   string      `json:"leader,omitempty"`
	Replicas []*metaPeer `json:"replicas,omitempty"`
	Size     int         `json:"cluster_size"`
}

// metaPeer is a server.PeerInfo of the meta group: its name, and its RAFT
// peer id, by which a peer the reporter cannot name yet is still told
// apart from a server that is no peer at all.
type metaPeer struct {
	Name string `json:"name"`
	Peer string `json:"peer,omitempty"`
}

// apiError is server.ApiError, an error a server returns in a reply.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     uint16 `json:"err_code,omitempty"`
	Description string `json:"description,omitempty"`
}

// Error reads as server.ApiError's does.
func (e *apiError) Error() string {
	return fmt.Sprintf("%s (%d)", e.Description, e.ErrCode)
}

// connectEvent is server.ConnectEventMsg and server.DisconnectEventMsg: a
// connection that came or went on a server.
type connectEvent struct {
	Server serverInfo `json:"server"`
	Client clientInfo `json:"client"`
}

// clientInfo is server.ClientInfo.
type clientInfo struct {
	Name    string `json:"name,omitempty"`
	Account string `json:"acc,omitempty"`
	// Kind is "Client", "Leafnode", ... (kindStringMap in client.go).
	Kind string `json:"kind,omitempty"`
}

// parseStatsz decodes a STATSZ reply into the server it describes.
func parseStatsz(data []byte) (*statszReply, snapshot.Server, error) {
	var msg statszReply
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, snapshot.Server{}, fmt.Errorf("malformed reply: %w", err)
	}
	si := msg.Server
	srv := snapshot.Server{ID: si.ID, Name: si.Name, Host: si.Host, Cluster: si.Cluster, Domain: si.Domain,
		Tags: si.Tags, JetStream: si.jetStreamEnabled(), ActiveServers: msg.Stats.ActiveServers,
		FeatureFlags: si.FeatureFlags}
	srv.SetVersion(si.Version)
	if si.ID == "" || si.Name == "" {
		return nil, srv, errors.New("reply names no server")
	}
	if js := msg.Stats.JetStream; js != nil && js.Stats != nil {
		srv.APILevel = js.Stats.API.Level
	}
	if !msg.Stats.Start.IsZero() && !si.Time.IsZero() {
		srv.Uptime = si.Time.Sub(msg.Stats.Start)
	}
	return &msg, srv, nil
}
