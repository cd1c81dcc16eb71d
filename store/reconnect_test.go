package store_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// killSessions ends every session on u's database, as a Postgres restart
// does: each pooled connection then holds a FATAL 57P01 ("terminating
// connection due to administrator command") that pgx reads on its next use.
func killSessions(t *testing.T, u string) int {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	rows := query(t, storetest.AdminURL(t), `select pg_terminate_backend(pid) from pg_stat_activity
		where datname = $1 and pid <> pg_backend_pid()`, strings.TrimPrefix(pu.Path, "/"))
	return len(rows)
}

// dropEveryConnection fills the store's pool with several idle
// connections (use, four at once), then ends every session as a restart
// does, and waits for the FATALs to reach the sockets.
func dropEveryConnection(t *testing.T, u string, use func() error) {
	t.Helper()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := use(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := killSessions(t, u); n == 0 {
		t.Fatal("no session to end")
	}
	time.Sleep(50 * time.Millisecond)
}

func TestWritesAfterTheDatabaseDroppedEveryConnectionSucceed(t *testing.T) {
	st, u := newStore(t, "a")
	ctx := context.Background()
	old := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	dropEveryConnection(t, u, func() error { return st.SetRecheckedAt(ctx, "a", old) })
	for i := range 4 {
		if err := st.SetRecheckedAt(ctx, "a", old.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatalf("write %d after the sessions ended: %v", i+1, err)
		}
	}
	if _, err := st.RecheckedAt(ctx, "a"); err != nil {
		t.Fatalf("read after the sessions ended: %v", err)
	}
}

// TestLoadSourcesAfterTheDatabaseDroppedEveryConnection: a reload's read,
// one batch that begins its own transaction, is retried whole on a new
// connection when the pooled one's session ended (its BEGIN fails first).
func TestLoadSourcesAfterTheDatabaseDroppedEveryConnection(t *testing.T) {
	st, u := newStore(t, "a")
	ctx := context.Background()
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "a", Complete: true, Tags: tags("1.0.0", "1.1.0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Block(ctx, "a", "1.1.0", "me", "bad"); err != nil {
		t.Fatal(err)
	}
	srcs := []catalog.Source{source(t, "a")}
	dropEveryConnection(t, u, func() error { _, err := st.LoadSources(ctx, srcs); return err })
	for i := range 4 {
		data, err := st.LoadSources(ctx, srcs)
		if err != nil {
			t.Fatalf("load %d after the sessions ended: %v", i+1, err)
		}
		if len(data) != 1 || len(data[0].Tags) != 2 || len(data[0].Blocks) != 1 || data[0].LastScan == nil {
			t.Fatalf("load %d after the sessions ended = %+v, want a's two tags, its block and its scan", i+1, data)
		}
	}
}

// TestLoadStatesAfterTheDatabaseDroppedEveryConnection: the states' read
// (pins, holds, rollouts and their events in one batch) is retried whole
// on a new connection, as the sources' is.
func TestLoadStatesAfterTheDatabaseDroppedEveryConnection(t *testing.T) {
	st, u := newStore(t, "a")
	ctx := context.Background()
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "a", Complete: true, Tags: tags("1.0.0", "1.1.0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "1.0.0", Actor: "me", IfRevision: resolver.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	if err := st.BeginHold(ctx, "edge", resolver.Hold{Version: "1.1.0", Reason: "freeze"}); err != nil {
		t.Fatal(err)
	}
	base := snapshot.RolloutStart{Channel: "canary", Served: "1.0.0", To: "1.0.0", Policy: testPolicy, Baseline: true}
	if ok, err := st.StartRollout(ctx, base); err != nil || !ok {
		t.Fatalf("baseline: started %v, %v", ok, err)
	}
	b := latestOf(t, st, "canary")
	if ok, err := st.StartRollout(ctx, snapshot.RolloutStart{Channel: "canary", Prev: b.ID, Served: "1.0.0", To: "1.1.0", Policy: testPolicy}); err != nil || !ok {
		t.Fatalf("rollout: started %v, %v", ok, err)
	}
	if _, err := st.RolloutControl(ctx, "canary", "pause", "me", "look"); err != nil {
		t.Fatal(err)
	}
	dropEveryConnection(t, u, func() error { _, err := st.LoadStates(ctx); return err })
	for i := range 4 {
		states, err := st.LoadStates(ctx)
		if err != nil {
			t.Fatalf("load %d after the sessions ended: %v", i+1, err)
		}
		if states["stable"].Pin != "1.0.0" || states["edge"].Hold == nil || states["edge"].Hold.Reason != "freeze" {
			t.Fatalf("load %d after the sessions ended = %+v, want stable pinned to 1.0.0 and edge held", i+1, states)
		}
		if r := states["canary"].Rollout; r == nil || r.To != "1.1.0" || len(r.Events) != 1 || r.Events[0].Kind != "pause" {
			t.Fatalf("load %d after the sessions ended: canary's rollout %+v, want the one to 1.1.0 with its pause", i+1, r)
		}
	}
}
