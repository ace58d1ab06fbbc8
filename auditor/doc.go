// Package auditor judges what an audit saw: Evaluate, pure, holds a
// snapshot.Snapshot (made by package collect, which asks the servers)
// against a Policy and returns a findings.Report; the what-ifs evaluate a
// snapshot as if servers ran other releases. Evaluate never touches NATS;
// the tables of what each release does are package releases'. The package
// knows nothing of Prometheus, HTTP or the command line.
//
// Its files:
//
//   - evaluate.go: Evaluate and rules, the ordered list of its rules it
//     walks; evaluation.go: one evaluation's state, adding and sorting
//     findings, the keys and wording the rules share; policy.go: Policy.
//   - servers.go: the rules on servers, clusters, the meta group and
//     leafnode links; assets.go: on each asset's leader, followers and API
//     levels; peerlevels.go: what a peer's release does with an asset's
//     level and features; narrow.go: a pattern that selects nothing;
//     expected.go: the servers the audit waited for in vain.
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
//     of a rollout, each step a what-if; the StatefulSet pods its
//     steps restart are auditor/statefulset's.
//
// When audits run, and what earlier ones saw, is the exporter's
// (cmd/nats-version-auditor/internal/exporter).
package auditor
