package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// Two replicas (two stores on one database) record the same cluster: the
// reported_since both end with is the earliest sighting of that version,
// whichever replica wrote last, and starts again when the version changes.
func TestRecordFleetReplicasAgreeOnReportedSince(t *testing.T) {
	ctx := context.Background()
	u := storetest.URL(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, u, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	a, b := open(), open()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	see := func(st *store.Store, at time.Time, reported string) resolver.ClusterRecord {
		t.Helper()
		got, err := st.RecordFleet(ctx, []resolver.Sighting{{Cluster: "c1", Channel: "latest", Reported: reported, Served: "v1.31.0", At: at}})
		if err != nil || len(got) != 1 {
			t.Fatalf("RecordFleet: %v, %d rows", err, len(got))
		}
		return got[0]
	}
	see(b, t0.Add(3*time.Second), "v1.30.0")                        // b's batch is flushed first...
	if got := see(a, t0, "v1.30.0"); !got.ReportedSince.Equal(t0) { // ...a saw it earlier
		t.Fatalf("reported_since = %v, want the earliest sighting %v", got.ReportedSince, t0)
	}
	if got := see(b, t0.Add(time.Minute), "v1.30.0"); !got.ReportedSince.Equal(t0) {
		t.Fatalf("reported_since moved to %v on a later sighting of the same version", got.ReportedSince)
	}
	if got := see(a, t0.Add(2*time.Minute), ""); got.Reported != "v1.30.0" || !got.ReportedSince.Equal(t0) {
		t.Fatalf("a sighting without a version changed the record: %+v", got)
	}
	if got := see(b, t0.Add(3*time.Minute), "v1.31.0"); !got.ReportedSince.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("a new version kept reported_since %v", got.ReportedSince)
	}
	recs, err := a.FleetCluster(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := []resolver.ClusterRecord{{ID: "c1", Channel: "latest", Reported: "v1.31.0", ReportedSince: t0.Add(3 * time.Minute),
		Served: "v1.31.0", FirstSeen: t0, LastSeen: t0.Add(3 * time.Minute)}}
	if d := cmp.Diff(want, recs, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); d != "" {
		t.Fatalf("FleetCluster (-want +got):\n%s", d)
	}
}

func TestFleetSummaryPagesAndPurge(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	var batch []resolver.Sighting
	for i := range 1200 { // more than one statement's worth is not needed; over 500 is
		v := []string{"v1.30.0", "v1.31.0", "v1.32.0"}[i%3]
		at := now
		if i%4 == 0 {
			at = now.Add(-2 * time.Hour) // stale
		}
		batch = append(batch, resolver.Sighting{Cluster: clusterID(i), Channel: "latest", Reported: v, Served: "v1.33.0", At: at})
	}
	batch = append(batch, resolver.Sighting{Cluster: "other", Channel: "stable", At: now})
	if _, err := st.RecordFleet(ctx, batch); err != nil {
		t.Fatal(err)
	}
	sum, err := st.FleetSummary(ctx, "latest", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Clusters != 1200 || sum.Active != 900 || len(sum.Versions) != 3 || sum.Versions[0].Clusters != 400 ||
		len(sum.Served) != 1 || sum.Served[0].Clusters != 1200 {
		t.Fatalf("summary = %+v", sum)
	}
	counts, err := st.FleetCounts(ctx, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]resolver.FleetCount{"latest": {Clusters: 1200, Active: 900}, "stable": {Clusters: 1, Active: 1}}, counts); d != "" {
		t.Fatalf("FleetCounts (-want +got):\n%s", d)
	}
	seen := 0
	q := resolver.ClusterQuery{Channel: "latest", Version: "v1.31.0", Stale: true, Since: now.Add(-time.Hour), Limit: 40}
	for {
		page, next, err := st.FleetClusters(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			if c.Reported != "v1.31.0" || !c.LastSeen.Before(q.Since) || c.ID <= q.After {
				t.Fatalf("page has %+v (after %q)", c, q.After)
			}
			q.After = c.ID
			seen++
		}
		if next == "" {
			break
		}
	}
	if seen != 100 { // every 12th: i%3 == 1 and i%4 == 0
		t.Fatalf("stale v1.31.0 clusters listed: %d, want 100", seen)
	}
	n, err := st.PurgeFleet(ctx, now.Add(-time.Hour))
	if err != nil || n != 300 {
		t.Fatalf("purge: %d, %v; want 300", n, err)
	}
	if _, err := st.FleetCluster(ctx, clusterID(0)); err == nil {
		t.Fatal("a purged cluster is still found")
	}
}

func clusterID(i int) string {
	return "cluster-" + string(rune('a'+i%26)) + "-" + time.Duration(i).String()
}

// TestOneBadFleetRecordDropsOnlyItself: a record the database refuses (a
// reported version too long for its index) costs only itself; the rest of
// its batch is written (issue 24 item 3).
func TestOneBadFleetRecordDropsOnlyItself(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	at := time.Now()
	batch := []resolver.Sighting{
		{Cluster: "a", Channel: "stable", Reported: "v1.0.0", At: at},
		{Cluster: "b", Channel: "stable", Reported: incompressible(8000), At: at},
		{Cluster: "c", Channel: "stable", Reported: "v1.0.1", At: at},
	}
	got, err := st.RecordFleet(ctx, batch)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 fleet records refused") {
		t.Errorf("RecordFleet error %v, want one of three refused", err)
	}
	if len(got) != 2 {
		t.Errorf("%d records written, want 2", len(got))
	}
	for _, id := range []string{"a", "c"} {
		if recs, err := st.FleetCluster(ctx, id); err != nil || len(recs) != 1 {
			t.Errorf("cluster %s: %v, %v; want recorded", id, recs, err)
		}
	}
}

// incompressible is n characters Postgres cannot compress below its btree
// row limit (~2.7 kB).
func incompressible(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestABatchKeepsWhenItFirstSawACluster: a cluster's first poll and its
// next one coalesced into one batch record first_seen as the first, so a
// version its channel began answering between the two is one it may vote
// on; a stay (no directed answer) leaves directed as it was.
func TestABatchKeepsWhenItFirstSawACluster(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := st.RecordFleet(ctx, []resolver.Sighting{{Cluster: "c1", Channel: "latest", Reported: "v1.0.0", Served: "v1.1.0",
		Directed: "v1.1.0", First: t0, At: t0.Add(800 * time.Millisecond)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordFleet(ctx, []resolver.Sighting{{Cluster: "c1", Channel: "latest", Reported: "v2.0.0", Served: "v2.0.0", At: t0.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.FleetCluster(ctx, "c1")
	if err != nil || len(recs) != 1 {
		t.Fatalf("FleetCluster: %v %v", recs, err)
	}
	if r := recs[0]; !r.FirstSeen.Equal(t0) || r.Directed != "v1.1.0" || r.Served != "v2.0.0" {
		t.Errorf("record %+v, want first seen %v, directed v1.1.0 (the stay changes neither), served v2.0.0", r, t0)
	}
}
