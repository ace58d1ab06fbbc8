// Package exporter is the runtime of `serve`, the auditor as a Prometheus
// exporter: the scheduler that shares audits between scrapes, events and
// API requests; the memory of servers gone quiet; the lazy connection to
// NATS; the watcher of the servers' $SYS events; the ear on who pulls
// the shards; the policy file read before
// each audit; and the HTTP handler with the metrics, health endpoints and
// JSON API. The audit itself is the auditor package's; the command wires
// this package to its flags.
//
// Files: schedule.go, the scheduler; memory.go, servers gone quiet;
// conn.go, the lazy connection; events.go, the $SYS events turned into
// audits; assets.go, the accounts' advisories of streams and consumers
// created, deleted and updated, turned into audits; pulls.go, who pulls, heard all the time; policy.go, the policy file; api.go, the JSON API; http.go, the
// metrics, health endpoints and landing page.
package exporter
