// Command servers builds every nats-server version the tests use into the
// harness cache, so that `make test` can do it once, up front.
package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

func main() {
	for _, v := range slices.Concat(natstest.Versions, natstest.Pinned) {
		bin, err := natstest.Build(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(bin)
	}
}
