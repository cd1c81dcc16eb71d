package fleet

import "github.com/tidemark-dev/tidemark/resolver"

// pending is the sightings coalesced between two flushes, one for each
// cluster on a channel: the latest sighting, with the earliest time its
// reported version was seen. The sightings are kept in arrival order in a
// slice the flush hands to the store as it is, with an index into it by
// (channel, cluster). It was a map of sightings: at 200,000 clusters each
// merge then hashed and probed it twice (a read, then the write back of a
// 112-byte value) and each flush walked it to copy every sighting out; the
// recorder was 5% of a serving process's CPU (BenchmarkMerge).
type pending struct {
	at   map[fleetKey]int32
	made int // the most entries at has held: a cleared map keeps its table
	list []resolver.Sighting
}

func newPending() *pending { return &pending{at: make(map[fleetKey]int32)} }

// merge coalesces s into the batch; false when the batch is full
// (maxPending) and s is of a cluster not in it.
func (p *pending) merge(s resolver.Sighting) bool {
	k := fleetKey{s.Channel, s.Cluster}
	i, ok := p.at[k]
	if !ok {
		if len(p.list) >= maxPending {
			return false
		}
		s.Since = s.At
		p.at[k] = int32(len(p.list))
		p.list = append(p.list, s)
		p.made = max(p.made, len(p.list))
		return true
	}
	q := &p.list[i]
	if s.At.After(q.At) {
		q.At = s.At
	}
	if s.Served != "" {
		q.Served = s.Served
	}
	if s.Reported != "" && s.Reported != q.Reported {
		q.Reported, q.Since = s.Reported, s.At
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
		p.at, p.made = make(map[fleetKey]int32, n), n
	} else {
		clear(p.at)
	}
	clear(p.list) // the strings it holds may go
	if cap(p.list) > 4*n+1024 {
		p.list = make([]resolver.Sighting, 0, n)
	} else {
		p.list = p.list[:0]
	}
}
