package auditor

// Report is the outcome of Evaluate.
type Report struct {
	Status Severity
	// Floor is the policy's floor as operators write it ("2.14.0").
	Floor string
	// ServersExpected is how many servers the audit expected: at least those
	// that answered plus every missing one it could name.
	ServersExpected int
	Findings        []Finding
	Servers         []ServerReport
	Clusters        []ClusterReport
	Leafnodes       []LeafLink
	Snapshot        *Snapshot
}

// ServerReport is a server with its verdict and what it leads.
type ServerReport struct {
	Server
	Verdict      Verdict `json:"verdict"`
	StreamsLed   int     `json:"streams_led"`
	ConsumersLed int     `json:"consumers_led"`
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
