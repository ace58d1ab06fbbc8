package releases

import (
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// The second axis of what each server version does: the replicated
// operations a stream's or consumer's RAFT leader proposes to its
// followers. The first axis, what a server does with an asset's config, is
// Features. A follower applies every committed entry of a group it runs;
// one whose apply switch has no case for the entry's op panics (before
// 2.15) or halts its replica (2.15 on). A follower the leader catches up
// from its snapshot applies that too, and rejects an encoding it does not
// know. Every citation is to the nats-server module at the tag named;
// ops_source_test.go reads every entryOp constant, the apply switches,
// their default branches and what each group's monitor does with an apply
// error, the flag check before a delete-range proposal, and the stream
// snapshot encodings, again at every tag it names and at the newest the
// module proxy serves.

// EntryOp is a replicated operation: the first byte of a JetStream RAFT
// entry, nats-server's entryOp (server/jetstream_cluster.go; "ONLY ADD TO
// THE END", so a value never changes meaning).
type EntryOp uint8

// The entry ops a leader proposes that some released version cannot
// apply. The others (0-14) are known to every release the audit judges.
const (
	// OpDeleteRange is deleteRangeOp: a run of deleted sequences. It
	// exists since 2.10 for catchups only (an internal message, never a
	// RAFT entry), and is a RAFT entry from 2.14.0.
	OpDeleteRange EntryOp = 15
	// OpBatchMsg and OpBatchCommitMsg are batchMsgOp and
	// batchCommitMsgOp: the messages of an atomic batch publish.
	OpBatchMsg       EntryOp = 16
	OpBatchCommitMsg EntryOp = 17
	// OpResetSeq is resetSeqOp: a consumer's RESET.
	OpResetSeq EntryOp = 18
)

// The outcomes of a follower applying a committed entry, beside Supported
// (it applies it).
const (
	// CrashesOnApply: the follower's apply switch has no case for the op
	// and panics ("JetStream Cluster Unknown group entry op type: N"); the
	// process exits. Restarted, it replays the entry from the group's log
	// and panics again, as long as the entry is there.
	CrashesOnApply Outcome = "crashes_on_apply"
	// HaltsReplica: the follower returns an error for the op, logs a
	// "critical write error" and turns its replica into an observer: the
	// server runs on, the group has one voting peer fewer.
	HaltsReplica Outcome = "halts_replica"
	// ResetsReplica: the follower logs the error as a warning and applies
	// on without what it could not apply; at the next entry, whose
	// sequence does not follow its store's, it resets its replica's
	// cluster state and is caught up again, from the same snapshot: a
	// loop. The server runs on; its copy never catches up.
	ResetsReplica Outcome = "resets_replica"
)

// StreamStateVersion is an encoding version of the stream snapshot a
// leader sends a follower it catches up: the byte after the magic of
// nats-server's binary stream state (server/store.go, streamStateVersion).
type StreamStateVersion uint8

// StateWithSources is streamStateVersionSources: the stream snapshot that
// also carries the stream's sourcing state (2.15.0 store.go:217-220).
const StateWithSources StreamStateVersion = 2

// OpHandling is what the followers of one version range do with an op.
type OpHandling struct {
	// From and Below bound the range [From, Below); a zero From is every
	// older version.
	From, Below version.Version
	Apply       Outcome
	// Evidence is the real-server test or the server source lines the row
	// rests on.
	Evidence string
}

// Proposing says whether and how a leader proposes an op.
type Proposing string

// The answers of ReplicatedOp.Proposes.
const (
	// NotProposed: this leader never proposes the op for this asset.
	NotProposed Proposing = "not_proposed"
	// ProposedOnRequest: the leader proposes it when a client asks (a
	// RESET, an atomic batch publish); nothing the audit sees says whether
	// one will.
	ProposedOnRequest Proposing = "on_request"
	// ProposedByItself: the leader proposes it without any client asking,
	// as soon as an ordinary condition holds (a gap in a mirror's origin,
	// the setup of a durable source).
	ProposedByItself Proposing = "by_itself"
)

// Proposal is one way a leader comes to propose an op.
type Proposal struct {
	// Since is the first release whose leaders propose it.
	Since version.Version
	// Flag, when set, is the feature flag (FeatureFlags) of the leader's
	// server that must be on.
	Flag string
	// Sourced: only for a consumer some stream reads through by durable
	// sourcing, which the consumer's own config does not show.
	Sourced bool
	// How is ProposedOnRequest or ProposedByItself.
	How Proposing
	// When says who makes the leader propose it and when, as operators
	// read it.
	When     string
	Evidence string
}

// ReplicatedOp is one row of the second axis: a replicated operation that
// some released version cannot apply, what each version range of followers
// does with it, and when a leader proposes it. A row with Snapshot set is
// the stream snapshot in an encoding some released version rejects, which
// a leader sends rather than proposes: the same questions, the same
// findings. The meta group is in no row: no release has brought a meta op
// that an older one cannot apply (ops_source_test.go holds every tag it
// reads to that).
type ReplicatedOp struct {
	// Name is a stable identifier, as findings and metrics write it.
	Name  string
	Title string
	Op    EntryOp
	// Snapshot, when set, makes the row one of the stream snapshot a
	// leader sends a follower it catches up (a RAFT snapshot entry, which
	// no entry op names) in that encoding; Op is then unused.
	Snapshot StreamStateVersion
	// GoName is the op's (or the encoding's) name in nats-server's source.
	GoName string
	// Kind is the asset whose RAFT group the op is proposed in.
	Kind AssetKind
	// Admits reports whether the leader of an asset with config c can
	// propose the op at all; nil is every asset of Kind.
	Admits func(c *AssetConfig) bool
	// Since is the first release whose followers apply it as a RAFT entry.
	Since version.Version
	// Source cites the case that applies it, at Since and at the newest
	// release read.
	Source string
	// Older is what each range of older followers does, oldest first;
	// together the ranges cover every version below Since.
	Older []OpHandling
	// Proposed lists the ways a leader proposes it.
	Proposed []Proposal
}

// unknownOpPanics and unknownOpErrors cite the default branches of the
// apply switches, which every op a follower has no case for reaches. The
// stream's switch is in applyStreamEntries in every release; the
// consumer's in applyConsumerEntries up to 2.15.2 and in
// applyConsumerMsgOpLocked from 2.15.3.
const (
	unknownOpPanics = "no case in the apply switch; its default panics " +
		"(stream, applyStreamEntries: 2.10.27 jetstream_cluster.go:3155-3156, 2.11.12 :3414-3415, 2.12.15 :4211-4212, 2.14.10 :4635-4636; " +
		"consumer, applyConsumerEntries: 2.10.27 :5109-5110, 2.11.12 :5538-5539, 2.12.15 :6884-6885, 2.14.10 :7424-7425)"
	unknownOpErrors = "no case in the apply switch; its default returns an error " +
		"(stream, applyStreamEntries: 2.15.0 jetstream_cluster.go:5440-5441, 2.15.3 :6056-6057; " +
		"consumer, applyConsumerEntries: 2.15.0 :8429-8430, 2.15.2 :8922-8923; applyConsumerMsgOpLocked: 2.15.3 :9398-9399); " +
		"the monitor logs a critical write error and makes the replica an observer " +
		"(monitorStream 2.15.3 :4760-4764, setWriteErrLocked stream.go:9905-9925; monitorConsumer :8608, :8618-8621, setWriteErrLocked :8395-8417)"
)

// UnknownOpOutcome is what a follower of the given version does with an op
// it has no case for: one a newer release brings. From v215 it answers
// with an error instead of a panic (unknownOpErrors).
func UnknownOpOutcome(v version.Version) OpHandling {
	if !v.AtLeast(v215) {
		return OpHandling{Below: v215, Apply: CrashesOnApply, Evidence: unknownOpPanics}
	}
	return OpHandling{From: v215, Apply: HaltsReplica, Evidence: unknownOpErrors}
}

// unknownMetaOp is what a member of the meta group does with a meta op its
// applyMetaEntries has no case for. No release has brought one yet (see
// ReplicatedOp); ops_source_test.go holds the default branch to this, so
// the first that does is judged from the line it will need.
func unknownMetaOp(v version.Version) OpHandling {
	if !v.AtLeast(v215) {
		return OpHandling{Below: v215, Apply: CrashesOnApply,
			Evidence: "applyMetaEntries' default panics (2.10.27 jetstream_cluster.go:2026-2027, 2.11.12 :2218-2219, 2.12.15 :2785-2786, 2.14.10 :3080-3081)"}
	}
	return OpHandling{From: v215, Apply: HaltsMeta,
		Evidence: "applyMetaEntries' default returns an error (2.15.0 jetstream_cluster.go:3558-3559, 2.15.3 :3973-3974); " +
			"monitorCluster sets a meta write error (2.15.3 :2537, :2554-2560): \"meta group critical write error\", step down, observer (:2047-2066)"}
}

// OlderFollowers is the handling of an op by the followers that predate
// it: they have no case for it, and the default branch of their apply
// switch decides (UnknownOpOutcome). seen, when set, is the real-server
// test that showed it.
func OlderFollowers(since version.Version, seen string) []OpHandling {
	crash, halt := UnknownOpOutcome(version.Version{}), UnknownOpOutcome(v215)
	out := []OpHandling{crash}
	if since.Compare(v215) > 0 {
		halt.Below = since
		out = append(out, halt)
	} else {
		out[0].Below = since
	}
	if seen != "" {
		out[0].Evidence = seen + "; " + out[0].Evidence
	}
	return out
}

// batchAllowed is a stream whose leader takes atomic batch publishes.
func batchAllowed(c *AssetConfig) bool { return c.AllowAtomicPublish }

// batchProposal is how a stream leader comes to propose an atomic batch's
// entries: a client publishes one, which the stream refuses unless it
// allows it.
var batchProposal = []Proposal{{
	Since: v212, How: ProposedOnRequest,
	When: "as the stream's leader when a client publishes an atomic batch (Nats-Batch-Id), which allow_atomic permits",
	Evidence: "encodeStreamMsgAllowCompressAndBatch (2.12.15 jetstream_cluster.go:9807-9840) from processJetStreamBatchMsg " +
		"(2.12.15 stream.go:6387, proposal :6795, refused without allow_atomic :6467; 2.14.0 :7079, :7425, :7147; 2.15.3 :7657, :8032, :7728)",
}}

// ReplicatedOps is the second axis of the table: every replicated operation
// a leader proposes that some released version cannot apply, and every
// encoding of the stream snapshot a leader sends that some released version
// rejects. Ops 0-14 are applied by every release from 2.10 on.
var ReplicatedOps = []ReplicatedOp{
	{
		Name: "delete_range", Title: "mirror delete range (deleteRangeOp)", Op: OpDeleteRange, GoName: "deleteRangeOp",
		Kind: KindStream, Since: v214,
		Admits: func(c *AssetConfig) bool { return c.Mirror != nil },
		Source: "2.14.0 jetstream_cluster.go:4053 (case deleteRangeOp in applyStreamEntries); 2.15.3 :5920",
		// Before 2.14 the op exists for catchups only (2.12.15
		// processCatchupMsg :10636-10641), so the apply switch has no case.
		Older: OlderFollowers(v214, "TestOpDeleteRangeFromAMirrorLeader (a 2.12.15 follower of a 2.15.3 mirror leader, "+
			"or of a 2.14.0 one with the flag set, panics; with the flag off it applies the gap)"),
		Proposed: []Proposal{{
			Since: v214, Flag: FlagRaftDeleteRange, How: ProposedByItself,
			When: "as the mirror's leader whenever its origin has a gap: deleted or expired messages, " +
				"or any message outside a filtered mirror's subjects",
			Evidence: "skipMsgs (2.14.0 stream.go:3327-3358, proposal :3338-3339; 2.15.3 :3737-3771, :3749-3750), " +
				"called by processInboundMirrorMsg (2.15.3 :3605) and setupMirrorConsumer (:4204); " +
				"without the flag the gap is proposed as empty streamMsgOp entries (:3753-3769); TestOpDeleteRangeFromAMirrorLeader",
		}},
	},
	{
		Name: "atomic_batch_msg", Title: "atomic batch message (batchMsgOp)", Op: OpBatchMsg, GoName: "batchMsgOp",
		Kind: KindStream, Since: v212, Admits: batchAllowed,
		Source: "2.12.15 jetstream_cluster.go:3923 (before the switch in applyStreamEntries); 2.15.3 :5744",
		// Only a follower that runs the stream receives it: 2.11.9 on
		// hold an allow_atomic stream offline (Features, atomic_batch).
		Older:    OlderFollowers(v212, "TestOpAtomicBatchOnALenientFollower (a 2.10.27 follower of an allow_atomic stream panics)"),
		Proposed: batchProposal,
	},
	{
		Name: "atomic_batch_commit", Title: "atomic batch commit (batchCommitMsgOp)", Op: OpBatchCommitMsg, GoName: "batchCommitMsgOp",
		Kind: KindStream, Since: v212, Admits: batchAllowed,
		Source:   "2.12.15 jetstream_cluster.go:3983 (before the switch in applyStreamEntries); 2.15.3 :5793",
		Older:    OlderFollowers(v212, ""),
		Proposed: batchProposal,
	},
	{
		Name: "consumer_reset", Title: "consumer RESET (resetSeqOp)", Op: OpResetSeq, GoName: "resetSeqOp",
		Kind: KindConsumer, Since: v214,
		Source: "2.14.0 jetstream_cluster.go:6780 (case resetSeqOp in applyConsumerEntries); 2.15.3 :9313 (applyConsumerMsgOpLocked)",
		Older:  OlderFollowers(v214, "TestConsumerResetAgainstMixedCluster (a 2.12.15 follower panics)"),
		Proposed: []Proposal{
			{
				Since: v214, How: ProposedOnRequest,
				When: "as the consumer's leader when an application sends $JS.API.CONSUMER.RESET",
				Evidence: "resetStartingSeqLocked (2.14.0 consumer.go:2793, proposal :2827-2832; 2.15.3 :2973, :3007-3012) " +
					"from the RESET handler (2.14.0 consumer.go:4474; 2.15.3 :4785)",
			},
			{
				// The re-create and the unanswered create reset a consumer
				// whose own config sets sourcing: the ones a mirror or a
				// source creates (2.14.0 stream.go:3491, :3919), which in a
				// cluster over a non-limits origin become replicated
				// durables (jetstream_cluster.go:9198-9207), or a client's.
				// The audit cannot see that field yet; it judges the
				// consumers a stream reads through (Sourced).
				Since: v214, How: ProposedByItself, Sourced: true,
				When: "as the consumer's leader when a stream that reads through it by durable sourcing sets up its source, " +
					"and, for a consumer whose config sets sourcing, when a create of it reaches the existing consumer again (a re-create) " +
					"and as the first leader of a create not answered yet",
				Evidence: "durable sourcing sends RESET instead of a consumer create (2.14.0 stream.go:3564-3590); " +
					"a re-create of an existing sourcing consumer resets it where it leads (2.14.0 jetstream_cluster.go:6150-6160; " +
					"2.15.3 :8134-8146, there only a client's re-create, :8140-8142); " +
					"the first leader of a sourcing consumer's unanswered create resets it instead of answering the create " +
					"(2.14.0 :6962-6963, :6994, :7007-7009; 2.15.3 :9532-9533, :9572, :9585-9587); " +
					"resetStartingSeqLocked proposes resetSeqOp where the consumer is replicated (2.14.0 consumer.go:2822-2832; 2.15.3 :3002-3012)",
			},
		},
	},
	SnapshotSources,
}

// SnapshotSources is the row of the stream snapshot that carries the
// stream's sourcing state. Only a stream with sources tracks that state
// (its store seeds it from the config's sources, never a mirror's), and a
// leader encodes it only once a source has delivered a message.
var SnapshotSources = ReplicatedOp{
	Name: "snapshot_sources", Title: "stream snapshot with sourcing state",
	Snapshot: StateWithSources, GoName: "streamStateVersionSources",
	Kind: KindStream, Since: v215,
	Admits: func(c *AssetConfig) bool { return len(c.Sources) > 0 },
	Source: "IsEncodedStreamState and DecodeStreamState accept version 2 (2.15.0 store.go:255-257, :262-266; 2.15.3 :256-258, :263-267)",
	Older: []OpHandling{
		{Below: v214, Apply: ResetsReplica,
			Evidence: "TestOpSnapshotWithSourcesToAnOldFollower (a 2.12.15 or 2.10.27 follower logs the rejection, then at the next message resets its replica " +
				"about once a second, and keeps the one message it had); " +
				"IsEncodedStreamState knows version 1 only (2.10.27 store.go:222-223, 2.12.15 :240-241), so the snapshot falls to json.Unmarshal, " +
				"which fails (2.12.15 jetstream_cluster.go:4231-4243); the monitor logs it as a warning and applies on (:3397), " +
				"at the next entry its sequence does not match and it resets its cluster state (errLastSeqMismatch, :3398-3415), to be caught up from the same snapshot"},
		{From: v214, Below: v215, Apply: HaltsReplica,
			Evidence: "TestOpSnapshotWithSourcesToAnOldFollower (a 2.14.10 follower logs \"critical write error: invalid character '*'\" and keeps the one message it had); " +
				"IsEncodedStreamState knows version 1 only (2.14.0 store.go:239-240, 2.14.10 :243-244), so json.Unmarshal fails (2.14.10 jetstream_cluster.go:4655-4668); " +
				"the monitor calls setWriteErr for the error (2.14.0 :3394, 2.14.10 :3801), which steps the replica down and makes it an observer (2.14.10 stream.go:9611-9631)"},
	},
	Proposed: []Proposal{{
		Since: v215, Flag: FlagSnapshotSources, How: ProposedByItself,
		When: "as the stream's leader whenever it catches up a follower from its snapshot: one that was down or fell behind while the leader compacted its log, or a new peer",
		Evidence: "stateSnapshotLocked encodes version 2 with the flag on (2.15.0 jetstream_cluster.go:12476-12486; 2.15.3 :13582-13592) " +
			"once a source has delivered (EncodedStreamState: 2.15.3 filestore.go:13190-13228, memstore.go:2661-2698; sources tracked from the config's sources: filestore.go:2294-2300, memstore.go:90-95); " +
			"the leader sends its last snapshot to a follower its log no longer reaches (sendSnapshotToFollower, 2.15.3 raft.go:4033), " +
			"which installs it as its own (2.14.10 raft.go:4711) and applies it; TestOpSnapshotWithSourcesToAnOldFollower",
	}},
}

// OpByValue returns the row of the given op, if the table has one.
func OpByValue(op EntryOp) (ReplicatedOp, bool) {
	for _, r := range ReplicatedOps {
		if r.Snapshot == 0 && r.Op == op {
			return r, true
		}
	}
	return ReplicatedOp{}, false
}

// HandlingBy returns what a follower of the given version does with the
// op. A version that is not one gets the worst outcome of every older
// range, as Feature.HandlingBy does.
func (o ReplicatedOp) HandlingBy(v version.Version) OpHandling {
	if v.IsZero() {
		worst := OpHandling{Apply: Supported}
		for _, h := range o.Older {
			if h.Apply.Rank() > worst.Apply.Rank() {
				worst = h
			}
		}
		if o.Snapshot == 0 {
			worst.Apply = CrashesOnApply // an op: the default branch of some release before it
		}
		return OpHandling{Apply: worst.Apply, Evidence: "version unreadable: the worst of every older range"}
	}
	if v.AtLeast(o.Since) {
		return OpHandling{From: o.Since, Apply: Supported, Evidence: o.Source}
	}
	// A pre-release sorts below its release: 2.14.0-RC.2 counts as older.
	for _, h := range o.Older {
		if !v.Before(h.From) && v.Before(h.Below) {
			return h
		}
	}
	return UnknownOpOutcome(v)
}

// OpOutcome is what a follower of the given version does with op. An op
// the table has no row for is one every release applies.
func OpOutcome(op EntryOp, followerVersion version.Version) OpHandling {
	if r, ok := OpByValue(op); ok {
		return r.HandlingBy(followerVersion)
	}
	return OpHandling{Apply: Supported, Evidence: "applied by every release from 2.10 on"}
}

// OpSet is a set of ReplicatedOps rows, by index.
type OpSet uint64

// Holds reports whether the set holds the row o.
func (s OpSet) Holds(o ReplicatedOp) bool {
	for i, r := range ReplicatedOps {
		if r.Name == o.Name {
			return s&(1<<i) != 0
		}
	}
	return false
}

// DetectOps returns the ops a leader of an asset of the given kind with
// config c can propose, whatever the leader's version and flags.
func DetectOps(kind AssetKind, c *AssetConfig) OpSet {
	if c == nil {
		return 0
	}
	var s OpSet
	for i, r := range ReplicatedOps {
		if r.Kind == kind && (r.Admits == nil || r.Admits(c)) {
			s |= 1 << i
		}
	}
	return s
}

// RunsReplica reports whether a server whose first-axis outcome for an
// asset is o runs its replica, and so applies the entries its leader
// proposes. A replica held offline or never loaded has no RAFT node there:
// it misses the group's entries instead (an axis-a finding).
func RunsReplica(o Outcome) bool {
	return o == Supported || o == IgnoredOnline
}

// FollowerOutcome is what a follower of the given version does with the op
// on an asset that uses features: the worst first-axis outcome of the
// features if one keeps it from running the replica, else the op's own.
func (o ReplicatedOp) FollowerOutcome(followerVersion version.Version, features FeatureSet) (Outcome, string) {
	for _, f := range features.Features() {
		if h := f.HandlingBy(followerVersion); !RunsReplica(h.Asset) {
			return h.Asset, fmt.Sprintf("%s: %s (%s), so it never applies %s", f.Name, h.Asset, h.Evidence, o.GoName)
		}
	}
	h := o.HandlingBy(followerVersion)
	return h.Apply, h.Evidence
}

// String is the op as nats-server's source and panics name it.
func (op EntryOp) String() string {
	if r, ok := OpByValue(op); ok {
		return fmt.Sprintf("%s (%d)", r.GoName, op)
	}
	return fmt.Sprintf("entry op %d", op)
}

// Verb is what a leader does with the row's entry: it proposes an op, and
// sends a snapshot to the follower it catches up.
func (o ReplicatedOp) Verb() string {
	if o.Snapshot != 0 {
		return "sends"
	}
	return "proposes"
}
