package main

import (
	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
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
//     --audit.event-min-interval, --audit.max-reply-bytes, --audit.compress).
//
// A flag renamed to follow these rules keeps its old spelling as a hidden
// alias, so that nothing deployed breaks.

// auditFlags tune every audit, whichever command runs it.
type auditFlags struct {
	expect        int
	maxReplyBytes units.Base2Bytes
	compress      bool
}

func addAuditFlags(app *kingpin.Application, f *auditFlags) {
	app.Flag("expect", "Number of servers that must answer, at least (0: derive it from what the servers report)").Default("0").IntVar(&f.expect)
	const compressHelp = "Ask servers for snappy-compressed replies (worth it where replies cross a leafnode or a slow link)"
	app.Flag("audit.compress", compressHelp).BoolVar(&f.compress)
	app.Flag("compress", compressHelp).Hidden().BoolVar(&f.compress)
	// No kingpin default: it would be set after parsing, over a value given
	// through the alias. Unset is auditor.DefaultMaxReplyBytes.
	const maxReplyHelp = "Replies larger than this are dropped as AUDIT_INCOMPLETE instead of decoded (default 64MiB)"
	app.Flag("audit.max-reply-bytes", maxReplyHelp).PlaceHolder("64MiB").BytesVar(&f.maxReplyBytes)
	app.Flag("max-reply-bytes", maxReplyHelp).Hidden().BytesVar(&f.maxReplyBytes)
}
