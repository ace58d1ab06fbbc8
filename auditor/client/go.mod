// The Go client of the auditor's JSON API, a module of its own so that an
// application that imports it takes the standard library only, and none of
// the auditor's requirements.
//
// It is versioned with the project: a release vX.Y.Z tags the same commit
// twice, vX.Y.Z and auditor/client/vX.Y.Z (a nested module's tags carry its
// directory as their prefix), so that the client and the auditor it asks
// share a version.
//
// go 1.22 is the oldest Go the client builds with: go vet (make lint)
// reports any use of the standard library newer than this line, so raise
// it only when the client needs a newer Go.
module github.com/natsaudit/nats-version-auditor/auditor/client

go 1.22
