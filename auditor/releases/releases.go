package releases

import (
	"fmt"

	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// The release history the audit holds servers to: which release a server
// may move to from which (PathRules, judged by a what-if and a plan, and
// among the servers of one meta group by every audit), and which releases
// lose data (BadReleases, a finding on every server that runs one). A
// config whose feature_flags block an older release refuses is the same
// kind of rule, kept with the flags it reads (refusedFlagFindings).

// PathRule is one rule of the NATS docs on the releases a server may move
// between directly, a restart at a time.
type PathRule struct {
	// Kind is what kind of rule it is: which finding a move that breaks it
	// gives.
	Kind PathKind
	// Downgrade: the rule is about a downgrade; else about an upgrade.
	Downgrade bool
	// Line: an upgrade into a release of Line's minor line or a later one
	// (a pre-release of it too), or a downgrade from one. Zero with
	// OnePatch.
	Line version.Version
	// Floor is the oldest release the other end may run: where an upgrade
	// comes from, where a downgrade goes to.
	Floor version.Version
	// OnePatch: a downgrade goes to the patch release just before its own,
	// in the same minor line, or it is outside the rule.
	OnePatch bool
	// Mixed: the rule also holds among the servers of one JetStream meta
	// group: while one runs Line or later, every other runs Floor or later.
	// Every audit holds it, as UPGRADE_PATH_MIXED.
	Mixed bool
	// Why says what goes wrong off the rule; Cite where the rule comes from,
	// as a finding says it (the rows' comments give files and lines).
	Why, Cite string
}

// PathKind is a kind of PathRule.
type PathKind int

// The kinds of PathRule: a move the docs do not support, and a downgrade
// below the oldest release the newer one's data allows.
const (
	PathUnsupported PathKind = iota + 1
	PathBelowFloor
)

// PathRules are the rules of the NATS docs on moving between releases. A
// move may break several; each gives its code's finding once per server.
// What they find is about the move, which an audit after it does not see.
var PathRules = []PathRule{
	// The 2.15 upgrade guide (nats.docs.v2 docs/release-notes/upgrade-to-2.15.md
	// at 111dd6a1e: line 11, and "Upgrade considerations" > "Desired state
	// metalayer", lines 44 and 48): "we highly recommend upgrading from at
	// least v2.14.7 to v2.15.x"; "The v2.14.7 (and higher) releases contain
	// compatibility code making them compatible with 2.15's desired state
	// model." That code is nats-server #8554, "(2.14) Compatibility for
	// v2.15's desired state": the RAFT group's desired and excluded fields
	// (2.14.7 jetstream_cluster.go:176-181; 2.14.6 has neither and decodes an
	// assignment with json.Unmarshal, :9420, dropping them). Its description:
	// from a release without it, in a cluster mixed with 2.15, a scale or
	// move can be left "in a stuck state that doesn't converge".
	{Kind: PathUnsupported, Line: v215, Floor: version.Must("2.14.7"), Mixed: true,
		Why:  "releases before it do not know 2.15's desired state (nats-server #8554), and beside a 2.15 server a stream or consumer scale or move can get stuck",
		Cite: `the NATS release notes, "Upgrade to NATS 2.15": "we highly recommend upgrading from at least v2.14.7"`},
	// The same page, "Downgrade considerations" > "Desired state metalayer"
	// (line 76): "we only recommend downgrading to v2.14.7 or higher".
	{Kind: PathUnsupported, Downgrade: true, Line: v215, Floor: version.Must("2.14.7"),
		Why:  "releases before it do not know the desired state 2.15 wrote (nats-server #8554): a scale or move 2.15 began does not complete",
		Cite: `the NATS release notes, "Upgrade to NATS 2.15", "Downgrade considerations": "we only recommend downgrading to v2.14.7 or higher"`},
	// The 2.12 upgrade guide, "Downgrade considerations" (nats.docs.v2
	// docs/release-notes/upgrade-to-2.12.md:93; nats.docs
	// release_notes/whats_new_212.md:86). 2.11.9 is the first release that
	// holds an asset with an unknown field offline (features.go, v2119).
	{Kind: PathBelowFloor, Downgrade: true, Line: version.Must("2.12.0"), Floor: v2119,
		Why:  "from 2.11.9 on, a server holds the streams and consumers that use 2.12 features offline, protecting their data and itself; an older one runs them without those features",
		Cite: `the NATS release notes, "Upgrade to NATS 2.12", "Downgrade considerations": "only downgrade to v2.11.9 or higher"`},
	// The 2.10 release notes, "Downgrade warnings" > "Storage format changes"
	// (nats.docs release_notes/whats_new_210.md:36-40).
	{Kind: PathBelowFloor, Downgrade: true, Line: version.Must("2.10.0"), Floor: version.Must("2.9.22"),
		Why:  "2.10 changed the stream storage format, which a 2.9 release before 2.9.22 does not understand",
		Cite: `the NATS release notes, "NATS 2.10", "Downgrade warnings": "it must be to 2.9.22 or later"`},
	// The cluster upgrade page, "Downgrading" (nats.docs
	// running-a-nats-service/nats_admin/upgrading_cluster.md:11): "The
	// support policy for the server is the current release as well as one
	// patch version release prior. For example, if the latest is 2.8.4, a
	// downgrade to 2.8.3 is supported. Downgrades to earlier versions may
	// work, but is not recommended." The audit does not know which release
	// is the latest: it holds a downgrade to one patch release back, in
	// the same minor line.
	{Kind: PathUnsupported, Downgrade: true, OnePatch: true,
		Why:  "downgrades further back may work but are not recommended",
		Cite: `the NATS docs, "Upgrading a Cluster", "Downgrading": the current release and one patch release prior are supported`},
}

// memberVotes are the releases whose RAFT candidates count only the votes
// of their group's own peers: nats-server #8353, "NRG: Ignore votes from
// removed peers during elections" (shouldCountVoteFromPeer, raft.go:3690
// and :3772 in 2.12.14; :3772 and :3854 in 2.14.4; :4363 and :4554 in
// 2.15.3). A candidate of an earlier release counts any server's granted
// vote (raft.go:3783 in 2.12.12, :3724 in 2.14.0, :3856 in 2.14.3), and a
// voter of any release grants its vote without asking whether the
// candidate is a peer (processVoteRequest).
var memberVotes = []struct{ From, Below version.Version }{
	{From: version.Must("2.12.14"), Below: v214},
	{From: version.Must("2.14.4")},
}

// MemberVotesOnly reports whether a server of version v, as a RAFT
// candidate, counts only its group's peers' votes. An earlier one counts
// the vote of a server its group removed that still runs: when its group's
// leader is lost, the two can elect a leader between them. No version is
// the worse: false.
func MemberVotesOnly(v version.Version) bool {
	for _, r := range memberVotes {
		if !v.IsZero() && !v.Before(r.From) && (r.Below.IsZero() || v.Before(r.Below)) {
			return true
		}
	}
	return false
}

// BadRelease is a release that loses data, and the release that fixes it.
type BadRelease struct {
	Release, Fix version.Version
	// Defect says what it loses and when; Cite the pull requests, as a
	// finding names them; Evidence the commits and source lines that show
	// it.
	Defect, Cite, Evidence string
}

// BadReleases are the releases known to lose data. Each is CRITICAL on a
// server that runs it, whatever the floor: what it loses is silent, and
// the fix is the next patch release of its line, a move the docs support.
var BadReleases = []BadRelease{
	// Reproduced on real servers, with 2.14.5 as the control:
	// TestKnownBadReleaseLosesAStream.
	badRelease("2.14.4", "2.14.5", idempotentCreate, "nats-server #8413, fixed by #8449",
		"#8413 in 2.14.4 as 808368169: jetstream_cluster.go:2054-2057 deletes and recreates a stream whose Created differs in a meta snapshot, "+
			"while a create of an existing stream still writes a new Created (:8300); #8449 in 2.14.5 as 47fb6c334 (:2054, :8299-8305)"),
	badRelease("2.12.14", "2.12.15", idempotentCreate, "nats-server #8413, fixed by #8449",
		"#8413 in 2.12.14 as 6d4a16b18: jetstream_cluster.go:2032-2035, with Created rewritten at :8094; #8449 in 2.12.15 as 0ddf207e7 (:2032, :8093-8099)"),
	badRelease("2.12.0", "2.12.1", lostConsumers, "nats-server #7350",
		"2.12.0 jetstream_cluster.go:1607-1609 writes an unsupported stream's assignment as it was received and skips its consumers; "+
			"#7350 (\"Meta snapshot performance & missing consumers\") in 2.12.1 as ac4fe86d3 (#7372)"),
	badRelease("2.11.9", "2.11.10", lostConsumers, "the defect of nats-server #7350 in the 2.11 line",
		"2.11.9 jetstream_cluster.go:1614-1616, the same code (offline assets are new in 2.11.9, absent in 2.11.8); "+
			"fixed in 2.11.10 as 6dfa6508d (\"Lost consumers on unsupported offline stream\")"),
}

const (
	idempotentCreate = "a create of a stream that exists (the same config again, as applications send at start) writes a new Created time; " +
		"a server of this release that was down and catches up from a meta snapshot takes that for a recreated stream, deletes its copy and its messages, and starts it empty"
	lostConsumers = "a meta snapshot of this release drops the consumers of a stream it holds offline as unsupported (one that needs a newer release): " +
		"once it restarts from that snapshot, those consumers are gone from it"
)

func badRelease(release, fix, defect, cite, evidence string) BadRelease {
	return BadRelease{Release: version.Must(release), Fix: version.Must(fix), Defect: defect, Cite: cite, Evidence: evidence}
}

// BadReleaseOf returns the row of BadReleases for the release v runs (a
// FIPS build is its release; a pre-release is none of them), and false for
// a release not known to be bad.
func BadReleaseOf(v version.Version) (BadRelease, bool) {
	for _, b := range BadReleases {
		if v == b.Release {
			return b, true
		}
	}
	return BadRelease{}, false
}

// Breaks reports whether a server moving from from to to breaks the rule.
// A move from or to no version breaks none: what it is cannot be told.
func (r PathRule) Breaks(from, to version.Version) bool {
	if from.IsZero() || to.IsZero() || from == to || r.Downgrade != to.Before(from) {
		return false
	}
	switch {
	case r.OnePatch:
		return from.Line() != to.Line() || to.IsPrerelease() || to.Patch() != from.Patch()-1
	case r.Downgrade:
		return from.Line().AtLeast(r.Line) && to.Before(r.Floor)
	default:
		return to.Line().AtLeast(r.Line) && from.Before(r.Floor)
	}
}

// First is the release to move to before the rule's upgrade: the newest
// release of the Floor's line that the level table knows and that is not
// a bad release, or Floor itself. Zero for a downgrade rule.
func (r PathRule) First() version.Version {
	if r.Downgrade || r.Floor.IsZero() {
		return version.Version{}
	}
	first := r.Floor
	for _, lr := range levelRanges {
		if lr.Last.Line() == r.Floor.Line() && lr.Last.AtLeast(first) {
			if _, bad := BadReleaseOf(lr.Last); !bad {
				first = lr.Last
			}
		}
	}
	return first
}

// BrokenBy says how the move breaks the rule, and why it matters.
func (r PathRule) BrokenBy() string {
	switch {
	case r.OnePatch:
		return fmt.Sprintf("a downgrade more than one patch release back is outside what the NATS docs support (%s): %s", r.Cite, r.Why)
	case r.Downgrade:
		return fmt.Sprintf("a downgrade from %s goes no lower than %s (%s): %s", r.Line.Minor(), r.Floor, r.Cite, r.Why)
	}
	return fmt.Sprintf("an upgrade to %s wants %s or later first (%s): %s; go to %s first", r.Line.Minor(), r.Floor, r.Cite, r.Why, r.First())
}

// FirstBefore returns the release a server must move to before it moves
// from from to to, where a rule the move breaks names one (PathRule.First);
// zero when none does.
func FirstBefore(from, to version.Version) version.Version {
	for _, r := range PathRules {
		if r.Breaks(from, to) {
			if f := r.First(); !f.IsZero() {
				return f
			}
		}
	}
	return version.Version{}
}
