package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// oneAuditHeapFloor is how large the heap of a command that audits once
// may grow before its first collection. An audit's garbage is mostly reply
// bytes read once: one of 10,000 consumers allocates 15 to 17 MB in the
// audit itself and needs no collection at all (BENCHMARKS.md).
const oneAuditHeapFloor = 64 << 20

// oneAuditHeap sets the collector of a process that audits once and exits
// (check without --wait, report, plan): nothing is collected until the
// runtime's memory reaches oneAuditHeapFloor, and from then on at twice the
// live heap, as GOGC=100 would. The default collects from 4 MiB on, several
// times over an audit whose garbage the exit frees anyway. GOGC or
// GOMEMLIMIT in the environment is the operator's choice, and then nothing
// is changed. It is process-wide, and set once (run runs many times in the
// tests' process).
func oneAuditHeap() {
	heapOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(oneAuditHeapFloor)
		followLiveHeap(oneAuditHeapFloor)
	})
}

var heapOnce sync.Once

// followLiveHeap raises the memory limit after each collection to twice
// the heap it found live (never below floor): a live heap above the floor
// would otherwise be collected again and again.
func followLiveHeap(floor int64) {
	// A finalizer runs after the collection that found its object
	// unreachable; one of more than 16 bytes, so that it is not in a tiny
	// block that something else keeps alive.
	sentinel := new([32]byte)
	runtime.SetFinalizer(sentinel, func(*[32]byte) {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live := sample[0].Value.Uint64()
			debug.SetMemoryLimit(max(floor, int64(min(live, math.MaxInt64/2))*2))
		}
		followLiveHeap(floor)
	})
}
