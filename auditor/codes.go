package auditor

// Code names a kind of finding.
type Code string

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
)

// CodeInfo registers a finding code: all there is to know of it but the
// rule of Evaluate that finds it.
type CodeInfo struct {
	Code     Code
	Severity Severity
	// Description says in one line when the code is found; the runbook's
	// lists of findings are generated from it.
	Description string
	// owner names the server whose sidecar reports a finding of the code
	// under --scope server (see Report.Owner); nil is the server the
	// finding is about, Finding.Server.
	owner func(r *Report, f Finding) string
}

// Codes registers every finding code, in the order a report lists findings
// of the same severity. Adding a code is adding it here and a rule to
// Evaluate; metrics, the wait summary, the alert generator and the
// runbook's checks read it from here.
var Codes = []CodeInfo{
	{Code: ServerBelowFloor, Severity: Critical,
		Description: "a server runs below the floor"},
	{Code: ClusterMixedVersions, Severity: Warning, owner: ownedByCluster,
		Description: "a cluster runs more than one version"},
	{Code: ConsumerLeaderBelowFloor, Severity: Critical,
		Description: "a consumer's leader is below the floor: a leader before 2.14.0 leaves RESET unanswered"},
	{Code: ConsumerReplicaBelowFloor, Severity: Critical, owner: ownedByLeader,
		Description: "a consumer's follower is below the floor while its leader knows RESET or it has none: a follower before 2.14.0 crashes on a RESET its leader replicates"},
	{Code: ConsumerNoLeader, Severity: Warning, owner: ownedByConsumerPeers,
		Description: "a replicated consumer has no leader at audit time"},
	{Code: StreamLeaderBelowFloor, Severity: Warning,
		Description: "a stream's leader is below the floor"},
	{Code: MetaLeaderBelowFloor, Severity: Warning,
		Description: "the JetStream meta leader is below the floor"},
	{Code: AssetAPILevelUnsupported, Severity: Critical,
		Description: "a stream's or consumer's required API level (its _nats.req.level, or durable sourcing, which that does not record) is above the API level of a server in its peer set"},
	{Code: AssetCrashesServer, Severity: Critical, owner: ownedByCrashingServer,
		Description: "whatever the floor: a server of an asset's JetStream domain cannot decode its config and panics at its next meta snapshot, peer or not"},
	{Code: SourcingResetUnanswered, Severity: Critical,
		Description: "whatever the floor: a mirror or source RESETs its origin consumer by itself (durable sourcing) and that consumer's leader is before 2.14.0: the mirror stalls, with no error"},
	{Code: SourcingResetCrashesFollower, Severity: Critical, owner: ownedByLeader,
		Description: "whatever the floor: a mirror or source RESETs its origin consumer by itself (durable sourcing) and a follower before 2.14.0 crashes on the replicated reset, again on every restart"},
	{Code: LeafnodeUnaudited, Severity: Warning,
		Description: "a leafnode peer never answered the audit: it does not share the system account, or it is not answering"},
	{Code: ServerMissing, Severity: Unknown, owner: ownedByAnyAnswered,
		Description: "an expected server did not answer the audit"},
	{Code: VersionUnparseable, Severity: Unknown,
		Description: "a server's version is not a version"},
	{Code: AuditIncomplete, Severity: Unknown,
		Description: "a request failed, or a reply was too large or could not be understood"},
	{Code: APILevelUnknown, Severity: Unknown,
		Description: "only under --assume: a server would run a version whose JetStream API level the level table does not know, so whether it runs an asset that needs a level cannot be told"},
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
