package fleet

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// mapMerge is how the recorder coalesced sightings before pending: a map
// of them. Kept as the oracle of TestPendingMergesAsTheMapDid.
func mapMerge(m map[fleetKey]resolver.Sighting, s resolver.Sighting) bool {
	k := fleetKey{s.Channel, s.Cluster}
	p, ok := m[k]
	if !ok {
		if len(m) >= maxPending {
			return false
		}
		s.Since = s.At
		m[k] = s
		return true
	}
	if s.At.After(p.At) {
		p.At = s.At
	}
	if s.Served != "" {
		p.Served = s.Served
	}
	if s.Reported != "" && s.Reported != p.Reported {
		p.Reported, p.Since = s.Reported, s.At
	}
	m[k] = p
	return true
}

var testSeed = maphash.MakeSeed()

// queue is s as Record queues it, its cluster's hash cut to bits bits
// (64: as recorded; fewer make hashes collide).
func queue(s resolver.Sighting, bits uint) queued {
	return queued{s, maphash.String(testSeed, s.Cluster) >> (64 - bits)}
}

func sortSightings(s []resolver.Sighting) {
	slices.SortFunc(s, func(a, b resolver.Sighting) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Cluster, b.Cluster))
	})
}

// TestPendingMergesAsTheMapDid: over random sightings (clusters seen
// again on the same and other channels, reporting a version or none,
// answered or not, arriving out of order), every batch holds what the map
// held, across flushes that reuse the batch's memory; with the clusters'
// hashes as recorded, and cut to 2 bits, so that most clusters share
// their hash with others.
func TestPendingMergesAsTheMapDid(t *testing.T) {
	for _, bits := range []uint{64, 2} {
		t.Run(fmt.Sprintf("hash of %d bits", bits), func(t *testing.T) { mergeAsTheMap(t, bits) })
	}
}

func mergeAsTheMap(t *testing.T, bits uint) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1_800_000_000, 0)
	versions := []string{"", "v1.31.2+k3s1", "v1.32.0+k3s1", "v1.33.6+k3s1"}
	p := newPending()
	for flush := range 20 {
		m := map[fleetKey]resolver.Sighting{}
		for range 5_000 {
			s := resolver.Sighting{
				Cluster:  "c" + strconv.Itoa(rng.IntN(800)),
				Channel:  []string{"stable", "stepwise", "latest"}[rng.IntN(3)],
				Reported: versions[rng.IntN(len(versions))],
				Served:   versions[rng.IntN(len(versions))],
				At:       t0.Add(time.Duration(flush)*time.Minute + time.Duration(rng.IntN(60_000))*time.Millisecond),
			}
			if a, b := mapMerge(m, s), p.merge(queue(s, bits)); a != b {
				t.Fatalf("flush %d: merge of %+v: %v, the map's %v", flush, s, b, a)
			}
		}
		want := make([]resolver.Sighting, 0, len(m))
		for _, s := range m {
			want = append(want, s)
		}
		got := slices.Clone(p.batch())
		sortSightings(want)
		sortSightings(got)
		if !slices.EqualFunc(got, want, func(a, b resolver.Sighting) bool {
			return a.Cluster == b.Cluster && a.Channel == b.Channel && a.Reported == b.Reported &&
				a.Served == b.Served && a.At.Equal(b.At) && a.Since.Equal(b.Since)
		}) {
			t.Fatalf("flush %d: %d sightings differ from the map's %d", flush, len(got), len(want))
		}
		p.reset()
		if len(p.batch()) != 0 || len(p.at) != 0 || len(p.other) != 0 {
			t.Fatalf("flush %d: reset left %d sightings, %d indexed", flush, len(p.batch()), len(p.at)+len(p.other))
		}
	}
}

// TestPendingIsBoundedAtMaxPending: a full batch refuses a new cluster
// and still merges one it holds.
func TestPendingIsBoundedAtMaxPending(t *testing.T) {
	p := newPending()
	at := time.Unix(1_800_000_000, 0)
	for i := range maxPending {
		if !p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: strconv.Itoa(i), At: at}, 64)) {
			t.Fatalf("sighting %d of %d refused", i+1, maxPending)
		}
	}
	if p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: "one more", At: at}, 64)) {
		t.Fatalf("a new cluster past %d taken", maxPending)
	}
	if !p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: "7", Reported: "v1.33.6+k3s1", At: at.Add(time.Second)}, 64)) {
		t.Fatal("a cluster the full batch holds was refused")
	}
	if got := p.batch()[7]; got.Reported != "v1.33.6+k3s1" || !got.At.Equal(at.Add(time.Second)) {
		t.Fatalf("cluster 7 after its second sighting: %+v", got)
	}
	if n := len(p.batch()); n != maxPending {
		t.Fatalf("%d sightings, want %d", n, maxPending)
	}
}

// TestPendingLetsABurstGo: after a burst of maxPending clusters, a batch
// of ten does not keep the burst's index table or slice (a cleared map
// keeps its table, and probing it was four times the cost of a merge).
func TestPendingLetsABurstGo(t *testing.T) {
	p := newPending()
	at := time.Unix(1_800_000_000, 0)
	for i := range maxPending {
		p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: strconv.Itoa(i), At: at}, 64))
	}
	p.reset() // the burst's flush: the next batch may be as large
	for i := range 10 {
		p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: strconv.Itoa(i), At: at}, 64))
	}
	p.reset()
	if p.made > 10 || cap(p.list) > 10 {
		t.Fatalf("after a batch of 10: the index made for %d, the slice's capacity %d", p.made, cap(p.list))
	}
	if !p.merge(queue(resolver.Sighting{Channel: "stable", Cluster: "x", At: at}, 64)) || len(p.batch()) != 1 {
		t.Fatalf("merge after the shrink: %d sightings", len(p.batch()))
	}
}

// BenchmarkMerge coalesces a fleet of 200,000 clusters polling one
// channel, as a replica answering 26,000 requests a second does: a
// sighting a request, each cluster in turn, a flush (here: the batch
// handed to nobody) every 26,000. Before that, one burst of maxPending
// distinct clusters and its flush, as after a restart ("after-a-burst"),
// or not ("steady"). "map" is how it was done before.
func BenchmarkMerge(b *testing.B) {
	const clusters, perFlush = 200_000, 26_000
	ids := make([]string, clusters)
	for i := range ids {
		ids[i] = "bench-cluster-" + strconv.Itoa(i)
	}
	at := time.Now()
	sighting := func(i int) resolver.Sighting {
		return resolver.Sighting{Channel: "v1.33", Cluster: ids[i%clusters], Reported: "v1.31.2+k3s1", Served: "v1.33.6+k3s1", At: at}
	}
	hashes := make([]uint64, clusters) // taken on the request path
	for i, id := range ids {
		hashes[i] = maphash.String(testSeed, id)
	}
	queued := func(i int) queued { return queued{sighting(i), hashes[i%clusters]} }
	for _, burst := range []int{0, maxPending} {
		name := "steady/"
		if burst > 0 {
			name = "after-a-burst/"
		}
		b.Run(name+"map", func(b *testing.B) {
			b.ReportAllocs()
			m := map[fleetKey]resolver.Sighting{}
			for i := range burst {
				mapMerge(m, sighting(i))
			}
			clear(m)
			var batch []resolver.Sighting
			i := 0
			for b.Loop() {
				mapMerge(m, sighting(i))
				if i++; i%perFlush == 0 {
					batch = batch[:0]
					for _, s := range m {
						batch = append(batch, s)
					}
					clear(m)
				}
			}
		})
		b.Run(name+"pending", func(b *testing.B) {
			b.ReportAllocs()
			p := newPending()
			for i := range burst {
				p.merge(queued(i))
			}
			p.reset()
			i := 0
			for b.Loop() {
				p.merge(queued(i))
				if i++; i%perFlush == 0 {
					_ = p.batch()
					p.reset()
				}
			}
		})
	}
}
