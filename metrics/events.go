package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The kinds of server event EventStats counts (the event label).
const (
	EventStatsz         = "statsz"
	EventShutdown       = "shutdown"
	EventLameDuck       = "lameduck"
	EventLeafConnect    = "leafnode_connect"
	EventLeafDisconnect = "leafnode_disconnect"
	// A replicated stream's or consumer's LEADER_ELECTED advisory.
	EventStreamLeaderElected   = "stream_leader_elected"
	EventConsumerLeaderElected = "consumer_leader_elected"
	// A stream's or consumer's CREATED or DELETED advisory, or a stream's
	// UPDATED, heard where the system account imports them.
	EventAssetChanged = "asset_changed"
)

var eventKinds = []string{EventStatsz, EventShutdown, EventLameDuck, EventLeafConnect, EventLeafDisconnect,
	EventStreamLeaderElected, EventConsumerLeaderElected, EventAssetChanged}

// EventStats is what serve's watcher of the servers' system-account events
// reports.
type EventStats struct {
	// Up is true while every event subscription is allowed and events
	// arrive on the current connection.
	Up bool
	// Received counts the events received by kind (Event*).
	Received map[string]uint64
	// Audits counts the audits events started.
	Audits uint64
}

var (
	eventsUpDesc = desc("events_up", "1 while serve receives the servers' $SYS events and audits on them; 0 when a subscription was refused "+
		"or NATS is unreachable: verdicts then follow scrapes only, at most once per --audit.min-interval.")
	eventsReceivedDesc = desc("events_received_total", "Server events received, by kind.", "event")
	eventAuditsDesc    = desc("event_audits_total", "Audits started because a server event asked for one.")
)

// EventCollector exports EventStats as const metrics.
type EventCollector struct {
	stats func() EventStats
}

// NewEventCollector returns a collector of the stats stats returns.
func NewEventCollector(stats func() EventStats) *EventCollector {
	return &EventCollector{stats: stats}
}

// Describe sends the descriptors of every metric the collector may send.
func (c *EventCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- eventsUpDesc
	ch <- eventsReceivedDesc
	ch <- eventAuditsDesc
}

// Collect sends the current stats.
func (c *EventCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	up := 0.0
	if s.Up {
		up = 1
	}
	gauge(ch, eventsUpDesc, up)
	for _, kind := range eventKinds {
		ch <- prometheus.MustNewConstMetric(eventsReceivedDesc, prometheus.CounterValue, float64(s.Received[kind]), kind)
	}
	ch <- prometheus.MustNewConstMetric(eventAuditsDesc, prometheus.CounterValue, float64(s.Audits))
}
