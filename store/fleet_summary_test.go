package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// TestFleetSummaryCountsFollowTheFleet: the kept counts (migration 008)
// agree with counting the fleet itself through inserts, version and served
// changes, sightings on both sides of the active window's first minute, and
// a purge.
func TestFleetSummaryCountsFollowTheFleet(t *testing.T) {
	ctx := context.Background()
	st, conn := storeAndConn(t)
	// A window starting mid-minute, so that minute is counted in part.
	since := time.Now().UTC().Truncate(time.Minute).Add(-30*time.Minute + 20*time.Second)
	record := func(ss ...resolver.Sighting) {
		t.Helper()
		if _, err := st.RecordFleet(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		for _, ch := range []string{"latest", "stable"} {
			got, err := st.FleetSummary(ctx, ch, since)
			if err != nil {
				t.Fatal(err)
			}
			want := countFleet(t, conn, ch, since)
			sortCounts(&got)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: summary of %s (-counted +kept):\n%s", step, ch, d)
			}
		}
	}
	var batch []resolver.Sighting
	for i := range 600 {
		at := since.Add(time.Duration(i-300) * time.Second) // 5 minutes either side of the window's start
		s := resolver.Sighting{Cluster: clusterID(i), Channel: "latest", At: at, Served: "v1.33.0"}
		if i%5 != 0 {
			s.Reported = []string{"v1.30.0", "v1.31.0"}[i%2]
		}
		batch = append(batch, s)
	}
	batch = append(batch, resolver.Sighting{Cluster: "other", Channel: "stable", At: since.Add(time.Minute), Reported: "v2.0.0"})
	record(batch...)
	check("first sightings")

	// Half of them move on: a new version, a new served one, seen now.
	batch = batch[:0]
	for i := 0; i < 600; i += 2 {
		batch = append(batch, resolver.Sighting{Cluster: clusterID(i), Channel: "latest", At: time.Now(), Reported: "v1.32.0", Served: "v1.34.0"})
	}
	record(batch...)
	check("upgrades")

	if _, err := st.PurgeFleet(ctx, since); err != nil {
		t.Fatal(err)
	}
	check("purge")
	var zeros int
	if err := conn.QueryRow(ctx, `select (select count(*) from fleet_versions where clusters = 0) + (select count(*) from fleet_activity where clusters = 0)
		+ (select count(*) from fleet_seconds where clusters = 0)`).Scan(&zeros); err != nil {
		t.Fatal(err)
	}
	if zeros != 0 {
		t.Errorf("%d counters at 0 left after the purge", zeros)
	}
}

// countFleet is the summary counted from fleet itself.
func countFleet(t *testing.T, conn *pgx.Conn, channel string, since time.Time) resolver.FleetSummary {
	t.Helper()
	ctx := context.Background()
	sum := resolver.FleetSummary{Channel: channel, Versions: []resolver.VersionCount{}, Served: []resolver.VersionCount{}}
	err := conn.QueryRow(ctx, `select count(*), count(*) filter (where last_seen >= $2) from fleet where channel = $1`, channel, since).Scan(&sum.Clusters, &sum.Active)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql string
		out *[]resolver.VersionCount
	}{
		{`select reported, count(*) from fleet where channel = $1 and reported <> '' group by 1`, &sum.Versions},
		{`select served, count(*) from fleet where channel = $1 and served <> '' group by 1`, &sum.Served},
	} {
		rows, err := conn.Query(ctx, q.sql, channel)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c resolver.VersionCount
			if err := rows.Scan(&c.Version, &c.Clusters); err != nil {
				t.Fatal(err)
			}
			*q.out = append(*q.out, c)
		}
		rows.Close()
	}
	sortCounts(&sum)
	return sum
}

func sortCounts(s *resolver.FleetSummary) {
	by := func(a, b resolver.VersionCount) int { return strings.Compare(a.Version, b.Version) }
	slices.SortFunc(s.Versions, by)
	slices.SortFunc(s.Served, by)
}
