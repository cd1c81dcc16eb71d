package fleet

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// settling is one (channel, cluster)'s settle clock: the version it
// reports, since when, and when it was last seen (for the sweep).
type settling struct {
	reported string
	since    atomic.Int64 // unix nanoseconds
	seen     atomic.Int64
}

// settleShards spreads the clocks over maps of their own, each behind its
// own lock, so that requests on several cores rarely wait on one another.
const settleShards = 64

// clocks are the settle clocks by (channel, cluster). A stepwise answer
// reads one per request: at 200,000 clusters a sync.Map lookup cost ~1.2 µs
// (its trie's nodes are a cache miss each, and the key was a string built
// per call); a sharded map is one hash and one probe (BenchmarkSince).
type clocks struct {
	seed   maphash.Seed
	shards [settleShards]clockShard
}

type clockShard struct {
	mu sync.RWMutex
	m  map[fleetKey]*settling
	_  [32]byte // a cache line each: the locks of neighbours are not shared
}

func newClocks() *clocks {
	c := &clocks{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = map[fleetKey]*settling{}
	}
	return c
}

func (c *clocks) shard(k fleetKey) *clockShard {
	return &c.shards[maphash.String(c.seed, k.cluster)%settleShards]
}

func (c *clocks) load(k fleetKey) *settling {
	sh := c.shard(k)
	sh.mu.RLock()
	st := sh.m[k]
	sh.mu.RUnlock()
	return st
}

func (c *clocks) store(k fleetKey, st *settling) {
	sh := c.shard(k)
	sh.mu.Lock()
	sh.m[k] = st
	sh.mu.Unlock()
}

// sweep forgets the clocks last seen before cutoff (unix nanoseconds), one
// shard at a time.
func (c *clocks) sweep(cutoff int64) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, st := range sh.m {
			if st.seen.Load() < cutoff {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// len is the number of clocks kept.
func (c *clocks) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
