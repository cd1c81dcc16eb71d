package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestEvidenceCountersFollowTheFleet: the evidence counters (migrations
// 024, 025) agree exactly with counting the fleet itself (active to the
// second, stuck to the second), through first sightings, directed answers,
// stays and reports from two replicas' batches, a direct update, and a
// purge; a stay never changes what a cluster was directed; a cluster first
// seen after its channel first told a version does not count toward it;
// adoption medians match percentile_cont.
func TestEvidenceCountersFollowTheFleet(t *testing.T) {
	ctx := context.Background()
	st, conn := storeAndConn(t)
	t0 := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	versions := []string{"v1.0.0", "v1.1.0", "v1.2.0"}
	record := func(ss []resolver.Sighting) {
		t.Helper()
		if _, err := st.RecordFleet(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, activeSince, stuckBefore time.Time) {
		t.Helper()
		rows, _, err := st.EvidenceCounts(ctx, activeSince, stuckBefore)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range rows {
			got[fmt.Sprintf("%s %s %s %v", r.Channel, r.Served, r.Reported, r.Old || r.Reported == r.Served)] += r.Clusters
		}
		want := map[string]int{}
		res, err := conn.Query(ctx, `select f.channel, f.directed, f.reported,
				f.reported = f.directed or f.directed_since < $2, count(*)
			from fleet f join evidence_told t on t.channel = f.channel and t.version = f.directed
			where f.directed is not null and f.directed_since is not null and f.evidence and f.first_seen <= t.first_told
				and f.last_seen >= $1
			group by 1, 2, 3, 4`, activeSince, stuckBefore)
		if err != nil {
			t.Fatal(err)
		}
		var ch, sv, rp string
		var old bool
		var n int
		if _, err := pgx.ForEachRow(res, []any{&ch, &sv, &rp, &old, &n}, func() error {
			want[fmt.Sprintf("%s %s %s %v", ch, sv, rp, old)] = n
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: evidence counters (-counted +kept):\n%s", step, d)
		}
		// The served set's versions from fleet_served, exact at the
		// window's first (partial) minute.
		served, err := st.FleetActiveServed(ctx, activeSince)
		if err != nil {
			t.Fatal(err)
		}
		wantServed := map[string][]string{}
		res, err = conn.Query(ctx, `select distinct channel, directed from fleet
			where last_seen >= $1 and directed is not null and evidence order by 1, 2`, activeSince)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pgx.ForEachRow(res, []any{&ch, &sv}, func() error {
			wantServed[ch] = append(wantServed[ch], sv)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, vs := range served {
			slices.Sort(vs)
		}
		if d := cmp.Diff(wantServed, served); d != "" {
			t.Errorf("%s: versions served to active clusters (-fleet +kept):\n%s", step, d)
		}
	}
	// Two channels, 400 clusters, first seen over the first hour; the
	// channels tell v1.0.0 from the start.
	var batch []resolver.Sighting
	for i := range 400 {
		batch = append(batch, resolver.Sighting{Cluster: clusterID(i), Channel: []string{"a", "b"}[i%2],
			At: t0.Add(time.Duration(rng.IntN(3600)) * time.Second), Served: "v1.0.0", Directed: "v1.0.0", Reported: "v0.9.0"})
	}
	record(batch)
	check("first sightings", t0, t0.Add(time.Hour))
	// Rounds of polls from two replicas: answers move on, clusters adopt
	// or stay, some go silent.
	for round := range 6 {
		at := t0.Add(time.Hour + time.Duration(round)*10*time.Minute)
		var a, b []resolver.Sighting
		for i := range 400 {
			if rng.IntN(10) == 0 {
				continue // silent this round
			}
			s := resolver.Sighting{Cluster: clusterID(i), Channel: []string{"a", "b"}[i%2],
				At: at.Add(time.Duration(rng.IntN(600)) * time.Second), Served: versions[min(round/2, 2)]}
			switch rng.IntN(3) {
			case 0:
				s.Reported = s.Served
			case 1:
				s.Reported = versions[max(round/2-1, 0)]
			}
			if rng.IntN(5) == 0 {
				// A stay: it reports a version of its own, and is answered
				// it back; what it was directed stays as it was.
				s.Reported, s.Served = "v9.9.9", "v9.9.9"
			} else {
				s.Directed = s.Served
			}
			if rng.IntN(2) == 0 {
				a = append(a, s)
			} else {
				b = append(b, s)
			}
		}
		// Clusters first seen now cannot vote on what was told before.
		v := versions[min(round/2, 2)]
		a = append(a, resolver.Sighting{Cluster: fmt.Sprintf("late-%d", round), Channel: "a", At: at, Served: v, Directed: v, Reported: v})
		record(a)
		record(b)
		check(fmt.Sprintf("round %d", round), at.Add(-30*time.Minute+17*time.Second), at.Add(-25*time.Minute))
	}
	if _, err := conn.Exec(ctx, `update fleet set directed_since = directed_since - interval '3 hours' where cluster like 'c-1%'`); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2 * time.Hour)
	check("a direct update", now.Add(-time.Hour), now.Add(-time.Hour))
	if _, err := st.PurgeFleet(ctx, t0.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	check("purge", now.Add(-3*time.Hour), now.Add(-time.Hour))

	// Adoption medians: from the histogram, as percentile_cont over the
	// whole seconds each adopter took.
	var keys []resolver.ChannelVersion
	for _, ch := range []string{"a", "b"} {
		for _, v := range versions {
			keys = append(keys, resolver.ChannelVersion{Channel: ch, Version: v})
		}
	}
	meds, err := st.AdoptionMedians(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		var want float64
		if err := conn.QueryRow(ctx, `select coalesce(percentile_cont(0.5) within group (order by adoption_bucket(floor(extract(epoch from f.reported_since - f.directed_since))::bigint)), -1)
			from fleet f join evidence_told t on t.channel = f.channel and t.version = f.directed
			where f.channel = $1 and f.directed = $2 and f.reported = f.directed and f.directed_since is not null
				and f.reported_since is not null and f.evidence and f.first_seen <= t.first_told`, k.Channel, k.Version).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if meds[k] != want {
			t.Errorf("adoption median of %v: %v, percentile_cont says %v", k, meds[k], want)
		}
	}
}

// TestEvidenceHistoryIsBounded: a version whose figures moved every
// minute for 30 days reads back as at most 240 points, oldest first,
// ending with the newest.
func TestEvidenceHistoryIsBounded(t *testing.T) {
	ctx := context.Background()
	st, conn := storeAndConn(t)
	if _, err := conn.Exec(ctx, `insert into evidence_history (channel, version, at, told, adopted, stuck)
		select 'stable', 'v1.0.0', now() - interval '30 days' + g * interval '1 minute', 100, least(g, 100), 0
		from generate_series(0, 43199) g`); err != nil {
		t.Fatal(err)
	}
	h, err := st.EvidenceHistory(ctx, "stable", time.Now().Add(-31*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	pts := h["v1.0.0"]
	if len(pts) < 200 || len(pts) > 241 {
		t.Fatalf("%d points, want about 240", len(pts))
	}
	for i := 1; i < len(pts); i++ {
		if !pts[i].At.After(pts[i-1].At) {
			t.Fatalf("point %d at %v is not after %v", i, pts[i].At, pts[i-1].At)
		}
	}
	if last := pts[len(pts)-1]; time.Since(last.At) > 2*time.Minute || last.Adopted != 100 {
		t.Errorf("the last point %+v is not the newest", last)
	}
}

// storeAndConn is a store on a fresh database and a connection to it, for
// checking the store against SQL of the test's own; both close at the
// test's end.
func storeAndConn(t *testing.T) (*store.Store, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	u := storetest.URL(t)
	st, err := store.Open(ctx, u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return st, conn
}
