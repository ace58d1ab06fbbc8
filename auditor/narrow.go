package auditor

import (
	"fmt"
	"path"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/auditor/releases"
	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// unmatched holds Policy's asset patterns against the assets the audit
// saw and returns one AUDIT_INCOMPLETE finding for each pattern that
// selects nothing: a gate narrowed to a misspelt stream would otherwise
// pass without having looked at anything it was asked about. A stream
// pattern is held against the streams of the accounts selected, a consumer
// pattern against the consumers of the streams selected.
func unmatched(snap *snapshot.Snapshot, p Policy) []findings.Finding {
	if len(p.Accounts)+len(p.Streams)+len(p.Consumers) == 0 {
		return nil
	}
	hit := map[string]bool{} // kind + "\x00" + pattern
	mark := func(kind string, patterns []string, v string) {
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, v); ok {
				hit[kind+"\x00"+pat] = true
			}
		}
	}
	see := func(a snapshot.Asset) {
		mark("account", p.Accounts, a.Account)
		if a.AccountName != "" {
			mark("account", p.Accounts, a.AccountName)
		}
		if !accountSelected(p.Accounts, &a) {
			return
		}
		mark("stream", p.Streams, a.Stream)
		if a.Kind != releases.KindConsumer || !matchAny(p.Streams, a.Stream) {
			return
		}
		mark("consumer", p.Consumers, a.Consumer)
	}
	for _, a := range snap.Streams {
		see(a)
	}
	for _, a := range snap.Consumers {
		see(a)
	}
	var out []findings.Finding
	report := func(kind string, patterns []string, within string) {
		for _, pat := range patterns {
			if hit[kind+"\x00"+pat] {
				continue
			}
			out = append(out, findings.Finding{Code: findings.AuditIncomplete, Message: fmt.Sprintf(
				"%s pattern %q matches no %s the audit saw%s: the gate checked nothing it was narrowed to", kind, pat, kind, within)})
		}
	}
	report("account", p.Accounts, "")
	within := ""
	if len(p.Accounts) > 0 {
		within = " in the accounts selected"
	}
	report("stream", p.Streams, within)
	if len(p.Accounts)+len(p.Streams) > 0 {
		within = " in the streams selected"
	}
	report("consumer", p.Consumers, within)
	return out
}
