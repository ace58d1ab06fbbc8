package findings

import (
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// Report is the outcome of Evaluate.
type Report struct {
	Status Severity
	// Floor is the policy's floor.
	Floor version.Version
	// FloorText is the floor as it was given where it is not a version
	// (Floor is then zero): the document of an audit that could not read
	// its floor shows it as typed.
	FloorText string
	// ServersExpected is how many servers the audit expected: at least those
	// that answered plus every missing one it could name.
	ServersExpected int
	Findings        []Finding
	Servers         []ServerReport
	Clusters        []ClusterReport
	Leafnodes       []snapshot.LeafLink
	Snapshot        *snapshot.Snapshot
}

// ServerReport is a server with its verdict and what it leads.
type ServerReport struct {
	snapshot.Server
	Verdict      version.Verdict `json:"verdict"`
	StreamsLed   int             `json:"streams_led"`
	ConsumersLed int             `json:"consumers_led"`
}

// ClusterReport is one cluster and the versions its servers run.
type ClusterReport struct {
	Name     string   `json:"name"`
	Servers  int      `json:"servers"`
	Versions []string `json:"versions"`
	// MinAPILevel is the lowest JetStream API level its JetStream servers
	// report (LevelUnknown in a what-if that assumes a version of unknown
	// level); nil when none runs JetStream.
	MinAPILevel *int `json:"min_api_level"`
}

// Complete reports whether the audit behind the report reached every server
// it expected and read every reply.
func (r *Report) Complete() bool {
	for _, f := range r.Findings {
		if k, _ := Info(f.Code); k.Incomplete {
			return false
		}
	}
	return true
}

// FloorShown is the floor as documents show it: the policy's, or the text
// given for it where that was not a version.
func (r *Report) FloorShown() string {
	if !r.Floor.IsZero() {
		return r.Floor.String()
	}
	return r.FloorText
}

// Failed is the report of an audit that could not run at all: UNKNOWN, err
// as its one AUDIT_INCOMPLETE finding, nothing seen. floor is the floor,
// zero where it could not be read, and floorText then the text given for it
// (both empty when no policy could be read); took is how long the attempt
// took. Every document of a failed audit, and serve's, is made of it.
func Failed(err error, floor version.Version, floorText string, started time.Time, took time.Duration) *Report {
	if !floor.IsZero() {
		floorText = ""
	}
	return &Report{Status: Unknown, Floor: floor, FloorText: floorText,
		Findings: []Finding{{Code: AuditIncomplete, Severity: SeverityOf(AuditIncomplete), Message: err.Error()}},
		Snapshot: &snapshot.Snapshot{Started: started, Duration: took, Problems: []snapshot.Problem{{Request: "audit", Err: err.Error()}}}}
}

// Result is the latest audit a long-running auditor ran (serve's
// scheduler), as its metrics read it.
type Result struct {
	// Report is the latest audit's report; nil until the first audit ends.
	// An audit that could not run at all is a report with one
	// AUDIT_INCOMPLETE finding (Failed).
	Report *Report
	// Finished is when the latest audit ended.
	Finished time.Time
	// LastSuccess is when the latest complete audit ended.
	LastSuccess time.Time
	// Audits counts the audits run.
	Audits uint64
	// Amended is when leader changes heard since the audit were last
	// applied to Report (zero: never since the audit); Amendments counts
	// such applications since the auditor started.
	Amended    time.Time
	Amendments uint64
	// Checked is when a check last found nothing changed since the audit
	// whose result stood (serve's drift check; zero: never); Checks counts
	// those.
	Checked time.Time
	Checks  uint64
	// Started counts the full audits started, by why each started.
	Started [NumAuditReasons]uint64
	// PinChanges counts the pin changes seen from each audit to the next
	// (CountPinChanges), since the auditor started.
	PinChanges PinChanges
}

// LastCheck is when a check last found nothing changed since the audit
// whose result stands; zero when none has since it.
func (r Result) LastCheck() time.Time {
	if r.Checked.After(r.Finished) {
		return r.Checked
	}
	return time.Time{}
}

// PinChanges counts the pins of pinned_client consumers that changed
// holder between two audits, as their leaders reported them.
type PinChanges struct {
	// Pin: the holder changed under the same leader (the pin lapsed, or
	// was given to another pull).
	Pin uint64
	// WithLeader: the consumer's leader changed too; a new leader starts
	// with no pin and gives it to whoever pulls next.
	WithLeader uint64
}

// AuditReason is why a long-running auditor (serve) started a full audit.
type AuditReason int

// The reasons a full audit starts; NumAuditReasons counts them.
const (
	// ReasonFirst: there was no result yet.
	ReasonFirst AuditReason = iota
	// ReasonScrape: a scrape found the result older than the least
	// interval between audits, with no check between full audits.
	ReasonScrape
	// ReasonFullInterval: the longest time between full audits passed.
	ReasonFullInterval
	// ReasonIncomplete: the result standing is incomplete; a check of
	// counts cannot stand in for what it did not see.
	ReasonIncomplete
	// ReasonCheck: a check found the counts changed, a server silent, or
	// could not check.
	ReasonCheck
	// ReasonEvent: a server event, a leader change of an asset the result
	// lacks, or a reconnect asked for one.
	ReasonEvent
	// ReasonMaxAge: an API request asked for an audit younger than the
	// result.
	ReasonMaxAge
	NumAuditReasons
)

var auditReasons = [NumAuditReasons]string{"first", "scrape", "full_interval", "incomplete", "check", "event", "max_age"}

// String is the reason as the audits_started_total metric labels it.
func (r AuditReason) String() string {
	if r < 0 || r >= NumAuditReasons {
		return "unknown"
	}
	return auditReasons[r]
}
