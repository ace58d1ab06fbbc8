package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/prometheus/common/version"
)

// The release and the commit come from `make build`, which links the VERSION
// file's release and the commit into github.com/prometheus/common/version,
// where --version, the build_info metric and the landing page read them. A
// binary built otherwise (go install ...@v0.1.0, go build) takes the
// release Go recorded from its module, so that it never has none.
func init() {
	if version.Version == "" {
		version.Version = moduleRelease()
	}
}

// moduleRelease is the main module's version as Go recorded it at build
// time, without its v: v0.1.0 from `go install ...@v0.1.0`, a pseudo-version
// from a build in a clone. "unknown" where Go recorded none.
func moduleRelease() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "unknown"
}

// versionText is what --version prints, in one line: the release, the
// commit it was built from (-dirty or -modified when the tree differed from
// it), and the Go release and platform it was built with.
func versionText() string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)", appName, version.Version, version.GetRevision(), version.GoVersion, version.GoOS, version.GoArch)
}
