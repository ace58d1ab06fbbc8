package findings

import "fmt"

// Code names a kind of finding.
type Code string

// Severity of a finding and of a whole report. The numeric values are the
// Nagios plugin exit codes.
type Severity int

// Severities, valued as Nagios exit codes.
const (
	OK       Severity = 0
	Warning  Severity = 1
	Critical Severity = 2
	Unknown  Severity = 3
)

var severityNames = map[Severity]string{OK: "OK", Warning: "WARNING", Critical: "CRITICAL", Unknown: "UNKNOWN"}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// MarshalText writes the severity by name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity written by MarshalText.
func (s *Severity) UnmarshalText(b []byte) error {
	for k, n := range severityNames {
		if n == string(b) {
			*s = k
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Rank orders severities by how bad they are: a CRITICAL finding outweighs
// an UNKNOWN one (something is known to be broken), which outweighs a WARNING.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 3
	case Unknown:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Worse reports whether s outranks o.
func (s Severity) Worse(o Severity) bool { return s.Rank() > o.Rank() }

// Worst returns the worse of s and o.
func (s Severity) Worst(o Severity) Severity {
	if o.Worse(s) {
		return o
	}
	return s
}

// StatusOf returns the status findings give a report: the worst of their
// severities, OK when there are none.
func StatusOf(fs []Finding) Severity {
	s := OK
	for _, f := range fs {
		s = s.Worst(f.Severity)
	}
	return s
}

// Finding is one thing the audit found wrong. Only the fields that apply to
// its code are set. Account is the account's id and AccountName its name
// where that differs, as in Asset.
type Finding struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Server   string   `json:"server,omitempty"`
	Cluster  string   `json:"cluster,omitempty"`
	Version  string   `json:"version,omitempty"`
	Versions []string `json:"versions,omitempty"`
	// Peer is the other server of a finding about two: for
	// CONSUMER_REPLICA_BELOW_FLOOR and SOURCING_RESET_CRASHES_FOLLOWER the
	// consumer's leader (Server is the follower; Peer is empty while the
	// consumer has no leader), for
	// LEAFNODE_UNAUDITED the far end of the leafnode link (Server is the
	// server whose LEAFZ listed it), for SERVER_NOT_META_PEER the meta
	// leader that does not list Server. Other codes leave it empty.
	Peer          string `json:"peer,omitempty"`
	Account       string `json:"account,omitempty"`
	AccountName   string `json:"account_name,omitempty"`
	Stream        string `json:"stream,omitempty"`
	Consumer      string `json:"consumer,omitempty"`
	RequiredLevel int    `json:"required_level,omitempty"`
	ServerLevel   *int   `json:"server_level,omitempty"`
	// Feature names the feature (see Features) an ASSET_CRASHES_SERVER
	// server cannot decode, or that an ASSET_PEER_* peer does not run.
	Feature string `json:"feature,omitempty"`
	// Op names the replicated operation (see ReplicatedOps) an
	// ASSET_OP_* follower cannot apply.
	Op string `json:"op,omitempty"`
	// Sourcers are the mirrors and sources ("ACCOUNT > STREAM") that send
	// the consumer of a SOURCING_RESET_* finding RESET by themselves.
	Sourcers []string `json:"sourcers,omitempty"`
	// Count is how many servers a SERVER_MISSING finding stands for when it
	// cannot name them one by one.
	Count int `json:"count,omitempty"`
	// Release is the release to move the server to: for KNOWN_BAD_RELEASE
	// the one that fixes it, for UPGRADE_PATH_UNSUPPORTED the one to go to
	// first where a rule names one (PathRule.First).
	Release string `json:"release,omitempty"`
}
