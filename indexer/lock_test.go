package indexer

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killLockHolders ends the sessions holding advisory locks on u's database,
// from the admin database, as an operator or a database restart would.
func killLockHolders(t *testing.T, u string) int {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `select pg_terminate_backend(pid) from pg_locks
		where locktype = 'advisory' and database = (select oid from pg_database where datname = $1)`,
		strings.TrimPrefix(pu.Path, "/"))
	if err != nil {
		t.Fatal(err)
	}
	killed, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		t.Fatal(err)
	}
	return len(killed)
}

func TestRunStopsLeadingWhenTheLockIsLostAndAnotherTakesOver(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	u := storetest.URL(t)
	st, err := store.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	hourly := func(s *Source) { s.Interval = time.Hour }
	a := newTestIndexer(t, st, reg, "app", hourly)
	b := newTestIndexer(t, st, reg, "app", hourly)
	if err := st.SyncSources(context.Background(), []catalog.Source{a.order[0].Source.Source}); err != nil {
		t.Fatal(err)
	}
	a.lockRetry = time.Hour // once a has lost the lock, it stays out of b's way
	b.lockRetry = 20 * time.Millisecond

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(ix *Indexer) <-chan error {
		done := make(chan error, 1)
		go func() { done <- ix.Run(ctx) }()
		return done
	}
	doneA := run(a)
	waitFor(t, "a leads", a.Leading)
	doneB := run(b)
	time.Sleep(100 * time.Millisecond)
	if b.Leading() {
		t.Fatal("b leads while a holds the lock")
	}

	if n := killLockHolders(t, u); n != 1 {
		t.Fatalf("killed %d lock holders, want 1", n)
	}
	waitFor(t, "a stops leading", func() bool { return !a.Leading() })
	waitFor(t, "b takes over", b.Leading)
	if a.Leading() {
		t.Error("a leads again alongside b")
	}
	if got := value(t, a.metrics.leader); got != 0 {
		t.Errorf("a's leader gauge = %v, want 0", got)
	}
	if got := value(t, b.metrics.leader); got != 1 {
		t.Errorf("b's leader gauge = %v, want 1", got)
	}
	// b scanned at once on taking over: a second ok scan (a's was the first).
	waitFor(t, "b's first scan", func() bool { return value(t, b.metrics.scans.WithLabelValues("app", "ok")) == 1 })

	cancel()
	for name, done := range map[string]<-chan error{"a": doneA, "b": doneB} {
		if err := <-done; err != nil {
			t.Errorf("%s: Run = %v, want nil at shutdown", name, err)
		}
	}
	if b.Leading() {
		t.Error("b still leading after Run returned")
	}
}
