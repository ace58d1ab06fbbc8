// Command validfetch is the raw fetch that also checks each reply is JSON,
// with sonic's SIMD validator, as it arrives. Started as `check` starts, it
// is the floor under any audit that fails on a malformed reply (`make
// bench`). It is a program of its own so that the raw fetch's binary does
// not link sonic, whose initialisation would raise the limit itself.
//
//	validfetch -rawfetch URL -ids ID,ID,...
//	validfetch -startup
package main

import (
	"errors"
	"flag"
	"os"

	"github.com/bytedance/sonic"

	"github.com/natsaudit/nats-version-auditor/internal/rawfetch"
)

func main() {
	url := flag.String("rawfetch", "", "the URL to fetch from")
	ids := flag.String("ids", "", "the server ids to ask")
	startOnly := flag.Bool("startup", false, "exit at once, to measure this binary's start-up alone")
	flag.Parse()
	if *startOnly {
		os.Exit(0)
	}
	os.Exit(rawfetch.Main(*url, *ids, func(reply []byte) error {
		if !sonic.Valid(reply) {
			return errors.New("the reply is not JSON")
		}
		return nil
	}))
}
