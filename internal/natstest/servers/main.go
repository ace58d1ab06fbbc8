// Command servers builds the nats-server versions the tests use into the
// harness cache, so that `make test` can do it once, up front: every one of
// them (natstest.Versions and natstest.Pinned), or only the versions named
// as arguments (`make demo` builds the two it runs).
package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	versions, err := chosen(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "servers:", err)
		os.Exit(2)
	}
	for _, v := range versions {
		bin, err := natstest.Build(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(bin)
	}
}

// chosen is the versions to build: every version the tests use when names
// is empty, else the named ones, each of which must be one of them.
func chosen(names []string) ([]string, error) {
	known := slices.Concat(natstest.Versions, natstest.Pinned)
	if len(names) == 0 {
		return known, nil
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("%q is not a version the tests use (%s)", n, strings.Join(known, ", "))
		}
	}
	return names, nil
}
