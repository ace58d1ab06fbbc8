package metrics

import "github.com/prometheus/client_golang/prometheus"

// SystemLabel names the NATS system an auditor watches on every series it
// exports (`serve --metrics.system`). Two systems watched from one namespace
// (two standalone auditors in `monitoring`, say, whose servers are both
// nats-0..2) differ in it and nowhere else, so the shipped alert rules, the
// inhibition and the dashboard group by it beside `namespace`.
const SystemLabel = "nats_system"

// WithSystem returns a Registerer that adds SystemLabel=system to every
// series of every collector registered through it, the Go and process
// collectors included, so that everything an auditor exports, its
// process_start_time_seconds too, joins on the system. An empty system
// adds nothing.
func WithSystem(reg prometheus.Registerer, system string) prometheus.Registerer {
	if system == "" {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{SystemLabel: system}, reg)
}
