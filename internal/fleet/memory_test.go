package fleet

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
)

// TestRecorderMemoryPerCluster: what a replica keeps for each cluster that
// asked it, once the sightings are written, stays small (docs/scaling.md,
// "Memory of the fleet at 200,000 clusters"): on a plain channel the
// admission hash and the last answer; on a stepwise one with a settle, a
// settle clock too. 200,000 clusters arrive at 1,111 a second (a million
// polling every 15 minutes), each with a 36-character ID and its own
// address, and go through the recorder as a request sends them (Admitted,
// Since, Record) and its flusher.
func TestRecorderMemoryPerCluster(t *testing.T) {
	for _, tc := range []struct {
		channel string
		settle  bool
		max     int64 // bytes a cluster
	}{
		{"stable", false, 110},
		{"stepwise", true, 180},
	} {
		t.Run(tc.channel, func(t *testing.T) {
			per := recorderBytesPerCluster(t, tc.channel, tc.settle)
			if per > tc.max {
				t.Errorf("the recorder holds %d bytes a cluster on a %s channel, want <= %d", per, tc.channel, tc.max)
			}
		})
	}
}

func recorderBytesPerCluster(t *testing.T, channel string, settle bool) int64 {
	const clusters, rate = 200_000, 1111
	r, err := New(Options{Store: nullStore{}, MaxClusters: clusters, FlushEvery: 10 * time.Millisecond},
		prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, func(string, ...any) {}) }()

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := range clusters {
		now := start.Add(time.Duration(i) * time.Second / rate)
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", 1, i)
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if !r.Admitted(channel, id, addr, now) {
			t.Fatalf("cluster %d not admitted", i)
		}
		reported := reportedVersions[i%20]
		if settle {
			r.Since(ctx, channel, id, reported, now)
		}
		r.Record(resolver.Sighting{Cluster: id, Channel: channel, At: now, Reported: reported, Served: servedVersions[i%20]})
		if i%rate == 0 {
			time.Sleep(time.Millisecond) // the flusher keeps up, as it does at a second's sightings
		}
	}
	stop()
	<-done // the last sightings taken and written
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / clusters
	// Every sighting reached the flusher (none dropped for a full queue):
	// the measure is of every cluster's state.
	answers := 0
	for i := range r.last.shards {
		answers += len(r.last.shards[i].m)
	}
	if answers != clusters {
		t.Fatalf("%d last answers kept, want one for each of %d clusters", answers, clusters)
	}
	t.Logf("%d bytes a cluster (%d clocks, %d MB for %d clusters)", per, r.settle.len(), (after.HeapAlloc-before.HeapAlloc)>>20, clusters)
	return per
}

// reportedVersions and servedVersions are the versions reported and
// answered, whose strings the snapshot holds.
var reportedVersions, servedVersions = versions("v1.%d.0"), versions("v1.%d.1")

func versions(format string) []string {
	vs := make([]string, 20)
	for i := range vs {
		vs[i] = fmt.Sprintf(format, i)
	}
	return vs
}

// nullStore takes every batch and knows no cluster.
type nullStore struct{}

func (nullStore) RecordFleet(context.Context, []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	return nil, nil
}
func (nullStore) FleetSummary(context.Context, string, time.Time) (resolver.FleetSummary, error) {
	return resolver.FleetSummary{}, nil
}
func (nullStore) FleetClusters(context.Context, resolver.ClusterQuery) ([]resolver.ClusterRecord, string, error) {
	return nil, "", nil
}
func (nullStore) FleetCluster(context.Context, string) ([]resolver.ClusterRecord, error) {
	return nil, nil
}
func (nullStore) FleetActive(context.Context, time.Time) (map[string][]resolver.VersionCount, error) {
	return nil, nil
}
func (nullStore) FleetCounts(context.Context, time.Time) (map[string]resolver.FleetCount, error) {
	return nil, nil
}
func (nullStore) PurgeFleet(context.Context, time.Time) (int64, error) { return 0, nil }
func (nullStore) FleetMembers(context.Context, func(channel, cluster string)) error {
	return nil
}
