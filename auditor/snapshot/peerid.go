package snapshot

import (
	"crypto/sha256"
	"strings"
)

// UnknownPeerPrefix starts the name a server gives a RAFT peer it cannot
// name yet: "Server name unknown at this time (peerID: <id>)"
// (jetstream_cluster.go, clusterInfo, 2.12 to 2.15).
const UnknownPeerPrefix = "Server name unknown at this time (peerID: "

// UnknownPeerID returns the RAFT peer id in such a name.
func UnknownPeerID(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, UnknownPeerPrefix)
	if !ok {
		return "", false
	}
	return strings.TrimSuffix(id, ")"), true
}

// PeerID is the RAFT peer id nats-server derives from a server name
// (events.go, getHash: the first 8 bytes of its SHA-256, each mapped onto
// base-62 digits).
func PeerID(name string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(name))
	b := make([]byte, 8)
	for i := range b {
		b[i] = digits[int(sum[i]%62)]
	}
	return string(b)
}
