package indexer

import (
	"context"
	"sync"
	"time"
)

// maxListingWait bounds how long a digest phase waits for other sources'
// listings, so that sources listed one after the other without a gap never
// starve a digest phase.
const maxListingWait = time.Minute

// listingGate lets digest phases wait while listings are under way. A
// listing makes a source servable; digests only refine it. When many scans
// start together (start-up, a new leader: 1,000 sources at once), the
// digest requests of the first sources listed (a HEAD per tag) competed
// with the listings of the rest for the registry and the CPU, and the
// first index of all of them took 6x its floor instead of under 4x.
type listingGate struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func newListingGate() *listingGate {
	idle := make(chan struct{})
	close(idle)
	return &listingGate{idle: idle}
}

// start counts a listing; the function it returns ends it (once).
func (g *listingGate) start() func() {
	g.mu.Lock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.n--
			if g.n == 0 {
				close(g.idle)
			}
			g.mu.Unlock()
		})
	}
}

// wait returns when no listing is under way, after max, or when ctx ends.
func (g *listingGate) wait(ctx context.Context, max time.Duration) {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	case <-ctx.Done():
	}
}
