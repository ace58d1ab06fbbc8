package auditor

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Assumption says that the servers Target names would run Version.
type Assumption struct {
	// Target is a server name, "cluster/NAME" for every server of cluster
	// NAME, or "*" for every server.
	Target  string          `json:"target"`
	Version version.Version `json:"version"`
}

// clusterPrefix marks an assumption's target as a cluster.
const clusterPrefix = "cluster/"

// ParseAssumption reads SERVER=VERSION, where SERVER is a server name,
// cluster/NAME or *.
func ParseAssumption(s string) (Assumption, error) {
	target, release, ok := strings.Cut(s, "=")
	target = strings.TrimSpace(target)
	if !ok || target == "" {
		return Assumption{}, fmt.Errorf("%q is not SERVER=VERSION (SERVER: a server name, cluster/NAME or *)", s)
	}
	if target == clusterPrefix || (strings.HasPrefix(target, clusterPrefix) && strings.TrimSpace(target[len(clusterPrefix):]) == "") {
		return Assumption{}, fmt.Errorf("%q names no cluster after %s", s, clusterPrefix)
	}
	v, err := version.ParseRelease(release)
	if err != nil {
		return Assumption{}, fmt.Errorf("%q: %w", s, err)
	}
	return Assumption{Target: target, Version: v}, nil
}

func (a Assumption) String() string { return a.Target + "=" + a.Version.String() }

// AssumedServer is one server whose version a what-if changes.
type AssumedServer struct {
	Name    string `json:"name"`
	Cluster string `json:"cluster,omitempty"`
	Domain  string `json:"domain,omitempty"`
	// From is the version as the server reported it.
	From      string          `json:"from"`
	To        version.Version `json:"to"`
	FromLevel int             `json:"from_api_level"`
	// ToLevel is LevelUnknown (-1) when neither the servers nor the table
	// know the level of To.
	ToLevel int `json:"to_api_level"`
	// LevelSource says where ToLevel comes from, or why it is unknown.
	LevelSource string `json:"level_source"`
	// PinnedLeadersMoved counts the pinned_client consumers the server
	// leads (PinnedLedBy): the change's restart drops their pins.
	PinnedLeadersMoved int `json:"pinned_leaders_moved,omitempty"`
	// FeatureFlags are the flags it would run with (FlagsAt): what its
	// config sets, its new release's defaults for the rest.
	FeatureFlags map[string]bool `json:"feature_flags,omitempty"`
}

// GroupRef names a RAFT group: a stream's, a consumer's, or the meta group
// of a domain.
type GroupRef struct {
	// Kind is "stream", "consumer" or "meta".
	Kind        string `json:"kind"`
	Domain      string `json:"domain,omitempty"`
	Account     string `json:"account,omitempty"`
	AccountName string `json:"account_name,omitempty"`
	Stream      string `json:"stream,omitempty"`
	Consumer    string `json:"consumer,omitempty"`
}

// groupOf is the RAFT group of an asset.
func groupOf(a snapshot.Asset) GroupRef {
	return GroupRef{Kind: string(a.Kind), Domain: a.Domain, Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer}
}

// LeaderChoice is a RAFT group, with a server the what-if changes among its
// peers, whose findings depend on which peer leads after the change. The
// would-be report assumes the leader with the worst outcome.
type LeaderChoice struct {
	GroupRef
	// Leader is the leader the would-be report assumes.
	Leader   string          `json:"assumed_leader"`
	Outcomes []LeaderOutcome `json:"outcomes"`
	Message  string          `json:"message"`
}

// LeaderOutcome is what the group's findings would be under any of Leaders.
type LeaderOutcome struct {
	Leaders  []string          `json:"leaders"`
	Severity findings.Severity `json:"severity"`
	// Reset is what $JS.API.CONSUMER.RESET would do (consumers only).
	Reset findings.ResetVerdict `json:"reset,omitempty"`
	Codes []findings.Code       `json:"codes"`
}

// WhatIf is an audit evaluated as if some servers ran other versions.
type WhatIf struct {
	Assumptions []Assumption    `json:"assumptions"`
	Assumed     []AssumedServer `json:"assumed"`
	// Before is the audit as it is; After the would-be report.
	Before *findings.Report `json:"-"`
	After  *findings.Report `json:"-"`
	// Appear and Gone are the findings After has and Before has not, and
	// the other way round.
	Appear []findings.Finding `json:"appear"`
	Gone   []findings.Finding `json:"gone"`
	Depend []LeaderChoice     `json:"depends_on_leader"`
}

// Assume holds the report of an audit, before (Evaluate's report of its
// snapshot under p, as the caller has it), beside an evaluation of the
// same snapshot as if the servers the assumptions name ran their versions
// (a later assumption wins over an earlier one for the same server), with
// the API levels LevelFor gives: the snapshot is judged once as it is and
// once as assumed. The placement stays as the audit saw it; in every RAFT
// group with a changed server among its peers, the leader may move, and
// the would-be report assumes the peer whose leadership gives the worst
// findings (Depend says which groups that decides). A server whose new
// level is unknown turns every level finding about it into
// API_LEVEL_UNKNOWN. It fails when an assumption names no server that
// answered the audit.
func Assume(before *findings.Report, p Policy, as []Assumption) (*WhatIf, error) {
	snap := before.Snapshot
	want, err := resolve(snap, as)
	if err != nil {
		return nil, err
	}
	// Every list of the what-if is one, empty or not, never nil: its
	// documents show `[]`, not null.
	w := &WhatIf{Assumptions: as, Before: before, Assumed: []AssumedServer{}, Depend: []LeaderChoice{}}
	after := *snap
	after.Servers = slices.Clone(snap.Servers)
	changed := map[string]bool{}
	unknownLevel := map[string]bool{}
	refused := map[string]map[string]bool{}
	for i := range after.Servers {
		s := &after.Servers[i]
		v, ok := want[s.Name]
		if !ok {
			continue
		}
		if s.Parsed == v {
			continue
		}
		level, source := LevelFor(snap, v)
		// It keeps what its config sets: the flags it reports other than
		// its release's default, the new release's defaults for the rest.
		flags := snapshot.FlagsAt(*s, v)
		if configured := snapshot.ConfiguredFlags(*s); len(configured) > 0 && !v.AtLeast(releases.FeatureFlagsSince) {
			refused[s.Name] = configured
		}
		w.Assumed = append(w.Assumed, AssumedServer{Name: s.Name, Cluster: s.Cluster, Domain: s.Domain,
			From: s.Version, To: v, FromLevel: s.APILevel, ToLevel: level, LevelSource: source, PinnedLeadersMoved: PinnedLedBy(snap, s.Name),
			FeatureFlags: flags})
		s.FeatureFlags = flags
		changed[s.Name] = true
		// The server would report the release as written.
		s.Version, s.Parsed, s.APILevel = v.String(), v, level
		if level == releases.LevelUnknown {
			unknownLevel[s.Name] = true
		}
	}
	slices.SortFunc(w.Assumed, func(a, b AssumedServer) int { return cmp.Compare(a.Name, b.Name) })

	byName := make(map[string]snapshot.Server, len(after.Servers))
	for _, s := range after.Servers {
		byName[s.Name] = s
	}
	// The chooser judges each group under the whole policy but its asset
	// patterns: it evaluates a group on its own, renamed (A > S > C) so
	// that groups of one shape share an evaluation, and a pattern would
	// deselect the renamed asset and leave no finding to choose by. The
	// patterns still narrow the report after the change, which evaluates
	// the real assets (TestAssumeChoosesUnderTheWholePolicy).
	chooser := p
	chooser.Accounts, chooser.Streams, chooser.Consumers = nil, nil, nil
	lc := leaderChooser{p: chooser, servers: byName, memo: map[string][]candidate{}}
	touches := func(peers []string) bool {
		return slices.ContainsFunc(peers, func(n string) bool { return changed[n] })
	}
	after.Streams = slices.Clone(snap.Streams)
	after.Consumers = slices.Clone(snap.Consumers)
	after.Meta = slices.Clone(snap.Meta)
	for _, assets := range [][]snapshot.Asset{after.Streams, after.Consumers} {
		for i := range assets {
			a := &assets[i]
			a.Observed = a.Observed.Without(changed)
			// A group without a leader keeps none: the what-if does not
			// invent an election.
			if a.Leader == "" || !touches(a.Peers) {
				continue
			}
			if leader, choice := lc.asset(*a); leader != "" {
				a.Leader = leader
				if choice != nil {
					w.Depend = append(w.Depend, *choice)
				}
			}
		}
	}
	for i := range after.Meta {
		m := &after.Meta[i]
		peers, _ := metaPeers(&after, *m)
		if m.Leader == "" || !touches(peers) {
			continue
		}
		if leader, choice := lc.meta(*m, peers); leader != "" {
			if leader != m.Leader {
				m.MoveLeader(leader)
			}
			if choice != nil {
				w.Depend = append(w.Depend, *choice)
			}
		}
	}

	r := Evaluate(&after, p)
	r.Findings = append(r.Findings, unknownLevelFindings(&after, p, unknownLevel)...)
	r.Findings = append(r.Findings, refusedFlagFindings(after.Servers, refused)...)
	was := make(map[string]snapshot.Server, len(snap.Servers))
	for _, s := range snap.Servers {
		was[s.Name] = s
	}
	r.Findings = append(r.Findings, pathFindings(was, after.Servers, changed)...)
	markLeaderDependent(r.Findings, w.Depend)
	sortFindings(r.Findings)
	r.Status = findings.StatusOf(r.Findings)
	w.After = r
	w.Appear, w.Gone = diffFindings(before.Findings, r.Findings), diffFindings(r.Findings, before.Findings)
	return w, nil
}

// resolve maps every server an assumption names to its version.
func resolve(snap *snapshot.Snapshot, as []Assumption) (map[string]version.Version, error) {
	want := map[string]version.Version{}
	for _, a := range as {
		matched := 0
		for _, s := range snap.Servers {
			if a.Target == "*" || s.Name == a.Target ||
				(strings.HasPrefix(a.Target, clusterPrefix) && s.Cluster != "" && s.Cluster == a.Target[len(clusterPrefix):]) {
				want[s.Name] = a.Version
				matched++
			}
		}
		if matched == 0 {
			what := "no server named " + a.Target
			if strings.HasPrefix(a.Target, clusterPrefix) {
				what = "no server of cluster " + a.Target[len(clusterPrefix):]
			}
			return nil, fmt.Errorf("assumption %s: %s answered the audit", a, what)
		}
	}
	return want, nil
}

// metaPeers are the members of a domain's meta group, and its cluster
// size. Where the meta leader's own list is in the snapshot, that list is
// the group (MetaPeerSet.members): a server that follows the leader but is
// not in its list (SERVER_NOT_META_PEER) is no member, and counting it
// would make a restart of a member look as if it left a quorum. Without
// the leader's list, every server that reports the group or that a member
// names, or else every JetStream server of the domain.
func metaPeers(snap *snapshot.Snapshot, m snapshot.MetaGroup) ([]string, int) {
	if set := m.Listed[m.Leader]; set != nil {
		return set.Members(snap)
	}
	if len(m.Peers) > 0 {
		return m.Peers, max(m.Size, len(m.Peers))
	}
	var out []string
	for _, s := range snap.Servers {
		if s.JetStream && s.Domain == m.Domain {
			out = append(out, s.Name)
		}
	}
	return out, max(m.Size, len(out))
}

// candidate is the outcome of one peer's leadership of a group.
type candidate struct {
	severity findings.Severity
	reset    findings.ResetVerdict
	codes    []findings.Code
	// sig tells outcomes apart: the findings, with servers by their place
	// among the peers.
	sig   string
	count int
}

// leaderChooser finds, for a group, the peer whose leadership gives the
// worst findings. Outcomes depend only on the peers' versions and levels,
// not their names, so they are kept by that shape: a system of thousands of
// consumers on a few servers has a few shapes.
type leaderChooser struct {
	p       Policy
	servers map[string]snapshot.Server
	memo    map[string][]candidate
}

func (lc *leaderChooser) asset(a snapshot.Asset) (string, *LeaderChoice) {
	peers := slices.DeleteFunc(slices.Clone(a.Peers), func(n string) bool { _, ok := lc.servers[n]; return !ok })
	// A peer that holds the asset offline (its level is below the asset's,
	// from 2.11 on) cannot lead it; a 2.10 peer runs it online and can.
	eligible := slices.DeleteFunc(slices.Clone(peers), func(n string) bool {
		s := lc.servers[n]
		required, _ := a.LevelNeeded(s.Parsed)
		return s.APILevel > 0 && s.APILevel < required
	})
	if len(eligible) == 0 {
		return "", nil
	}
	key := fmt.Sprintf("%s|%d|%d|%d|%s|%s", a.Kind, a.RequiredLevel, a.Features, a.Replicas, lc.shape(peers), lc.shape(eligible))
	cands, ok := lc.memo[key]
	if !ok {
		for _, leader := range eligible {
			b := a
			b.Account, b.Stream, b.Consumer, b.Domain = "A", "S", "", ""
			if a.Kind == releases.KindConsumer {
				b.Consumer = "C"
			}
			b.Leader, b.Peers = leader, peers
			mini := &snapshot.Snapshot{Servers: lc.peerServers(peers)}
			if a.Kind == releases.KindConsumer {
				mini.Consumers = []snapshot.Asset{b}
			} else {
				mini.Streams = []snapshot.Asset{b}
			}
			c := lc.outcome(Evaluate(mini, lc.p).Findings, peers, leader)
			if a.Kind == releases.KindConsumer {
				c.reset, _ = JudgeReset(leader, lc.resetPeers(peers, leader), false)
			}
			cands = append(cands, c)
		}
		lc.memo[key] = cands
	}
	g := LeaderChoice{GroupRef: groupOf(a)}
	return lc.choose(&g, a.Leader, eligible, cands, a.Label())
}

func (lc *leaderChooser) meta(m snapshot.MetaGroup, all []string) (string, *LeaderChoice) {
	peers := slices.DeleteFunc(slices.Clone(all), func(n string) bool { _, ok := lc.servers[n]; return !ok })
	if len(peers) == 0 {
		return "", nil
	}
	slices.Sort(peers)
	var cands []candidate
	for i := range peers {
		mini := &snapshot.Snapshot{Servers: lc.peerServers(peers), Meta: []snapshot.MetaGroup{{Leader: peers[i], Peers: peers, Size: len(peers)}}}
		cands = append(cands, lc.outcome(Evaluate(mini, lc.p).Findings, peers, peers[i]))
	}
	g := LeaderChoice{GroupRef: GroupRef{Kind: "meta", Domain: m.Domain}}
	what := "the JetStream meta group" + domainSuffix(m.Domain)
	return lc.choose(&g, m.Leader, peers, cands, what)
}

// shape writes the peers' versions and levels in order.
func (lc *leaderChooser) shape(peers []string) string {
	var b strings.Builder
	for _, n := range peers {
		s := lc.servers[n]
		b.WriteString(s.Version)
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(s.APILevel))
		b.WriteByte(',')
	}
	return b.String()
}

func (lc *leaderChooser) peerServers(peers []string) []snapshot.Server {
	out := make([]snapshot.Server, len(peers))
	for i, n := range peers {
		out[i] = lc.servers[n]
	}
	return out
}

func (lc *leaderChooser) resetPeers(peers []string, leader string) []Peer {
	out := make([]Peer, len(peers))
	for i, n := range peers {
		s := lc.servers[n]
		out[i] = Peer{Name: n, Answered: true, Version: s.Version, Parsed: s.Parsed, APILevel: s.APILevel, Leader: n == leader}
	}
	return out
}

func (lc *leaderChooser) outcome(fs []findings.Finding, peers []string, leader string) candidate {
	c := candidate{codes: []findings.Code{}}
	place := func(n string) string {
		if n == leader {
			return "L" // the same outcome under another leader
		}
		return strconv.Itoa(slices.Index(peers, n))
	}
	var sig []string
	for _, f := range fs {
		if k, _ := findings.Info(f.Code); !k.Leader {
			continue
		}
		c.count++
		c.severity = c.severity.Worst(f.Severity)
		if !slices.Contains(c.codes, f.Code) {
			c.codes = append(c.codes, f.Code)
		}
		sig = append(sig, string(f.Code)+":"+place(f.Server)+":"+place(f.Peer))
	}
	slices.Sort(sig)
	c.sig = strings.Join(sig, ";")
	return c
}

// resetRank orders RESET verdicts by harm: a crash outranks a timeout.
func resetRank(v findings.ResetVerdict) int {
	switch v {
	case findings.ResetCrashesFollower:
		return 3
	case findings.ResetUnanswered:
		return 2
	case findings.ResetUnknown:
		return 1
	}
	return 0
}

// choose picks the worst candidate (the current leader among equals) and,
// when the candidates' outcomes differ, says how.
func (lc *leaderChooser) choose(g *LeaderChoice, current string, peers []string, cands []candidate, what string) (string, *LeaderChoice) {
	best := -1
	worse := func(i, j int) bool { // is i worse than j
		a, b := cands[i], cands[j]
		return cmp.Or(cmp.Compare(a.severity.Rank(), b.severity.Rank()), cmp.Compare(resetRank(a.reset), resetRank(b.reset)), cmp.Compare(a.count, b.count)) > 0
	}
	for i := range peers {
		if best < 0 || worse(i, best) || (!worse(best, i) && peers[i] == current) {
			best = i
		}
	}
	var outcomes []LeaderOutcome
	seen := map[string]int{}
	for i, c := range cands {
		key := c.sig + "|" + string(c.reset)
		j, ok := seen[key]
		if !ok {
			j = len(outcomes)
			seen[key] = j
			outcomes = append(outcomes, LeaderOutcome{Severity: c.severity, Reset: c.reset, Codes: c.codes})
		}
		outcomes[j].Leaders = append(outcomes[j].Leaders, peers[i])
	}
	if len(outcomes) < 2 {
		return peers[best], nil
	}
	g.Leader, g.Outcomes = peers[best], outcomes
	var parts []string
	for _, o := range outcomes {
		say := "no finding"
		switch {
		case o.Reset == findings.ResetCrashesFollower:
			say = "a RESET it answers crashes a follower"
		case o.Reset == findings.ResetUnanswered:
			say = "RESET to it goes unanswered"
		case len(o.Codes) > 0:
			var words []string
			for _, c := range o.Codes {
				words = append(words, string(c))
			}
			say = strings.Join(words, ", ")
		}
		parts = append(parts, fmt.Sprintf("led by %s, %s", strings.Join(o.Leaders, " or "), say))
	}
	g.Message = fmt.Sprintf("%s: which peer leads after the change decides: %s; the report assumes %s, the worse", what, strings.Join(parts, "; "), g.Leader)
	return g.Leader, g
}

// unknownLevelFindings say, for every asset with a required level that a
// server of unknown level hosts, that whether it runs cannot be told.
func unknownLevelFindings(snap *snapshot.Snapshot, p Policy, unknown map[string]bool) []findings.Finding {
	if len(unknown) == 0 {
		return nil
	}
	byName := map[string]snapshot.Server{}
	for _, s := range snap.Servers {
		byName[s.Name] = s
	}
	e := evaluation{p: p}
	var out []findings.Finding
	for _, assets := range [][]snapshot.Asset{snap.Streams, snap.Consumers} {
		for _, a := range assets {
			// Whose level is unknown, so is whether its release runs
			// a feature: every feature counts.
			required, _ := a.LevelNeeded(version.Version{})
			if required <= 0 || !e.selected(&a) {
				continue
			}
			for _, n := range a.Peers {
				if !unknown[n] {
					continue
				}
				s := byName[n]
				_, why := releases.LevelOf(s.Parsed)
				out = append(out, findings.Finding{Code: findings.APILevelUnknown, Severity: findings.SeverityOf(findings.APILevelUnknown),
					Server: n, Cluster: s.Cluster, Version: s.Version, Account: a.Account, AccountName: a.AccountName, Stream: a.Stream, Consumer: a.Consumer,
					RequiredLevel: required,
					Message: fmt.Sprintf("%s %s needs JetStream API level %d; peer %s would run %s, whose API level is not known (%s): whether it would run the %s cannot be told",
						a.Kind, a.Label(), required, n, s.Version, why, a.Kind)})
			}
		}
	}
	return out
}

// markLeaderDependent says in the message of each finding that depends on
// where a group's leader lands that the worse was assumed.
func markLeaderDependent(fs []findings.Finding, depend []LeaderChoice) {
	type key struct{ account, stream, consumer string }
	assets := map[key]string{}
	metaLeader := map[string]bool{}
	for _, d := range depend {
		if d.Kind == "meta" {
			metaLeader[d.Leader] = true
			continue
		}
		assets[key{d.Account, d.Stream, d.Consumer}] = d.Leader
	}
	for i := range fs {
		f := &fs[i]
		if k, _ := findings.Info(f.Code); !k.Leader {
			continue
		}
		if f.Stream == "" { // about no asset: the meta group's
			if metaLeader[f.Server] {
				f.Message += " (if it leads after the change: the worse is assumed)"
			}
		} else if l, ok := assets[key{f.Account, f.Stream, f.Consumer}]; ok {
			f.Message += fmt.Sprintf(" (if %s leads after the change: the worse is assumed)", l)
		}
	}
}

// findingKey is what makes two findings the same one across a what-if: a
// server's version may change and the finding stays; a follower stays at
// risk whichever peer that answers RESET leads.
type findingKey struct {
	code                                             findings.Code
	server, cluster, peer, account, stream, consumer string
	requiredLevel                                    int
}

func keyOf(f findings.Finding) findingKey {
	peer := f.Peer
	if k, _ := findings.Info(f.Code); k.Follower || k.LeaderPeer {
		peer = ""
	}
	return findingKey{f.Code, f.Server, f.Cluster, peer, f.Account, f.Stream, f.Consumer, f.RequiredLevel}
}

// diffFindings returns the findings of b that a does not have.
func diffFindings(a, b []findings.Finding) []findings.Finding {
	have := make(map[findingKey]bool, len(a))
	for _, f := range a {
		have[keyOf(f)] = true
	}
	out := []findings.Finding{}
	for _, f := range b {
		if !have[keyOf(f)] {
			out = append(out, f)
		}
	}
	return out
}

// Unexplained holds an audit made after a change to its prediction: it
// returns the predicted findings missing from actual, and the findings of
// actual nobody predicted. A finding that depends on where the leader of a
// group in depend lands is neither required nor unpredicted as long as its
// code is among that group's outcomes.
func Unexplained(predicted *findings.Report, depend []LeaderChoice, actual *findings.Report) (missing, unpredicted []findings.Finding) {
	type group struct{ account, stream, consumer string }
	meta := false
	codes := map[group][]findings.Code{}
	for _, d := range depend {
		for _, o := range d.Outcomes {
			if d.Kind == "meta" {
				meta = true
				continue
			}
			g := group{d.Account, d.Stream, d.Consumer}
			codes[g] = append(codes[g], o.Codes...)
			// What a mirror's own RESET does follows the consumer's verdict.
			for _, k := range findings.Codes {
				if o.Reset != "" && k.Reset == o.Reset {
					codes[g] = append(codes[g], k.Code)
				}
			}
		}
	}
	dependent := func(f findings.Finding) bool {
		if k, _ := findings.Info(f.Code); !k.Leader {
			return false
		}
		if f.Stream == "" { // about no asset: the meta group's
			return meta
		}
		c, ok := codes[group{f.Account, f.Stream, f.Consumer}]
		return ok && slices.Contains(c, f.Code)
	}
	for _, f := range diffFindings(actual.Findings, predicted.Findings) {
		// A path finding is about the move, which the audit after it
		// cannot see.
		if !dependent(f) && !slices.Contains(pathCodes, f.Code) {
			missing = append(missing, f)
		}
	}
	for _, f := range diffFindings(predicted.Findings, actual.Findings) {
		if !dependent(f) {
			unpredicted = append(unpredicted, f)
		}
	}
	return missing, unpredicted
}

// refusedFlagFindings say which servers a what-if runs on a release that
// refuses the feature_flags block their config has: "unknown field" at
// start, before 2.14.0 (2.12.15 opts.go:1803-1811;
// TestFactFeatureFlagsRefusedBeforeSince), as the 2.14 release notes warn
// (remove feature_flags before downgrading below 2.14).
func refusedFlagFindings(servers []snapshot.Server, refused map[string]map[string]bool) []findings.Finding {
	var out []findings.Finding
	for _, s := range servers {
		flags, ok := refused[s.Name]
		if !ok {
			continue
		}
		var set []string
		for _, name := range slices.Sorted(maps.Keys(flags)) {
			set = append(set, fmt.Sprintf("%s: %t", name, flags[name]))
		}
		out = append(out, findings.Finding{Code: findings.FeatureFlagsRefused, Severity: findings.SeverityOf(findings.FeatureFlagsRefused), Server: s.Name, Cluster: s.Cluster, Version: s.Version,
			Message: fmt.Sprintf("server %s would not start on %s: its config sets feature_flags (%s), which releases before %s refuse; remove the block before the change",
				s.Name, s.Version, strings.Join(set, ", "), releases.FeatureFlagsSince)})
	}
	return out
}

// LevelFor is LevelOf, except that a version some server of the snapshot
// already runs takes the level those servers report: what servers say wins
// over the table. When servers of that version report different levels (they
// cannot, unless a build was changed), the table decides.
func LevelFor(snap *snapshot.Snapshot, v version.Version) (int, string) {
	if v.IsZero() {
		return releases.LevelOf(v)
	}
	reported, by, agree := releases.LevelUnknown, "", true
	for _, s := range snap.Servers {
		if s.Parsed != v || !s.JetStream {
			continue
		}
		if reported == releases.LevelUnknown {
			reported, by = s.APILevel, s.Name
		} else if reported != s.APILevel {
			agree = false
		}
	}
	if reported != releases.LevelUnknown && agree {
		return reported, fmt.Sprintf("reported by %s, which runs %s", by, v)
	}
	return releases.LevelOf(v)
}
