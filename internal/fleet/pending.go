package fleet

import "github.com/tidemark-dev/tidemark/resolver"

// pending is the sightings coalesced between two flushes, one for each
// cluster on a channel: the latest sighting, with the earliest time its
// reported version was seen. The sightings are kept in arrival order in a
// slice the flush hands to the store as it is, with an index into it by
// channel and the hash of the cluster ID taken on the request path
// (queued), so that a merge reads no ID's bytes unless the index already
// holds its hash. It was a map of sightings keyed by the IDs: at 200,000
// clusters each merge hashed an ID no longer in cache and probed the map
// twice (a read, then the write back of a 112-byte value), each flush
// walked it to copy every sighting out, and the recorder was 5% of a
// serving process's CPU (BenchmarkMerge).
type pending struct {
	at map[pendingKey]int32
	// other indexes the clusters whose hash another cluster in the batch
	// has (a 64-bit collision: next to never, but never a lost sighting).
	other map[fleetKey]int32
	made  int // the most entries at has held: a cleared map keeps its table
	list  []resolver.Sighting
}

type pendingKey struct {
	channel string
	h       uint64 // of the cluster ID
}

func newPending() *pending { return &pending{at: make(map[pendingKey]int32)} }

// merge coalesces q into the batch; false when the batch is full
// (maxPending) and q is of a cluster not in it.
func (p *pending) merge(q queued) bool {
	s := q.Sighting
	k := pendingKey{s.Channel, q.h}
	i, ok := p.at[k]
	collided := ok && p.list[i].Cluster != s.Cluster
	if collided {
		i, ok = p.other[fleetKey{s.Channel, s.Cluster}]
	}
	if !ok {
		if len(p.list) >= maxPending {
			return false
		}
		n := int32(len(p.list))
		if collided {
			if p.other == nil {
				p.other = make(map[fleetKey]int32)
			}
			p.other[fleetKey{s.Channel, s.Cluster}] = n
		} else {
			p.at[k] = n
		}
		s.Since, s.First = s.At, s.At
		p.list = append(p.list, s)
		p.made = max(p.made, len(p.list))
		return true
	}
	c := &p.list[i]
	if s.At.After(c.At) {
		c.At = s.At
	}
	c.Outside = s.Outside // the latest request's address decides
	c.Enrolled = s.Enrolled
	if s.Served != "" {
		c.Served, c.Forced = s.Served, s.Forced
	}
	if s.Directed != "" {
		c.Directed = s.Directed
	}
	if s.Reported != "" && s.Reported != c.Reported {
		c.Reported, c.Since = s.Reported, s.At
	}
	return true
}

// batch is what is pending; valid until reset.
func (p *pending) batch() []resolver.Sighting { return p.list }

// reset empties the batch, keeping its memory for the next one unless it
// is far larger than the last batch needed: a map keeps its table when
// cleared, so after one burst (a restart, every cluster asking at once:
// maxPending sightings) every later merge probed, and every flush cleared,
// a table of 131,072 entries. (The store does not keep a batch past
// RecordFleet.)
func (p *pending) reset() {
	n := len(p.list)
	if p.made > 4*n+1024 {
		p.at, p.made = make(map[pendingKey]int32, n), n
	} else {
		clear(p.at)
	}
	p.other = nil
	clear(p.list) // the strings it holds may go
	if cap(p.list) > 4*n+1024 {
		p.list = make([]resolver.Sighting, 0, n)
	} else {
		p.list = p.list[:0]
	}
}
