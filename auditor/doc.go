// Package auditor audits the versions of every server in a NATS system over
// $SYS and holds them, and the leaders and peers of every JetStream asset,
// against a version floor.
//
// An audit has two halves: Collect asks the servers and returns a plain
// snapshot.Snapshot; Evaluate, pure, holds it against a Policy and returns a
// findings.Report. Evaluate never touches NATS and Collect never judges;
// both count the servers the audit expects by the same rules (expected.go).
// The tables of what each release does are package releases'; the package
// knows nothing of Prometheus, HTTP or the command line.
//
// Its files, in the order an audit runs:
//
//   - requests.go: the $SYS subjects and the requests the audit sends;
//     replies.go and jsz.go: the projections of the replies it reads;
//     jszdecode.go: the decoder that fills jsz.go's in one pass, JSZ's
//     schema over the JSON scanner of auditor/internal/jsonscan;
//     pulldecode.go: what JSZ says of who pulls a consumer.
//   - collect.go: Collect (one STATSZ ping, then LEAFZ and JSZ to each
//     server); summaries.go: the census's JSZ counts; inflight.go: the
//     bound on reply bytes asked for and not yet read; permission.go: a
//     permissions violation seen while the audit runs; merge.go folds the
//     replicas' reports of each asset into one.
//   - heartbeats.go: what the servers' $SYS events say changed since the
//     last audit; events.go: the same events handed to the audits running
//     (a server back while an audit waits for it, or gone).
//   - expected.go: who the audit expects, used by Collect to know when to
//     stop waiting and by Evaluate to report whom it waited for in vain.
//   - evaluate.go: Policy, Evaluate and its rules on servers, clusters, the
//     meta group, asset leaders and followers, API levels and leafnodes;
//     narrow.go: the policy's asset patterns.
//   - hazards.go: the crashes and stalls no application asks for (an asset
//     a server cannot decode, the RESETs durable sourcing sends);
//     op_hazards.go: the replicated operations a follower cannot apply;
//     acks.go: acks in the v2 format that an older leader taking a consumer
//     over never hears; observed.go: what the servers show beside what the
//     tables say; shards.go: who pulls each consumer with a priority policy;
//     upgrade_path.go: the upgrade paths a changed server's move breaks.
//   - reset.go: what $JS.API.CONSUMER.RESET does to a consumer; index.go:
//     the consumer index that answers it per consumer.
//   - Before a rollout: capability.go: the lowest level of each cluster,
//     domain and asset group and the features it allows; assume.go: a
//     snapshot evaluated as if servers ran other versions, and an audit
//     after the change held to that prediction; plan.go: the restart order
//     of a rollout, each step a what-if.
//
// When audits run, and what earlier ones saw, is the exporter's
// (cmd/nats-version-auditor/internal/exporter).
package auditor
