// Package testutil holds the small helpers that tests in several packages
// need, so that each does not keep its own copy.
package testutil

import (
	"bytes"
	"sync"
)

// LockedBuffer collects output (log lines) written from several goroutines;
// String may be called while writers still write.
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
