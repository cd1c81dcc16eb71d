package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// The gauge's and the channel list's counts come from the counters kept
// as the fleet is written plus the window's first minute read from the
// records: for every window start, second by second across minutes, they
// equal a count of the records themselves, after clusters moved in time,
// changed version and left the window.
func TestFleetCountsAreExactAtEverySecond(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	rng := rand.New(rand.NewPCG(7, 56))
	type rec struct {
		reported string
		seen     time.Time
	}
	truth := map[[2]string]rec{} // (channel, cluster)
	for range 4 {
		var batch []resolver.Sighting
		inBatch := map[[2]string]bool{} // a batch carries one sighting a record (the recorder coalesces)
		for i := range 300 {
			ch := []string{"stable", "latest", "fast"}[i%3]
			id := fmt.Sprintf("c%03d", rng.IntN(200))
			key := [2]string{ch, id}
			if inBatch[key] {
				continue
			}
			inBatch[key] = true
			at := t0.Add(time.Duration(rng.IntN(240)) * time.Second)
			if old, ok := truth[key]; ok && at.Before(old.seen) {
				at = old.seen // a sighting never moves last_seen back
			}
			v := []string{"", "v1.30.0", "v1.31.0", "v1.32.0"}[rng.IntN(4)]
			reported := v
			if old, ok := truth[key]; ok && v == "" {
				reported = old.reported // an empty report keeps what was known
			}
			batch = append(batch, resolver.Sighting{Cluster: id, Channel: ch, Reported: v, Served: "v1.33.0", Directed: "v1.33.0", At: at})
			truth[key] = rec{reported, at}
		}
		if _, err := st.RecordFleet(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for s := 0; s <= 250; s += 7 {
		since := t0.Add(time.Duration(s) * time.Second)
		wantCounts := map[string]resolver.FleetCount{}
		wantActive := map[string][]resolver.VersionCount{}
		byVersion := map[[2]string]int{}
		for k, r := range truth {
			c := wantCounts[k[0]]
			c.Clusters++
			if !r.seen.Before(since) {
				c.Active++
				if r.reported != "" {
					byVersion[[2]string{k[0], r.reported}]++
				}
			}
			wantCounts[k[0]] = c
		}
		for k, n := range byVersion {
			wantActive[k[0]] = append(wantActive[k[0]], resolver.VersionCount{Version: k[1], Clusters: n})
		}
		counts, err := st.FleetCounts(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantCounts, counts); d != "" {
			t.Fatalf("FleetCounts since %s (-want +got):\n%s", since.Format(time.TimeOnly), d)
		}
		active, err := st.FleetActive(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		byName := cmpopts.SortSlices(func(a, b resolver.VersionCount) bool { return a.Version < b.Version })
		if d := cmp.Diff(wantActive, active, byName, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("FleetActive since %s (-want +got):\n%s", since.Format(time.TimeOnly), d)
		}
	}
}
