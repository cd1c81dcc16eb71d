// Package authfail counts failed credentials per client address: unknown
// tokens, wrong Docker Hub secrets, bad HMAC signatures and ID tokens.
// After Limit failures within a minute, further failures from that
// address are answered 429 until the minute ends. Credentials are always
// checked first, so valid ones are never refused; a guesser only changes
// which error it reads.
package authfail

import (
	"math"
	"sort"
	"sync"
	"time"
)

// The limits.
const (
	Limit  = 10
	Window = time.Minute
	// MaxClients bounds the table. When it is full, ended windows
	// go first, then the oldest addresses that are not locked: a locked
	// address stays locked however many others fail.
	MaxClients = 4096
)

// Table is the failures of the addresses seen within a window.
type Table struct {
	limit  int
	window time.Duration
	max    int
	mu     sync.Mutex
	m      map[string]*failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

// New is a table locking an address after limit failures in window.
func New(limit int, window time.Duration) *Table {
	return &Table{limit: limit, window: window, max: MaxClients, m: make(map[string]*failWindow)}
}

// failed charges addr one failure. locked says the address is past its
// limit (answer 429), wait the whole seconds until its minute ends.
func (a *Table) Failed(addr string) (wait int, locked bool) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.m[addr]
	if w != nil && now.Sub(w.start) >= a.window {
		w = nil
	}
	if w == nil {
		if _, had := a.m[addr]; !had && len(a.m) >= a.max {
			a.evict(now)
			if len(a.m) >= a.max {
				// Every entry is a locked address: one more, untracked, is
				// refused like them rather than let through unlimited.
				return max(1, int(math.Ceil(a.window.Seconds()))), true
			}
		}
		w = &failWindow{start: now}
		a.m[addr] = w
	}
	w.n++
	if w.n <= a.limit {
		return 0, false
	}
	left := w.start.Add(a.window).Sub(now)
	return max(1, int(math.Ceil(left.Seconds()))), true
}

// evict makes room: ended windows first, then the oldest quarter of the
// unlocked ones. a.mu is held.
func (a *Table) evict(now time.Time) {
	var unlocked []string
	for addr, w := range a.m {
		switch {
		case now.Sub(w.start) >= a.window:
			delete(a.m, addr)
		case w.n <= a.limit:
			unlocked = append(unlocked, addr)
		}
	}
	if len(a.m) < a.max {
		return
	}
	sort.Slice(unlocked, func(i, j int) bool { return a.m[unlocked[i]].start.Before(a.m[unlocked[j]].start) })
	for _, addr := range unlocked[:max(1, len(unlocked)/4)] {
		delete(a.m, addr)
	}
}
