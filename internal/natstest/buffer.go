package natstest

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe for a process (or a command running
// in the test process) writing and a test reading what it wrote so far.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
