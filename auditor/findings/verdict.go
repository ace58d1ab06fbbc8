package findings

// ResetVerdict says what $JS.API.CONSUMER.RESET would do to one consumer.
// It is about the RESET API itself, not the configured floor: RESET first
// exists in ResetVersion.
type ResetVerdict string

// The verdicts of JudgeReset.
const (
	// ResetSafe: the leader and every peer run ResetVersion or later; the
	// leader answers and every follower applies the replicated reset.
	ResetSafe ResetVerdict = "safe"
	// ResetUnanswered: the leader runs an older version and does not
	// subscribe to RESET; the request times out.
	ResetUnanswered ResetVerdict = "unanswered"
	// ResetCrashesFollower: the leader answers, but a follower runs an older
	// version and panics on the replicated reset entry, taking its whole
	// server down.
	ResetCrashesFollower ResetVerdict = "crashes_follower"
	// ResetUnknown: the audit cannot tell; do not send RESET.
	ResetUnknown ResetVerdict = "unknown"
)

// ResetVerdicts lists every ResetVerdict.
var ResetVerdicts = []ResetVerdict{ResetSafe, ResetUnanswered, ResetCrashesFollower, ResetUnknown}
