// Package clientdoc holds the documentation of the Go client
// (auditor/client, a module of its own) to the client's compiled example.
// Its test lives in this module because the documentation does: a test of
// the client's module would read files outside that module, which a copy
// of the module fetched by the go command does not have.
package clientdoc
