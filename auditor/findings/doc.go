// Package findings is what an audit concludes: a Finding (a code, a
// severity and the server, asset and peer it is about), the registry of
// every code, and the Report of one audit. The rules in package auditor
// make findings; the command, the exporter, the JSON API and the alert
// rules read them, all through the one registry.
//
// Each code is registered once in Codes: its severity, its one-line
// description (the runbook's lists are generated from it), whether it
// makes an audit incomplete or rests on a leader, which sidecar owns it
// under --scope server, and the per-asset gauge its findings set, so that
// metrics and the alert rules read one list. The package names those
// gauges as data and imports nothing of Prometheus. It imports only
// auditor/version and auditor/snapshot.
//
// Files:
//   - finding.go: Code, Severity, Finding and a report's status.
//   - codes.go: the codes and their registry (Codes, Info, CodeInfo).
//   - report.go: Report, one audit's findings with the snapshot they came
//     from, and PinChanges.
//   - owners.go: who owns a finding under --scope server (Report.Owner).
//   - scope.go: a report narrowed to the findings one server owns.
//   - verdict.go: ResetVerdict, what RESET would do to a consumer.
package findings
