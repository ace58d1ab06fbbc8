// Package auditor audits the versions of every server in a NATS system over
// $SYS and holds them, and the leaders and peers of every JetStream asset,
// against a version floor.
//
// An audit has two halves: Collect asks the servers and returns a plain
// Snapshot; Evaluate, pure, holds a Snapshot against a Policy and returns a
// Report of findings. Evaluate never touches NATS and Collect never judges;
// both count the servers the audit expects by the same rules (expected.go).
// The package knows nothing of Prometheus or of the command line.
//
// Its files, in the order an audit runs:
//
//   - requests.go: the $SYS subjects and the requests the audit sends;
//     replies.go and jsz.go: the projections of the replies it reads;
//     jszdecode.go: the decoder that fills jsz.go's in one pass, JSZ's
//     schema over the JSON scanner of internal/jsonscan.
//   - collect.go: Collect (one STATSZ ping, then LEAFZ and JSZ to each
//     server); merge.go folds the replicas' reports of each asset into one;
//     snapshot.go: what Collect returns.
//   - expected.go: who the audit expects, used by Collect to know when to
//     stop waiting and by Evaluate to report whom it waited for in vain;
//     peerid.go: the RAFT peer ids by which servers name each other.
//   - codes.go: the registry of finding codes (severity, owner under
//     --scope server, description); finding.go: Finding and Severity.
//   - evaluate.go: Evaluate and its rules (SERVER_MISSING's is in
//     expected.go); version.go: Version and the verdict against the floor; report.go: the
//     Report it returns; scope.go: a report narrowed to one server.
//   - reset.go: what $JS.API.CONSUMER.RESET does to a consumer; index.go:
//     the consumer index that answers it per consumer.
//   - features.go: the table of what each older server version does with
//     an asset using each newer feature; hazards.go: the crashes and stalls
//     no application asks for (an asset a server cannot decode, the RESETs
//     durable sourcing sends); acks.go: acks in the v2 format that an older
//     leader taking a consumer over never hears.
//   - observed.go: what the servers show beside what the tables say: a peer
//     its leader lists that does not run the asset, whatever the cause, and
//     one its leader has not heard from for longer than a catch-up.
//   - Before a rollout: levels.go: the JetStream API level of each released
//     version, for what-ifs; capability.go (with feature_levels.go): the
//     lowest level of each cluster, domain and asset group and the features
//     it allows; assume.go: a snapshot evaluated as if servers ran other
//     versions, and an audit after the change held to that prediction;
//     plan.go: the restart order of a rollout, each step a what-if.
//   - heartbeats.go: what the servers' $SYS events say changed since the
//     last audit; events.go: the same events handed to the audits running
//     (a server back while an audit waits for it, or gone). When audits
//     run, and what earlier ones saw, is the exporter's (internal/exporter).
package auditor
