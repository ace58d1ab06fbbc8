package auditor_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/natsaudit/nats-version-auditor/auditor/findings"
	"github.com/natsaudit/nats-version-auditor/internal/fixture"
)

// TestEvaluateFixture holds the shared fixture, which the metrics and
// output tests render, to the findings it stands for.
func TestEvaluateFixture(t *testing.T) {
	r := fixture.Report()
	var got []string
	for _, f := range r.Findings {
		got = append(got, fmt.Sprintf("%s %s/%s %s", f.Code, f.Server, f.Peer, f.Consumer))
	}
	want := []string{
		"SERVER_BELOW_FLOOR n3/ ",
		"CONSUMER_LEADER_BELOW_FLOOR n3/ a",
		"CONSUMER_REPLICA_BELOW_FLOOR n3/n1 b",
		"SERVER_MISSING n4/ ",
		"CLUSTER_MIXED_VERSIONS / ",
		"LEAFNODE_UNAUDITED n1/edge ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n  %q\nwant\n  %q", got, want)
	}
	if r.Status != findings.Critical || r.ServersExpected != 4 || r.Complete() {
		t.Errorf("status %s, expected %d, complete %v", r.Status, r.ServersExpected, r.Complete())
	}
}
