package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/natsaudit/nats-version-auditor/auditor"
)

// How flags are named:
//
//   - Connection flags are natscli's, with its environment variables:
//     --server, --user, --creds, --tlsca, --context, --timeout... (connect.go).
//   - What a command checks or prints is said with flat words, as natscli's
//     commands do: --floor, --expect, --format, --account, --stream,
//     --consumer, --wait, --wait-for, --scope.
//   - How the process runs, and how it audits, go in dotted groups, as
//     exporter-toolkit's --web.* and Prometheus exporters' flags do:
//     --web.*, --log.*, --metrics.*, --policy.file, and --audit.* for the
//     audit's pace and bounds (--audit.min-interval, --audit.events,
//     --audit.event-min-interval, --audit.max-reply-bytes,
//     --audit.max-bytes-in-flight, --audit.compress).
//
// A flag renamed to follow these rules keeps its old spelling as a hidden
// alias, so that nothing deployed breaks.

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
	// through the alias. Unset is auditor.DefaultMaxReplyBytes.
	const maxReplyHelp = "Replies larger than this are dropped as AUDIT_INCOMPLETE instead of decoded (default 64MiB)"
	app.Flag("audit.max-reply-bytes", maxReplyHelp).PlaceHolder("64MiB").BytesVar(&f.maxReplyBytes)
	app.Flag("max-reply-bytes", maxReplyHelp).Hidden().BytesVar(&f.maxReplyBytes)
	// Unset is auditor.DefaultMaxBytesInFlight; a bound of nothing would
	// ask for nothing, so 0 and less are refused rather than taken as it.
	inFlight := units.Base2Bytes(auditor.DefaultMaxBytesInFlight).String()
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

// options are the auditor.Options the flags ask for; timeout is the
// connection flags' --timeout, which bounds an audit as it bounds a connect.
func (f *auditFlags) options(timeout time.Duration, logger *slog.Logger) auditor.Options {
	return auditor.Options{Timeout: timeout, Expect: f.expect, MaxReplyBytes: int(f.maxReplyBytes),
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
