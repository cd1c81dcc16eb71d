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

// maxListings is how many sources list and record at once. A listing is a
// few round trips and one write; beyond a handful at once they only queue
// for the database's connections while holding their tags: 1,000 sources
// listed at once held every tag of all of them (the indexing replica
// peaked at 1.1 GB at 1,000 x 1,000 tags).
const maxListings = 16

// maxDigestPhases is how many sources resolve digests at once, each with
// its own concurrency. When the listing gate opened on 1,000 sources at
// once, 8,000 HEAD requests went out together to one registry, each with
// its connection and buffers.
const maxDigestPhases = 16

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
	// slots holds a token per listing under way (at most maxListings).
	slots chan struct{}
}

func newListingGate(slots int) *listingGate {
	idle := make(chan struct{})
	close(idle)
	return &listingGate{idle: idle, slots: make(chan struct{}, slots)}
}

// start counts a listing, waiting for one of the slots (counted while it
// waits, so digest phases wait for it too); the function it returns ends
// it (once). It fails only when ctx ends first.
func (g *listingGate) start(ctx context.Context) (func(), error) {
	g.mu.Lock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
	var once sync.Once
	held := false
	end := func() {
		once.Do(func() {
			if held {
				<-g.slots
			}
			g.mu.Lock()
			g.n--
			if g.n == 0 {
				close(g.idle)
			}
			g.mu.Unlock()
		})
	}
	select {
	case g.slots <- struct{}{}:
		held = true
		return end, nil
	case <-ctx.Done():
		end()
		return func() {}, ctx.Err()
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
