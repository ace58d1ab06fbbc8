// Package snapshot is what one audit saw, in plain data: the servers that
// answered (their versions, flags and API levels), the meta groups, every
// stream and consumer with its peers and leader, the leafnode links, and
// what went wrong asking. Collection fills a Snapshot; the rules, the
// what-ifs and the exporter read it. It holds no connection and no verdict,
// and imports only auditor/version and auditor/releases (a server's flags
// and an asset's needed level are read against the release tables).
//
// Files:
//   - snapshot.go: Snapshot, Server, Asset and what the servers show of
//     each asset (Observation), MetaGroup and its peer sets, LeafLink,
//     Problem, and the feature flags each server runs.
//   - pull.go: PullState, what a consumer's leader reports of who pulls it.
//   - accounts.go: how an account is named, by name or by public key.
//   - peerid.go: the RAFT peer ids by which servers name each other.
//   - expected.go: the counts by which collection waits and the rules
//     report servers missing.
//   - leaders.go: LeaderChange, a new leader the servers announced between
//     audits, and WithLeaders, a snapshot with such changes applied.
package snapshot
