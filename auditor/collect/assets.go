package collect

import (
	"context"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
)

// A stream's creation, deletion and config update, and a consumer's
// creation and deletion, are advisories in the asset's own account only
// (nats-server 2.15.2 stream.go:1782, 1804, 1827; consumer.go:2097, 2038).
// Where an account exports them as streams and the system account imports
// them (the step of docs/pulls.md, with these subjects), serve hears them
// on its system connection and audits at once, instead of at its next
// check of the counts. A consumer's config update sends no advisory of
// its own.

// AssetSubjects are the subjects each JetStream account exports, and the
// system account imports with a prefix, for serve to hear its streams and
// consumers created, deleted and updated.
var AssetSubjects = []string{
	"$JS.EVENT.ADVISORY.STREAM.CREATED.>",
	"$JS.EVENT.ADVISORY.STREAM.DELETED.>",
	"$JS.EVENT.ADVISORY.STREAM.UPDATED.>",
	"$JS.EVENT.ADVISORY.CONSUMER.CREATED.>",
	"$JS.EVENT.ADVISORY.CONSUMER.DELETED.>",
}

// AssetImport is where the system account hears one account's asset
// advisories: the local subjects to subscribe to.
type AssetImport struct {
	Account  string
	Subjects []string
}

// AssetImports reads the system account's imports (the account of nc's
// user) and returns, per account, the local subjects of the asset
// advisories they bring in. An import of a wider subject
// ($JS.EVENT.ADVISORY.>) brings them in too; only AssetSubjects are
// subscribed under it, so that the servers send no other advisory for
// the auditor (a consumer sends its advisories only while someone
// listens, consumer.go:2009-2013).
func AssetImports(ctx context.Context, nc *nats.Conn) ([]AssetImport, error) {
	imports, err := systemImports(ctx, nc)
	if err != nil {
		return nil, err
	}
	var out []AssetImport
	for _, imp := range imports {
		if imp.Type != "stream" || imp.Invalid {
			continue
		}
		prefix, ok := strings.CutSuffix(imp.LocalSubject, imp.Subject)
		if !ok {
			continue
		}
		pat := strings.Split(imp.Subject, ".")
		var local []string
		for _, subj := range AssetSubjects {
			if covers(pat, strings.Split(subj, ".")) {
				local = append(local, prefix+subj)
			}
		}
		if len(local) == 0 {
			continue
		}
		i := slices.IndexFunc(out, func(a AssetImport) bool { return a.Account == imp.Account })
		if i < 0 {
			out = append(out, AssetImport{Account: imp.Account})
			i = len(out) - 1
		}
		for _, l := range local {
			if !slices.Contains(out[i].Subjects, l) {
				out[i].Subjects = append(out[i].Subjects, l)
			}
		}
	}
	return out, nil
}

// covers reports whether every subject of the pattern sub (tokens) is one
// of the pattern pat's: a "*" in pat covers any one token but not ">".
func covers(pat, sub []string) bool {
	for i, p := range pat {
		if p == ">" {
			return len(sub) > i
		}
		if i >= len(sub) || sub[i] == ">" || p != "*" && p != sub[i] {
			return false
		}
	}
	return len(pat) == len(sub)
}
