// Package auditor audits the versions of every server in a NATS system over
// $SYS and holds them, and the leaders and peers of every JetStream asset,
// against a version floor.
//
// An audit has two halves that never mix: Collect asks the servers
// (collect.go: one STATSZ ping, then LEAFZ and JSZ to each server; merge.go
// folds the replicas' reports of each asset into one) and returns a plain
// Snapshot; Evaluate, pure, holds a Snapshot against a Policy and returns a
// Report of findings. The package knows nothing of Prometheus or of the
// command line.
package auditor
