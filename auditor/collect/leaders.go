package collect

import (
	"fmt"
	"strings"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"

	json "github.com/segmentio/encoding/json"
)

// The advisories a server publishes as a replicated stream or consumer
// elects a leader, with a copy in the system account that names the
// asset's account (2.15.2 jetstream_cluster.go:6330-6358, 9208-9237).
const (
	StreamLeaderElectedSubject   = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.>"
	ConsumerLeaderElectedSubject = "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.>"
)

// The advisories' types (jetstream_events.go:231, 279).
const (
	streamLeaderElectedType   = "io.nats.jetstream.advisory.v1.stream_leader_elected"
	consumerLeaderElectedType = "io.nats.jetstream.advisory.v1.consumer_leader_elected"
)

// leaderElected is the part of a LEADER_ELECTED advisory the auditor reads
// (jetstream_events.go:234-241, 282-290).
type leaderElected struct {
	Type     string    `json:"type"`
	Time     time.Time `json:"timestamp"` // server.TypedEvent (events.go:472-476)
	Account  string    `json:"account"`
	Stream   string    `json:"stream"`
	Consumer string    `json:"consumer"`
	Leader   string    `json:"leader"`
	Domain   string    `json:"domain"`
}

// ParseLeaderElected reads a LEADER_ELECTED advisory heard at heard. The
// copy in the system account names the asset's account; a copy without
// one, or with no leader, is an error, as is any other type.
func ParseLeaderElected(data []byte, heard time.Time) (snapshot.LeaderChange, error) {
	var adv leaderElected
	if err := json.Unmarshal(data, &adv); err != nil {
		return snapshot.LeaderChange{}, fmt.Errorf("leader elected advisory: %w", err)
	}
	c := snapshot.LeaderChange{Domain: adv.Domain, Account: adv.Account, Stream: adv.Stream, Leader: adv.Leader, Elected: adv.Time, Heard: heard}
	switch adv.Type {
	case streamLeaderElectedType:
		c.Kind = releases.KindStream
	case consumerLeaderElectedType:
		c.Kind, c.Consumer = releases.KindConsumer, adv.Consumer
	default:
		return c, fmt.Errorf("leader elected advisory: type %q", adv.Type)
	}
	var missing []string
	for _, f := range [][2]string{{"account", c.Account}, {"stream", c.Stream}, {"consumer", c.Consumer}, {"leader", c.Leader}} {
		if f[1] == "" && (f[0] != "consumer" || c.Kind == releases.KindConsumer) {
			missing = append(missing, f[0])
		}
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("leader elected advisory of %s without %s", c.Kind, strings.Join(missing, ", "))
	}
	return c, nil
}
