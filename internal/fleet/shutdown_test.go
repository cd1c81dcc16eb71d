package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestAFlushUnderWayAtShutdownIsWritten: a replica told to stop while a
// batch is being written (here: waiting on a row lock, as behind a slow
// database) finishes that write within its own deadline, then writes what
// came after. The shutdown used to cancel the write under way, and its
// batch was lost (counted as dropped, reason database).
func TestAFlushUnderWayAtShutdownIsWritten(t *testing.T) {
	ctx := context.Background()
	u := storetest.URL(t)
	st, err := store.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	if _, err := st.RecordFleet(ctx, []resolver.Sighting{{Cluster: "held", Channel: "stable", At: seen, Since: seen}}); err != nil {
		t.Fatal(err)
	}
	release := storetest.HoldLock(t, u, `select from fleet where cluster = 'held' for update`)

	reg := prometheus.NewRegistry()
	rec, err := fleet.New(fleet.Options{Store: st, FlushEvery: 20 * time.Millisecond}, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(runCtx, func(string, ...any) {}) }()

	now := time.Now().Truncate(time.Microsecond)
	rec.Record(resolver.Sighting{Cluster: "held", Channel: "stable", At: now})
	rec.Record(resolver.Sighting{Cluster: "free", Channel: "stable", At: now})
	storetest.WaitForLockWait(t, u)
	stop()
	// Still blocked: the shutdown must wait for the write, not cancel it.
	time.Sleep(100 * time.Millisecond)
	rec.Record(resolver.Sighting{Cluster: "late", Channel: "stable", At: now}) // a request still draining
	release()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the recorder did not stop after the lock was released")
	}

	for _, id := range []string{"held", "free", "late"} {
		recs, err := st.FleetCluster(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !recs[0].LastSeen.Equal(now) {
			t.Errorf("cluster %s after the shutdown: %+v, want one record last seen %s", id, recs, now)
		}
	}
	if n := dropped(t, reg, "database"); n != 0 {
		t.Errorf("tidemark_fleet_dropped_total{reason=database} = %v, want 0", n)
	}
}

// dropped is tidemark_fleet_dropped_total{reason} in reg.
func dropped(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tidemark_fleet_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no tidemark_fleet_dropped_total{reason=%q}", reason)
	return 0
}
