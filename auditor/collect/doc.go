// Package collect is the audit's NATS I/O: it asks every server over $SYS
// (STATSZ, then LEAFZ and JSZ from each), decodes the replies into its own
// projections, folds the replicas' reports of each asset into one, and
// returns a plain snapshot.Snapshot. It never judges: the rules are package
// auditor's, which imports this one. Both count the servers the audit
// expects by the same arithmetic (snapshot.AnsweredIn, snapshot.StaleCount).
//
// Files:
//   - collect.go: Collect and Options; the collection that waits until
//     everyone expected has answered or the wait is over.
//   - requests.go: every $SYS subject the audit asks or listens on, and its
//     requests.
//   - replies.go: the projections of STATSZ, LEAFZ, the server events and
//     the error replies.
//   - jsz.go: the projection of JSZ; jszdecode.go: its one-pass decoder over
//     the JSON scanner of internal/jsonscan; pulldecode.go: what JSZ says
//     of who pulls a consumer with a priority policy.
//   - summaries.go: the census's JSZ counts, asked once by broadcast;
//     drift.go: the same counts asked again and held against an audit's.
//   - reread.go: the JSZ of the accounts that hold shards, asked again of
//     every server between full audits (RereadPulls).
//   - inflight.go: the bound on JSZ reply bytes asked for and not yet read,
//     and the pages JSZ is asked in.
//   - pullwatch.go: who pulls each consumer, heard through the system
//     account's imports of the accounts' pull requests, named by CONNZ.
//   - assets.go: where the system account imports the accounts' advisories
//     of streams and consumers created, deleted and updated.
//   - permission.go: a permissions violation on the audit's connection.
//   - merge.go: the replicas' reports of each stream and consumer folded
//     into one; FromJSZ, the same from recorded replies.
//   - heartbeats.go: what the servers' $SYS events say changed since the
//     last audit; events.go: those events handed to the audits running.
//   - leaders.go: the LEADER_ELECTED advisories of streams and consumers,
//     read into snapshot.LeaderChange.
package collect
