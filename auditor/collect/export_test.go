package collect

import (
	"context"

	"github.com/natsaudit/nats-version-auditor/auditor/snapshot"
)

// Hooks for the fuzz targets (fuzz_test.go): they hold what the collection
// makes of a reply to Evaluate, which imports the collection, so they live
// outside the package.

// CollectStatsz decodes a STATSZ reply and registers its server with a
// collection of no connection, as an audit does; name is the server the
// reply names.
func CollectStatsz(data []byte) (snap *snapshot.Snapshot, name string, err error) {
	msg, srv, err := parseStatsz(data)
	if err != nil {
		return nil, "", err
	}
	c := fuzzCollection()
	if c.register(msg, srv, false) {
		c.inflight-- // askServer would have run
	}
	return c.snapshot(), msg.Server.Name, nil
}

// CollectLeafz adds a LEAFZ reply of server s to a collection of no
// connection; the snapshot holds what it made of it, an error or not.
func CollectLeafz(s snapshot.Server, data []byte) (*snapshot.Snapshot, error) {
	c := fuzzCollection()
	err := c.addLeafz(s, data)
	c.snap.Servers = []snapshot.Server{s}
	return c.snapshot(), err
}

// CollectJSZ adds one JSZ reply as the report of each of servers.
func CollectJSZ(servers []snapshot.Server, data []byte) (*snapshot.Snapshot, error) {
	js, err := parseJSZ(data)
	if err != nil {
		return nil, err
	}
	c := fuzzCollection()
	c.snap.Servers = servers
	for _, s := range servers {
		c.addJSZ(s, js)
	}
	return c.snapshot(), nil
}

func fuzzCollection() *collection {
	return newCollection(context.Background(), nil, Options{}.withDefaults())
}
