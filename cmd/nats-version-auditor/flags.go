package main

import (
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/natsaudit/nats-version-auditor/auditor/collect"
	"github.com/natsaudit/nats-version-auditor/auditor/findings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/natsaudit/nats-version-auditor/auditor"
	"github.com/natsaudit/nats-version-auditor/auditor/version"
)

// appName is the program's name: the first word of every line it prints
// about itself, the name its NATS connections carry and the landing page's.
const appName = "nats-version-auditor"

// How flags are named:
//
//   - Connection flags are natscli's, with its environment variables:
//     --server, --user, --creds, --tlsca, --context, --timeout... (connect.go).
//   - What a command checks or prints is said with flat words, as natscli's
//     commands do: --floor, --expect, --format, --account, --stream,
//     --consumer, --wait, --accept, --exporter, --max-age, --scope.
//   - How the process runs, and how it audits, go in dotted groups, as
//     exporter-toolkit's --web.* and Prometheus exporters' flags do:
//     --web.*, --log.*, --metrics.*, --policy.file, and --audit.* for the
//     audit's pace and bounds (--audit.min-interval, --audit.events,
//     --audit.event-min-interval, --audit.max-reply-bytes,
//     --audit.max-bytes-in-flight, --audit.compress).
//
// A flag renamed to follow these rules, or to say what it now means
// (--wait-for, now --accept), keeps its old spelling as a hidden alias, so
// that nothing deployed breaks.

// auditFlags tune every audit, whichever command runs it.
type auditFlags struct {
	expect        int
	maxReplyBytes units.Base2Bytes
	maxInFlight   units.Base2Bytes
	compress      bool
}

func addAuditFlags(app *kingpin.Application) *auditFlags {
	f := &auditFlags{}
	app.Flag("expect", "Number of servers that must answer, at least (0: derive it from what the servers report)").Default("0").IntVar(&f.expect)
	const compressHelp = "Ask servers for snappy-compressed replies (worth it where replies cross a leafnode or a slow link)"
	app.Flag("audit.compress", compressHelp).BoolVar(&f.compress)
	app.Flag("compress", compressHelp).Hidden().BoolVar(&f.compress)
	// No kingpin default: it would be set after parsing, over a value given
	// through the alias. Unset is collect.DefaultMaxReplyBytes.
	const maxReplyHelp = "Replies larger than this are dropped as AUDIT_INCOMPLETE instead of decoded (default 64MiB)"
	app.Flag("audit.max-reply-bytes", maxReplyHelp).PlaceHolder("64MiB").BytesVar(&f.maxReplyBytes)
	app.Flag("max-reply-bytes", maxReplyHelp).Hidden().BytesVar(&f.maxReplyBytes)
	// Unset is collect.DefaultMaxBytesInFlight; a bound of nothing would
	// ask for nothing, so 0 and less are refused rather than taken as it.
	inFlight := units.Base2Bytes(collect.DefaultMaxBytesInFlight).String()
	app.Flag("audit.max-bytes-in-flight", "JSZ reply bytes asked for and not yet read, as the servers' counts estimate them: pages whose replies would exceed it together are asked in turn (default "+inFlight+"). "+
		"Keep it under the max_pending of the server the auditor connects to (64MiB by default), which drops a client that reads too slowly").
		PlaceHolder(inFlight).Action(func(*kingpin.ParseContext) error {
		if f.maxInFlight <= 0 {
			return fmt.Errorf("--audit.max-bytes-in-flight %s: want a size above 0 (default %s)", f.maxInFlight, inFlight)
		}
		return nil
	}).BytesVar(&f.maxInFlight)
	return f
}

// options are the collect.Options the flags ask for; timeout is the
// connection flags' --timeout, which bounds an audit as it bounds a connect.
func (f *auditFlags) options(timeout time.Duration, logger *slog.Logger) collect.Options {
	return collect.Options{Timeout: timeout, Expect: f.expect, MaxReplyBytes: int(f.maxReplyBytes),
		MaxBytesInFlight: int(f.maxInFlight), Compress: f.compress, Logger: logger}
}

// The defaults of --audit.min-interval, the one flag of the audit's pace
// that two commands share. A gate (check --wait) has a pipeline waiting on
// it; an exporter (serve) has scrapers, which ask every 15s or less often.
const (
	waitMinInterval  = 5 * time.Second
	serveMinInterval = 15 * time.Second
)

// addMinIntervalFlag adds --audit.min-interval to cmd, with the one help
// text that check and serve share, and cmd's default.
func addMinIntervalFlag(cmd *kingpin.CmdClause, def time.Duration, d *time.Duration) {
	cmd.Flag("audit.min-interval", "At most one audit per this long. check --wait: the least wait between two audits, "+
		"up to four times as long while nothing changes. serve: scrapes within this long of the last audit are served from it").
		Default(def.String()).DurationVar(d)
}

// policyFlags are the flags that choose what an audit is held against.
type policyFlags struct {
	floor                        string
	accounts, streams, consumers []string
	unpulledAfter                time.Duration
}

// addUnpulledAfterFlag adds the threshold of CONSUMER_PULLED_BY_NOBODY.
func addUnpulledAfterFlag(cmd *kingpin.CmdClause, p *policyFlags) {
	cmd.Flag("unpulled-after", "A priority consumer (overflow, pinned_client, prioritized) whose leader has a backlog, no pull waiting and no delivery or ack for this long is CONSUMER_PULLED_BY_NOBODY; the default is the servers' default priority_timeout; 0: never").
		Default(auditor.DefaultUnpulledAfter.String()).DurationVar(&p.unpulledAfter)
}

// defaultPullWatch outlasts the 30s expiry of a default nats.go Consume,
// after which every puller, idle or not, sends its pull again.
const defaultPullWatch = 35 * time.Second

// addPullWatchFlag adds how long check and report listen to who pulls.
// check and report listen for it once; serve (help given) all the time,
// counting a puller for that long after its last pull.
func addPullWatchFlag(cmd *kingpin.CmdClause, d *time.Duration, help string) {
	if help == "" {
		help = "Where the system account imports an account's pull requests (docs/pulls.md) and it has pinned_client consumers, listen this long to name the processes pulling each and find CONSUMER_PULLED_BY_TWO; the default outlasts a default nats.go Consume's 30s pull expiry; 0: do not listen"
	}
	cmd.Flag("pull-watch", help).
		Default(defaultPullWatch.String()).Action(func(*kingpin.ParseContext) error {
		if *d < 0 {
			return fmt.Errorf("--pull-watch %s: want 0 (do not listen) or more (default %s)", *d, defaultPullWatch)
		}
		return nil
	}).DurationVar(d)
}

func addFloorFlag(cmd *kingpin.CmdClause, p *policyFlags) *kingpin.FlagClause {
	f := cmd.Flag("floor", "Oldest acceptable nats-server version (2.14, 2.14.0 or v2.14.0)").Default(version.DefaultFloor.String())
	f.StringVar(&p.floor)
	return f
}

// addAssetFilterFlags adds the globs that narrow the asset findings to a
// gate's own assets.
func addAssetFilterFlags(cmd *kingpin.CmdClause, p *policyFlags) {
	cmd.Flag("account", "Only report asset findings of accounts whose name or (operator mode) public key matches this glob (repeatable)").StringsVar(&p.accounts)
	cmd.Flag("stream", "Only report asset findings of streams matching this glob (repeatable)").StringsVar(&p.streams)
	cmd.Flag("consumer", "Only report consumer findings of consumers matching this glob (repeatable)").StringsVar(&p.consumers)
}

// failed is the report of an audit that could not run, begun at started:
// its document shows --floor as a version, or as typed where it is none.
func (p *policyFlags) failed(err error, started time.Time) *findings.Report {
	floor, _ := version.ParseFloor(p.floor)
	return findings.Failed(err, floor, p.floor, started, time.Since(started))
}

func (p *policyFlags) policy() (auditor.Policy, error) {
	floor, err := version.ParseFloor(p.floor)
	if err != nil {
		return auditor.Policy{}, fmt.Errorf("--floor: %w", err)
	}
	for _, f := range []struct {
		flag     string
		patterns []string
	}{{"--account", p.accounts}, {"--stream", p.streams}, {"--consumer", p.consumers}} {
		for _, pat := range f.patterns {
			// path.Match reports a malformed pattern only when it gets that
			// far; a pattern that can never match would narrow the gate to nothing.
			if _, err := path.Match(pat, ""); err != nil {
				return auditor.Policy{}, fmt.Errorf("%s %q: not a glob pattern: %w", f.flag, pat, err)
			}
		}
	}
	return auditor.Policy{Floor: floor, Accounts: p.accounts, Streams: p.streams, Consumers: p.consumers,
		ShardPolicy: p.shardPolicy()}, nil
}

// shardPolicy is --unpulled-after as the shard rule reads it: 0 (or less)
// on the command line turns the finding off, which the rule spells with a
// negative threshold (its zero is the default).
func (p *policyFlags) shardPolicy() auditor.ShardPolicy {
	if p.unpulledAfter <= 0 {
		return auditor.ShardPolicy{UnpulledAfter: -1}
	}
	return auditor.ShardPolicy{UnpulledAfter: p.unpulledAfter}
}

// assumeFlags is --assume SERVER=VERSION, repeatable: check and report
// evaluate the audit as if those servers ran those versions.
type assumeFlags struct {
	raw    []string
	parsed []auditor.Assumption
}

func addAssumeFlag(cmd *kingpin.CmdClause, f *assumeFlags) {
	cmd.Flag("assume", "Evaluate the audit as if SERVER (a server name, cluster/NAME or *) ran VERSION (repeatable; a later one wins): print the would-be report with the findings that would appear and go, and exit with its status").
		PlaceHolder("SERVER=VERSION").StringsVar(&f.raw)
}

// parse reads every --assume before the audit runs: a typo fails at once.
func (f *assumeFlags) parse() error {
	f.parsed = nil
	for _, s := range f.raw {
		a, err := auditor.ParseAssumption(s)
		if err != nil {
			return fmt.Errorf("--assume: %w", err)
		}
		f.parsed = append(f.parsed, a)
	}
	return nil
}

// apply returns the report to print: r itself without --assume, else the
// would-be report and the what-if it comes from.
func (f *assumeFlags) apply(r *findings.Report, pol auditor.Policy) (*findings.Report, *auditor.WhatIf, error) {
	if len(f.parsed) == 0 {
		return r, nil, nil
	}
	w, err := auditor.Assume(r, pol, f.parsed)
	if err != nil {
		return nil, nil, fmt.Errorf("--assume: %w", err)
	}
	return w.After, w, nil
}
