// Package version is the nats-server version as the audit reads it: parsed
// once where it enters (a flag, a policy file, a server's STATSZ, a table
// row), printed by its own method, compared by semantic-version order, and
// judged against the floor. It imports nothing of the module: every other
// package of the auditor stands on it.
//
// Files: version.go, the Version type, its parsers, the default floor and
// the verdict against it.
package version
