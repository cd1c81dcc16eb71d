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
// Keys are 128 bits of two hashes of channel and cluster, not the strings:
// a clock kept its cluster ID alive (48 bytes for a 36-character one) and
// a 40-byte map slot: 240 bytes a cluster on a stepwise channel where it
// is now 165 (TestRecorderMemoryPerCluster), as fast (maphash.Comparable
// hashes the pair as a map hashes its key). Two clusters share a clock
// only if both hashes collide (about 2^-128 a pair).
type clocks struct {
	seeds  [2]maphash.Seed
	shards [settleShards]clockShard
}

type clockKey struct{ a, b uint64 }

type clockShard struct {
	mu sync.RWMutex
	m  map[clockKey]*settling
	_  [32]byte // a cache line each: the locks of neighbours are not shared
}

func newClocks() *clocks {
	c := &clocks{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	for i := range c.shards {
		c.shards[i].m = map[clockKey]*settling{}
	}
	return c
}

// key is the clock's key for cluster on channel.
func (c *clocks) key(channel, cluster string) clockKey {
	k := fleetKey{channel, cluster}
	return clockKey{maphash.Comparable(c.seeds[0], k), maphash.Comparable(c.seeds[1], k)}
}

func (c *clocks) shard(k clockKey) *clockShard { return &c.shards[k.a%settleShards] }

func (c *clocks) load(k clockKey) *settling {
	sh := c.shard(k)
	sh.mu.RLock()
	st := sh.m[k]
	sh.mu.RUnlock()
	return st
}

func (c *clocks) store(k clockKey, st *settling) {
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
