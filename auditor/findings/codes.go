package findings

// The finding codes, each registered in Codes.
const (
	ServerBelowFloor          Code = "SERVER_BELOW_FLOOR"
	ClusterMixedVersions      Code = "CLUSTER_MIXED_VERSIONS"
	ConsumerLeaderBelowFloor  Code = "CONSUMER_LEADER_BELOW_FLOOR"
	ConsumerReplicaBelowFloor Code = "CONSUMER_REPLICA_BELOW_FLOOR"
	ConsumerNoLeader          Code = "CONSUMER_NO_LEADER"
	StreamLeaderBelowFloor    Code = "STREAM_LEADER_BELOW_FLOOR"
	MetaLeaderBelowFloor      Code = "META_LEADER_BELOW_FLOOR"
	AssetAPILevelUnsupported  Code = "ASSET_API_LEVEL_UNSUPPORTED"
	// AssetCrashesServer: a server of the asset's JetStream domain cannot
	// decode its config and crashes on it, whether it hosts it or not.
	AssetCrashesServer Code = "ASSET_CRASHES_SERVER"
	// AssetHaltsMeta: a server of the asset's JetStream domain cannot
	// decode its config and stops applying the meta group's log (2.15.0 to
	// 2.15.2, releases.UndecodableValue).
	AssetHaltsMeta Code = "ASSET_HALTS_META"
	// SourcingResetUnanswered: a mirror or source sends RESET by itself to
	// an origin consumer whose leader does not answer it: it stalls.
	SourcingResetUnanswered Code = "SOURCING_RESET_UNANSWERED"
	// SourcingResetCrashesFollower: a mirror or source sends RESET by
	// itself to an origin consumer with a follower that crashes on it.
	SourcingResetCrashesFollower Code = "SOURCING_RESET_CRASHES_FOLLOWER"
	LeafnodeUnaudited            Code = "LEAFNODE_UNAUDITED"
	ServerMissing                Code = "SERVER_MISSING"
	VersionUnparseable           Code = "VERSION_UNPARSEABLE"
	AuditIncomplete              Code = "AUDIT_INCOMPLETE"
	APILevelUnknown              Code = "API_LEVEL_UNKNOWN"
	// FeatureFlagsRefused: only under --assume and plan: a server would
	// run a release that refuses the feature_flags block its config has.
	FeatureFlagsRefused Code = "FEATURE_FLAGS_REFUSED"
	// ConsumerPulledByNobody: a consumer with a priority policy has a
	// backlog and nobody pulls it (shards.go).
	ConsumerPulledByNobody Code = "CONSUMER_PULLED_BY_NOBODY"
	// ConsumerStalePin: a pinned_client consumer's pin is renewed by a
	// holder that takes nothing, while other pulls wait (shards.go).
	ConsumerStalePin Code = "CONSUMER_STALE_PIN"
	// ConsumerPulledByTwo: a pinned_client consumer is pulled by more
	// than one process (shards.go).
	ConsumerPulledByTwo Code = "CONSUMER_PULLED_BY_TWO"

	// AssetOpCrashesFollower: a leader of the asset proposes a replicated
	// op (ReplicatedOps) that a follower panics on.
	AssetOpCrashesFollower Code = "ASSET_OP_CRASHES_FOLLOWER"
	// AssetOpHaltsReplica: a leader of the asset proposes a replicated op,
	// or sends a snapshot, that a follower cannot apply: its replica stops
	// voting, or resets in a loop.
	AssetOpHaltsReplica Code = "ASSET_OP_HALTS_REPLICA"
	// AssetPeerNotRunning: a peer holds the asset offline or never loads
	// it (Features): the group runs on fewer peers than it has.
	AssetPeerNotRunning Code = "ASSET_PEER_NOT_RUNNING"
	// AssetPeerDiverges: a peer runs the asset online without a feature
	// it does not know: its copy diverges.
	AssetPeerDiverges Code = "ASSET_PEER_DIVERGES"
	// AssetPeerMissing: a peer the asset's leader lists answered the audit
	// and does not run it, whatever the cause (observed.go).
	AssetPeerMissing Code = "ASSET_PEER_MISSING"
	// AssetPeerBehind: a peer runs the asset, but its leader has not heard
	// from it for longer than a catch-up takes (observed.go).
	AssetPeerBehind Code = "ASSET_PEER_BEHIND"
	// ConsumerAcksLostOnTakeover: a peer that hands out v2 acks and one
	// before 2.14.0 that can take the consumer over (acks.go).
	ConsumerAcksLostOnTakeover Code = "CONSUMER_ACKS_LOST_ON_TAKEOVER"

	// KnownBadRelease: a server runs a release known to lose data
	// (BadReleases).
	KnownBadRelease Code = "KNOWN_BAD_RELEASE"
	// UpgradePathUnsupported: only under --assume and plan: a server would
	// move between releases the NATS docs do not support moving between
	// directly (PathRules).
	UpgradePathUnsupported Code = "UPGRADE_PATH_UNSUPPORTED"
	// UpgradePathMixed: a server runs a release before the one a newer
	// server of its meta group wants every server on first (PathRules,
	// Mixed).
	UpgradePathMixed Code = "UPGRADE_PATH_MIXED"
	// DowngradeBelowFloor: only under --assume and plan: a server would
	// downgrade below the release its line's release notes name as the
	// lowest to go to (PathRules).
	DowngradeBelowFloor Code = "DOWNGRADE_BELOW_FLOOR"
	// ServerNotMetaPeer: a server follows its domain's meta leader but is
	// not in the peer set the leader lists: nothing can be placed on it.
	ServerNotMetaPeer Code = "SERVER_NOT_META_PEER"
)

// CodeInfo registers a finding code: all there is to know of it but the
// rule of Evaluate that finds it.
type CodeInfo struct {
	Code     Code
	Severity Severity
	// Description says in one line when the code is found; the runbook's
	// lists of findings are generated from it.
	Description string
	// Incomplete: a finding of the code says the audit did not see all
	// there is; a report with one is not complete (Report.Complete).
	Incomplete bool
	// Leader: a finding of the code depends on which peer leads its RAFT
	// group, its asset's or, for a finding about no asset, the meta group.
	// A what-if weighs each peer's leadership of a group it changes by
	// these findings, and says which of them rest on the leader it assumes.
	Leader bool
	// Follower: a finding of the code is about a follower of its asset's
	// group (Finding.Server) and Finding.Peer is the group's leader, empty
	// while it has none. The leader reports it under --scope server while
	// it answers (else the follower, else the first-named server that
	// answered: see Report.Owner); a what-if that moves the leader keeps
	// it the same finding.
	Follower bool
	// LeaderPeer: Finding.Peer is the leader a server of the finding
	// follows, which a what-if that moves the leader changes, as for a
	// Follower code: the finding stays the same finding.
	LeaderPeer bool
	// Level: a finding of the code weighs an asset's required JetStream
	// API level, or its config's features, against a server's; a rollout
	// plan lists them at each step.
	Level bool
	// Reset is the RESET verdict on an origin consumer that a finding of
	// the code reports for the mirrors and sources that RESET it by
	// themselves; empty for a code about no such RESET.
	Reset ResetVerdict
	// Gauge is the per-asset gauge of the metrics a finding of the code
	// sets; nil for none (the count of findings by code has every code).
	Gauge *AssetGauge
	// Verdict tells findings of the code apart on a Gauge that other codes
	// share: its value of the gauge's verdict label. A Reset code's is its
	// Reset verdict (GaugeVerdict).
	Verdict string
	// owner names the server whose sidecar reports a finding of the code
	// under --scope server (see Report.Owner); nil is the server the
	// finding is about, Finding.Server, or for a Follower code its leader.
	owner func(r *Report, f Finding) string
}

// GaugeVerdict is the value of the verdict label a finding of the code
// carries on its Gauge: Verdict, or the Reset verdict; empty for a code
// whose gauge no other code shares.
func (k CodeInfo) GaugeVerdict() string {
	if k.Verdict != "" {
		return k.Verdict
	}
	return string(k.Reset)
}

// AssetGauge is a gauge the metrics export with one series of value 1 per
// finding of the codes registered with it, labelled by the finding's
// account, stream, consumer and server, by its Detail, and, where codes
// share the gauge, by their verdict (CodeInfo.GaugeVerdict).
type AssetGauge struct {
	// Name is the gauge's name within the auditor's metric namespace.
	Name string
	// Help says what a series means; the metrics add what the account
	// labels hold.
	Help string
	// Detail, when set, is one more label: DetailOp or DetailFeature, the
	// row of the table (ReplicatedOps, Features) a finding names, which
	// says what to change. The table bounds it, and a finding of an asset
	// and server names one row, so it adds no series.
	Detail string
}

// The labels an AssetGauge's Detail can add, each named as the finding's
// field it holds is in JSON.
const (
	DetailOp      = "op"
	DetailFeature = "feature"
)

// DetailOf is the value of the gauge's Detail label for finding f.
func (g *AssetGauge) DetailOf(f Finding) string {
	switch g.Detail {
	case DetailOp:
		return f.Op
	case DetailFeature:
		return f.Feature
	}
	return ""
}

// The per-asset gauges the registrations name.
var (
	consumerLeaderGauge = &AssetGauge{Name: "consumer_leader_below_floor",
		Help: "1 for a consumer whose leader (server_name) runs below the floor; a leader before 2.14.0 leaves RESET unanswered."}
	consumerReplicaGauge = &AssetGauge{Name: "consumer_replica_below_floor",
		Help: "1 for a consumer with a follower (server_name) below the floor; a follower before 2.14.0 crashes on a RESET its 2.14+ leader replicates."}
	crashGauge = &AssetGauge{Name: "asset_crashes_server",
		Help: "1 for a stream or consumer (consumer empty for a stream) that a server (server_name) of its JetStream domain cannot decode: that server panics at its next meta snapshot, whether it hosts the asset or not."}
	sourcingGauge = &AssetGauge{Name: "sourcing_reset",
		Help: "1 for an origin consumer that a mirror or source RESETs by itself (durable sourcing): verdict unanswered, its leader (server_name) is before 2.14.0 and the mirror stalls; crashes_follower, its follower (server_name) is before 2.14.0 and crashes on the replicated reset, again on every restart."}
	unpulledGauge = &AssetGauge{Name: "consumer_pulled_by_nobody",
		Help: "1 for a consumer with a priority policy whose leader (server_name) has a backlog, no pull waiting and no delivery or ack for longer than the policy's threshold: a shard nobody owns."}
	stalePinGauge = &AssetGauge{Name: "consumer_stale_pin",
		Help: "1 for a pinned_client consumer whose leader (server_name) keeps a pin older than priority_timeout and delivers nothing, with messages pending and pulls waiting: a holder renews its pin and takes nothing."}
	pulledByTwoGauge = &AssetGauge{Name: "consumer_pulled_by_two",
		Help: "1 for a pinned_client consumer that more than one process pulled while the auditor listened (its leader is server_name): the pin lets one of them take messages and the others wait, so nothing is lost or delivered twice, but the application has two owners of one shard."}
	opFollowerGauge = &AssetGauge{Name: "asset_op_follower_cannot_apply", Detail: DetailOp,
		Help: "1 for a replicated stream or consumer (consumer empty for a stream) with a follower (server_name) whose release predates a replicated operation (op) that its leader proposes, or a peer would if it led (delete_range: the delete range a mirror's leader proposes whenever its origin has a gap, with js_raft_delete_range on, the default from 2.15.0): verdict crashes_follower, a follower before 2.15 panics on it (Unknown group entry op type), and again on every restart; halts_replica, the follower runs on without its replica: a 2.15 or later one logs a critical write error for an operation it does not know and its replica stops voting; for snapshot_sources (the stream snapshot with sourcing state a 2.15 leader with js_snapshot_sources on sends a follower it catches up), a 2.14 follower does the same and an older one resets its replica in a loop."}
	peerFeatureGauge = &AssetGauge{Name: "asset_peer_lacks_feature", Detail: DetailFeature,
		Help: "1 for a stream or consumer (consumer empty for a stream) with a peer (server_name) whose version does not have a feature of its config (feature), where its API level does not tell: verdict not_running, the peer holds it offline, never loads it or refuses it as it creates it, and the group runs on fewer peers than it has; diverges, the peer runs it online without the feature and its copy diverges from the others'."}
)

// Codes registers every finding code, in the order a report lists findings
// of the same severity. Adding a code is adding it here and a rule to
// Evaluate; the metrics, the what-if, --scope server, the wait summary,
// the alert generator and the runbook's checks read it from here.
var Codes = []CodeInfo{
	{Code: ServerBelowFloor, Severity: Critical,
		Description: "a server runs below the floor"},
	{Code: ClusterMixedVersions, Severity: Warning, owner: ownedByCluster,
		Description: "a cluster runs more than one version"},
	{Code: ConsumerLeaderBelowFloor, Severity: Critical, Leader: true, Gauge: consumerLeaderGauge,
		Description: "a consumer's leader is below the floor: a leader before 2.14.0 leaves RESET unanswered"},
	{Code: ConsumerReplicaBelowFloor, Severity: Critical, Leader: true, Follower: true, Gauge: consumerReplicaGauge,
		Description: "a consumer's follower is below the floor while its leader knows RESET or it has none: a follower before 2.14.0 crashes on a RESET its leader replicates"},
	{Code: ConsumerNoLeader, Severity: Warning, owner: ownedByConsumerPeers,
		Description: "a replicated consumer has no leader at audit time"},
	{Code: StreamLeaderBelowFloor, Severity: Warning, Leader: true,
		Description: "a stream's leader is below the floor"},
	{Code: MetaLeaderBelowFloor, Severity: Warning, Leader: true,
		Description: "the JetStream meta leader is below the floor"},
	{Code: AssetAPILevelUnsupported, Severity: Critical, Level: true,
		Description: "a stream's or consumer's required API level (its _nats.req.level, or durable sourcing, which that does not record) is above the API level of a server in its peer set"},
	{Code: AssetCrashesServer, Severity: Critical, owner: ownedByServerWhileAnswering, Gauge: crashGauge,
		Description: "whatever the floor: a server of an asset's JetStream domain cannot decode its config and panics at its next meta snapshot, peer or not"},
	{Code: AssetHaltsMeta, Severity: Critical, owner: ownedByServerWhileAnswering,
		Description: "whatever the floor: a server of an asset's JetStream domain cannot decode its config, logs a meta group critical write error and stops applying the meta group's log, peer or not: no later change to a stream or consumer of its domain reaches it"},
	{Code: SourcingResetUnanswered, Severity: Critical, Leader: true, Reset: ResetUnanswered, Gauge: sourcingGauge,
		Description: "whatever the floor: a mirror or source RESETs its origin consumer by itself (durable sourcing) and that consumer's leader is before 2.14.0: the mirror stalls, with no error"},
	{Code: SourcingResetCrashesFollower, Severity: Critical, Leader: true, Follower: true, Reset: ResetCrashesFollower, Gauge: sourcingGauge,
		Description: "whatever the floor: a mirror or source RESETs its origin consumer by itself (durable sourcing) and a follower before 2.14.0 crashes on the replicated reset, again on every restart"},
	{Code: AssetOpCrashesFollower, Severity: Critical, Leader: true, Follower: true, Gauge: opFollowerGauge, Verdict: "crashes_follower",
		Description: "whatever the floor: a peer that leads a stream, or would if it led, proposes a replicated operation a follower before its release panics on (a 2.15 mirror leader's delete range, an atomic batch), again on every restart"},
	{Code: AssetOpHaltsReplica, Severity: Critical, Leader: true, Follower: true, Gauge: opFollowerGauge, Verdict: "halts_replica",
		Description: "whatever the floor: a peer that leads an asset, or would if it led, sends a follower what it cannot apply, and the follower runs on without its replica: a replicated operation a 2.15 or later follower does not know, or, with js_snapshot_sources on, a stream snapshot with sourcing state, which a 2.14 follower rejects with a critical write error (its replica stops voting) and an older one by resetting its replica in a loop"},
	{Code: AssetPeerNotRunning, Severity: Critical, Level: true, Gauge: peerFeatureGauge, Verdict: "not_running",
		Description: "a peer of a stream or consumer holds it offline, never loads it, or refuses its config as it creates it (a mapping function its release does not take), for a feature of its config the peer's version does not have, where its API level does not tell: the group runs on fewer peers than it has"},
	{Code: AssetPeerDiverges, Severity: Critical, Level: true, Gauge: peerFeatureGauge, Verdict: "diverges",
		Description: "a peer of a stream or consumer runs it online without a feature of its config its version does not have, where its API level does not tell: its copy diverges from the others'"},
	// Seen, not predicted: the servers' replies show it, whatever the
	// feature table knows (observed.go).
	{Code: AssetPeerMissing, Severity: Critical,
		Description: "a peer of a stream or consumer, listed by its leader, answered the audit and does not run it, whatever the cause: the group runs on fewer peers than it has"},
	{Code: AssetPeerBehind, Severity: Warning,
		Description: "a peer runs a replicated stream or consumer, but its leader has not heard from it for longer than a catch-up takes and does not count it as current"},
	// WARNING: at-least-once holds; the consumer's application sees
	// duplicates it did not expect to.
	{Code: ConsumerAcksLostOnTakeover, Severity: Warning, LeaderPeer: true,
		Description: "whatever the floor: a replicated consumer has a peer that hands out acks in the v2 format (js_ack_fc_v2 on) and a peer before 2.14.0 that can take it over: the acks of the messages in flight at that takeover are lost and those messages delivered again after ack_wait"},
	{Code: LeafnodeUnaudited, Severity: Warning,
		Description: "a leafnode peer never answered the audit: it does not share the system account, or it is not answering"},
	{Code: ServerMissing, Severity: Unknown, Incomplete: true, owner: ownedByAnyAnswered,
		Description: "an expected server did not answer the audit"},
	{Code: VersionUnparseable, Severity: Unknown,
		Description: "a server's version is not a version"},
	{Code: AuditIncomplete, Severity: Unknown, Incomplete: true,
		Description: "a request failed, or a reply was too large or could not be understood"},
	{Code: APILevelUnknown, Severity: Unknown, Level: true,
		Description: "only under --assume: a server would run a version whose JetStream API level the level table does not know, so whether it runs an asset that needs a level cannot be told"},
	{Code: FeatureFlagsRefused, Severity: Critical,
		Description: "only under --assume and plan: a server whose config sets feature_flags would run a release before 2.14.0, which refuses the block and does not start"},
	{Code: ConsumerPulledByNobody, Severity: Warning, Gauge: unpulledGauge,
		Description: "a consumer with a priority policy (a shard) has a backlog, no pull waiting on its leader and no delivery or ack for longer than the threshold: nobody owns it"},
	{Code: ConsumerStalePin, Severity: Warning, Gauge: stalePinGauge,
		Description: "a pinned_client consumer's leader keeps a pin older than priority_timeout and delivers nothing, with messages pending and pulls waiting: only standby pulls wait, behind a holder that renews its pin and takes nothing"},
	// WARNING, not CRITICAL: the pin arbitrates, so no message is lost or
	// delivered twice; what is wrong is the application's ownership.
	{Code: ConsumerPulledByTwo, Severity: Warning, Gauge: pulledByTwoGauge,
		Description: "a pinned_client consumer (a shard) is pulled by more than one process, heard through the system account's import of its account's pull requests: one holds the pin and takes the messages, the others' pulls wait on it; nothing is lost, but the shard has two owners"},
	{Code: KnownBadRelease, Severity: Critical,
		Description: "whatever the floor: a server runs a release known to lose data (2.14.4 and 2.12.14: a create of a stream that exists makes a server that catches up from a meta snapshot delete its copy; 2.12.0 and 2.11.9: a meta snapshot drops the consumers of a stream held offline); the finding names the release that fixes it"},
	{Code: UpgradePathUnsupported, Severity: Warning,
		Description: "only under --assume and plan: a server would move on a path the NATS docs do not support: to 2.15 from before 2.14.7 (go to the newest 2.14 first), down from 2.15 below 2.14.7, or down more than one patch release"},
	{Code: UpgradePathMixed, Severity: Warning,
		Description: "a server runs a release before 2.14.7 in a JetStream meta group with a 2.15 server: it does not know 2.15's desired state, and a stream or consumer scale or move can get stuck"},
	{Code: DowngradeBelowFloor, Severity: Critical,
		Description: "only under --assume and plan: a server would downgrade below the lowest release its line's release notes allow (from 2.12 below 2.11.9, from 2.10 below 2.9.22): the older release does not protect, or cannot read, the data the newer one wrote"},
	// CRITICAL: every placement that needs the server fails (an R3 stream
	// in a cluster of three: "no suitable peers for placement"); where the
	// meta group's size no longer counts it, as after a peer-remove, the
	// group survives one failure fewer than its operator counts on.
	{Code: ServerNotMetaPeer, Severity: Critical, LeaderPeer: true,
		Description: "a JetStream server runs and follows its domain's meta leader, but the leader does not list it as a meta peer: no stream or consumer can be placed on it"},
}

// Info returns the registration of code c, and false for a code that is
// not registered.
func Info(c Code) (CodeInfo, bool) {
	for _, k := range Codes {
		if k.Code == c {
			return k, true
		}
	}
	return CodeInfo{}, false
}

// SeverityOf returns the severity findings of code c carry (Unknown for a
// code that is not registered).
func SeverityOf(c Code) Severity {
	if k, ok := Info(c); ok {
		return k.Severity
	}
	return Unknown
}
