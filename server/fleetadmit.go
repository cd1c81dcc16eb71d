package server

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
// entries (full of addresses still inside their minute, a new address is
// refused until one ends).
type admission struct {
	perMinute, maxPerChannel int
	seed                     maphash.Seed

	mu    sync.RWMutex
	known map[string]map[uint64]struct{} // channel -> hashed cluster IDs
	// elsewhere is each channel's cluster count in the database (other
	// replicas admit too), refreshed with the fleet gauge.
	elsewhere map[string]int
	addrs     map[string]*addrWindow
}

type addrWindow struct {
	start time.Time
	n     int
}

const maxAdmitAddrs = 1 << 16

// Why a sighting was not admitted: tidemark_fleet_dropped_total's reason.
const (
	dropRate = "rate"
	dropCap  = "cap"
)

func newAdmission(perMinute, maxPerChannel int) *admission {
	return &admission{perMinute: perMinute, maxPerChannel: maxPerChannel, seed: maphash.MakeSeed(),
		known: map[string]map[uint64]struct{}{}, elsewhere: map[string]int{}, addrs: map[string]*addrWindow{}}
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
	w := a.addrs[addr]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if w == nil && len(a.addrs) >= maxAdmitAddrs {
			a.evict(now)
			if len(a.addrs) >= maxAdmitAddrs {
				return false, dropRate
			}
		}
		w = &addrWindow{start: now}
		a.addrs[addr] = w
	}
	if w.n >= a.perMinute {
		return false, dropRate
	}
	w.n++
	if set == nil {
		set = map[uint64]struct{}{}
		a.known[channel] = set
	}
	set[h] = struct{}{}
	return true, ""
}

// evict drops the addresses whose minute has ended; a.mu is held.
func (a *admission) evict(now time.Time) {
	for addr, w := range a.addrs {
		if now.Sub(w.start) >= time.Minute {
			delete(a.addrs, addr)
		}
	}
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
