package fleet

import (
	"hash/maphash"
	"sync"
	"time"
)

// admission bounds what anonymous requests may add to the fleet (CONTRACT
// section 12): a cluster ID new to a channel is admitted at most perMinute
// times a minute per client address, and while the channel holds fewer
// than maxPerChannel clusters. Known clusters always pass. Memory is
// bounded by the same limits: the known set holds at most maxPerChannel
// 8-byte hashes per channel, the address table at most maxAdmitAddrs
// entries: it counts each address's new clusters in the current minute and
// starts afresh every minute (a full table refuses new addresses until
// then). Fixed minutes, not a window per address: the table never needs
// scanning (an eviction scan under the lock once cost every new cluster a
// millisecond at 1,000 new addresses a second), at the price of an address
// getting up to twice its limit across a minute's turn.
type admission struct {
	perMinute, maxPerChannel int
	seed                     maphash.Seed

	mu    sync.RWMutex
	known map[string]map[uint64]struct{} // channel -> hashed cluster IDs
	// elsewhere is each channel's cluster count in the database (other
	// replicas admit too), refreshed with the fleet gauge.
	elsewhere map[string]int
	addrs     map[string]int // new clusters admitted per address this minute
	minute    time.Time      // when addrs began counting
}

// maxAdmitAddrs bounds the addresses counted in one minute: a million
// clusters polling every 15 minutes from their own addresses are ~67,000
// new addresses a minute; 2^18 leaves room for four times that (~20 MB).
const maxAdmitAddrs = 1 << 18

// Why a sighting was not admitted: tidemark_fleet_dropped_total's reason.
const (
	dropRate = "rate"
	dropCap  = "cap"
)

func newAdmission(perMinute, maxPerChannel int) *admission {
	return &admission{perMinute: perMinute, maxPerChannel: maxPerChannel, seed: maphash.MakeSeed(),
		known: map[string]map[uint64]struct{}{}, elsewhere: map[string]int{}, addrs: map[string]int{}}
}

func (a *admission) hash(cluster string) uint64 { return maphash.String(a.seed, cluster) }

// admit says whether cluster's sighting on channel from addr may be
// recorded; reason is dropRate or dropCap when not.
func (a *admission) admit(channel, cluster, addr string, now time.Time) (ok bool, reason string) {
	h := a.hash(cluster)
	a.mu.RLock()
	_, known := a.known[channel][h]
	a.mu.RUnlock()
	if known {
		return true, ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	set := a.known[channel]
	if _, known := set[h]; known {
		return true, ""
	}
	if max(len(set), a.elsewhere[channel]) >= a.maxPerChannel {
		return false, dropCap
	}
	// A new window after a minute, or when the clock went back by more
	// than one. A request stamped a little before the window's start (it
	// took its time before another took the lock) belongs to the window:
	// starting afresh on it would let a concurrent flood past the limit.
	if d := now.Sub(a.minute); d >= time.Minute || d <= -time.Minute {
		clear(a.addrs)
		a.minute = now
	}
	n, seen := a.addrs[addr]
	if !seen && len(a.addrs) >= maxAdmitAddrs || n >= a.perMinute {
		return false, dropRate
	}
	a.addrs[addr] = n + 1
	if set == nil {
		set = map[uint64]struct{}{}
		a.known[channel] = set
	}
	set[h] = struct{}{}
	return true, ""
}

// learn marks clusters already in the database as known (at start, and
// after a purge), up to the cap per channel.
func (a *admission) learn(members map[string][]string) {
	known := make(map[string]map[uint64]struct{}, len(members))
	for ch, ids := range members {
		set := make(map[uint64]struct{}, min(len(ids), a.maxPerChannel))
		for _, id := range ids {
			if len(set) >= a.maxPerChannel {
				break
			}
			set[a.hash(id)] = struct{}{}
		}
		known[ch] = set
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Admissions made while the database was read are kept.
	for ch, set := range a.known {
		into := known[ch]
		if into == nil {
			into = map[uint64]struct{}{}
			known[ch] = into
		}
		for h := range set {
			if len(into) < a.maxPerChannel {
				into[h] = struct{}{}
			}
		}
	}
	a.known = known
}

// counted takes each channel's cluster count in the database.
func (a *admission) counted(counts map[string]int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.elsewhere = counts
}
