package fleet

import (
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// drainEvery is how often the recorder takes what requests queued: often
// enough that a busy second's sightings fit the buffer (65536), seldom
// enough that an idle replica barely wakes (at 10 ms the wake-ups cost a
// replica answering 1,100 requests a second 20% more CPU per request).
const drainEvery = 50 * time.Millisecond

// sightingQueue hands sightings from requests to the recorder without
// waking it for each one. A send on a channel did: with one CPU the
// recorder ran ahead of every waiting request at each sighting, and the
// channel URL's p99 with fleet recording on was 5-6x the bare 302's
// (bench-serve; the scheduler's delay profile put it all on that send).
// Requests append under a mutex; the recorder swaps the slice out every
// drainEvery.
type sightingQueue struct {
	mu  sync.Mutex
	buf []queued
	max int
}

// queued is a sighting on its way to the recorder, with its cluster ID's
// hash taken on the request path, where the ID's bytes are still in cache:
// taken by the recorder up to 50 ms later they no longer were, and hashing
// them there was a cache miss a sighting (see pending).
type queued struct {
	resolver.Sighting
	h uint64
}

// put queues s, or reports false when max are already waiting.
func (q *sightingQueue) put(s queued) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.buf) >= q.max {
		return false
	}
	q.buf = append(q.buf, s)
	return true
}

// take returns what is queued and queues into spare's array from now on.
func (q *sightingQueue) take(spare []queued) []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.buf
	q.buf = spare[:0]
	return out
}
