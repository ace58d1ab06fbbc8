package collect

import (
	"slices"
	"strings"
	"testing"

	"github.com/natsaudit/nats-version-auditor/internal/natstest"
)

// TestAssetSubjectsAreTheHarnesss: the harness gives the servers the
// exports and imports the auditor subscribes under.
func TestAssetSubjectsAreTheHarnesss(t *testing.T) {
	if !slices.Equal(AssetSubjects, natstest.AssetSubjects) {
		t.Errorf("%v, the harness's %v", AssetSubjects, natstest.AssetSubjects)
	}
}

// TestCovers: an import brings in an advisory subject when its subject is
// the same or wider; a "*" is not as wide as a ">".
func TestCovers(t *testing.T) {
	for _, c := range []struct {
		imp, sub string
		want     bool
	}{
		{"$JS.EVENT.ADVISORY.STREAM.CREATED.>", "$JS.EVENT.ADVISORY.STREAM.CREATED.>", true},
		{"$JS.EVENT.ADVISORY.>", "$JS.EVENT.ADVISORY.CONSUMER.DELETED.>", true},
		{"$JS.EVENT.>", "$JS.EVENT.ADVISORY.STREAM.UPDATED.>", true},
		{"$JS.EVENT.ADVISORY.*.CREATED.>", "$JS.EVENT.ADVISORY.STREAM.CREATED.>", true},
		{"$JS.EVENT.ADVISORY.STREAM.CREATED.*", "$JS.EVENT.ADVISORY.STREAM.CREATED.>", false},
		{"$JS.EVENT.ADVISORY.STREAM.CREATED.ORDERS", "$JS.EVENT.ADVISORY.STREAM.CREATED.>", false},
		{"$JS.EVENT.ADVISORY.CONSUMER.PINNED.>", "$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", false},
		{"$JS.API.CONSUMER.MSG.NEXT.>", "$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", false},
	} {
		if got := covers(strings.Split(c.imp, "."), strings.Split(c.sub, ".")); got != c.want {
			t.Errorf("covers(%s, %s) = %t, want %t", c.imp, c.sub, got, c.want)
		}
	}
}
