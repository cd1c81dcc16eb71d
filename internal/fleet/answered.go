package fleet

import (
	"hash/maphash"
	"sync"
)

// answered is what this replica last answered each (channel, cluster), for
// a request that names its cluster but reports no version: it is treated
// as running that version, so it is never answered an older one without a
// rollback. The recorder fills it as it takes sightings off the queue (off
// the request path); a request reads one shard under its read lock. Keys
// are 64-bit hashes of channel and cluster: 32 bytes an entry (a million
// clusters cost ~40 MB), no strings kept but the versions, which the
// snapshot already holds.
type answered struct {
	seed   maphash.Seed
	shards [settleShards]answeredShard
}

type answeredShard struct {
	mu sync.RWMutex
	m  map[uint64]lastAnswer
	_  [32]byte
}

type lastAnswer struct {
	version string
	seen    int64 // unix nanoseconds of the sighting
}

func newAnswered() *answered {
	a := &answered{seed: maphash.MakeSeed()}
	for i := range a.shards {
		a.shards[i].m = map[uint64]lastAnswer{}
	}
	return a
}

func (a *answered) key(channel, cluster string) uint64 {
	var h maphash.Hash
	h.SetSeed(a.seed)
	h.WriteString(channel)
	h.WriteByte(0)
	h.WriteString(cluster)
	return h.Sum64()
}

func (a *answered) put(channel, cluster, version string, at int64) {
	k := a.key(channel, cluster)
	sh := &a.shards[k%settleShards]
	sh.mu.Lock()
	if cur, ok := sh.m[k]; !ok || cur.seen <= at {
		sh.m[k] = lastAnswer{version, at}
	}
	sh.mu.Unlock()
}

func (a *answered) get(channel, cluster string) (string, bool) {
	k := a.key(channel, cluster)
	sh := &a.shards[k%settleShards]
	sh.mu.RLock()
	la, ok := sh.m[k]
	sh.mu.RUnlock()
	return la.version, ok
}

// sweep forgets answers older than cutoff (unix nanoseconds): a cluster
// silent for the active window is no longer active.
func (a *answered) sweep(cutoff int64) {
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		for k, la := range sh.m {
			if la.seen < cutoff {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}
