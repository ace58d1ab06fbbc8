package auditor

import (
	"fmt"
	"testing"
)

// BenchmarkIndex100kConsumers is what indexing one audit costs, once per
// audit, before the first lookup.
func BenchmarkIndex100kConsumers(b *testing.B) {
	asShipped(b)
	snap := syntheticSnapshot(100_000)
	for b.Loop() {
		NewIndex(snap)
	}
}

// BenchmarkLookup100kConsumers is one consumer lookup with its RESET verdict.
func BenchmarkLookup100kConsumers(b *testing.B) {
	asShipped(b)
	snap := syntheticSnapshot(100_000)
	x := NewIndex(snap)
	keys := make([]ConsumerKey, 1024)
	for i := range keys {
		a := snap.Consumers[(i*97)%len(snap.Consumers)]
		keys[i] = ConsumerKey{a.Domain, a.Account, a.Stream, a.Consumer}
	}
	i := 0
	for b.Loop() {
		if _, ok := x.Consumer(keys[i%len(keys)]); !ok {
			b.Fatal(fmt.Sprint("not found: ", keys[i%len(keys)]))
		}
		i++
	}
}
