package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// holdSource locks source's row from a connection of its own, so that the
// group of listings that includes it waits at its lock, and returns when
// that group is waiting. Listings applied before release queue for the
// next group. release ends the lock.
func holdSource(t *testing.T, st *store.Store, u, source string) (applied <-chan error, release func()) {
	t.Helper()
	// Ended at the test's end too: a group left waiting would hang the
	// store's Close.
	release = storetest.HoldLock(t, u, fmt.Sprintf(`select from sources where name = '%s' for update`, source))
	done := make(chan error, 1)
	go func() {
		_, err := st.ApplyScan(context.Background(), resolver.ScanResult{Source: source, Complete: true, Tags: tags("gate")})
		done <- err
	}()
	storetest.WaitForLockWait(t, u)
	return done, release
}

// applyAll applies each listing in its own goroutine, as the indexer's
// concurrent scans do, after the queue had time to take them.
func applyAll(st *store.Store, results []resolver.ScanResult) ([]catalog.Scan, []error, func()) {
	scans, errs := make([]catalog.Scan, len(results)), make([]error, len(results))
	var wg sync.WaitGroup
	for i, r := range results {
		wg.Go(func() { scans[i], errs[i] = st.ApplyScan(context.Background(), r) })
	}
	return scans, errs, wg.Wait
}

func namedTags(prefix string, n int) []resolver.Tag {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return tags(names...)
}

// First listings that arrive while a group is being recorded are recorded
// together in the next one: one transaction, so their rows share an xmin.
func TestFirstListingsArrivingTogetherShareATransaction(t *testing.T) {
	const n = 20
	names := []string{"gate"}
	for i := range n {
		names = append(names, fmt.Sprintf("s%02d", i))
	}
	st, u := newStore(t, names...)
	got := listen(t, st)
	gate, release := holdSource(t, st, u, "gate")
	var results []resolver.ScanResult
	for _, name := range names[1:] {
		results = append(results, resolver.ScanResult{Source: name, Complete: true, Tags: namedTags(name, 50)})
	}
	scans, errs, wait := applyAll(st, results)
	time.Sleep(200 * time.Millisecond) // for the listings to queue behind the held group
	release()
	wait()
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for i, sc := range scans {
		if errs[i] != nil {
			t.Fatalf("%s: %v", names[i+1], errs[i])
		}
		if sc.ID == 0 || ids[sc.ID] || sc.Source != names[i+1] || !sc.Complete || sc.TagsSeen != 50 || sc.TagsNew != 50 || sc.TagsGone != 0 {
			t.Errorf("%s: scan %+v, want its own ID, complete, 50 seen and new", names[i+1], sc)
		}
		ids[sc.ID] = true
	}
	rows := query(t, u, `select s.source, s.tags_new, count(t.tag), count(distinct t.xmin::text), min(t.xmin::text)
		from scans s join tags t on t.source = s.source where s.source <> 'gate' group by s.source, s.tags_new`)
	if len(rows) != n {
		t.Fatalf("%d sources with scans and tags, want %d", len(rows), n)
	}
	xmins := map[string]bool{}
	for _, r := range rows {
		if r[1].(int32) != 50 || r[2].(int64) != 50 || r[3].(int64) != 1 {
			t.Errorf("source %s: scan row says %d new, %d tags rows in %d transactions; want 50, 50, 1", r[0], r[1], r[2], r[3])
		}
		xmins[r[4].(string)] = true
	}
	if len(xmins) >= n {
		t.Errorf("%d first listings recorded in %d transactions, want them grouped", n, len(xmins))
	}
	t.Logf("%d first listings recorded in %d transactions", n, len(xmins))
	// The metric says the same: every listing counted once (the gate's
	// too), in fewer commits than listings.
	commits, recorded := scansPerCommit(t, st)
	if recorded != n+1 || commits >= n+1 {
		t.Errorf("tidemark_store_scans_per_commit: %d scans in %d commits, want %d scans in fewer commits", recorded, commits, n+1)
	}
	notified := map[string]bool{}
	for range n + 1 {
		m := next(t, got)
		if m["kind"] != "scan" || m["tags"] != "" {
			t.Errorf("notification %v, want a plain scan", m)
		}
		notified[m["source"]] = true
	}
	if len(notified) != n+1 {
		t.Errorf("notified %d sources, want %d", len(notified), n+1)
	}
}

// A group whose transaction fails (here on a tag Postgres refuses) records
// each of its listings alone: only the bad one fails. A listing the group
// cannot take (changed, or of a source never synced) is recorded alone too.
func TestAGroupThatFailsRecordsEachListingAlone(t *testing.T) {
	st, u := newStore(t, "gate", "first", "same", "changed", "bad")
	ctx := context.Background()
	for _, name := range []string{"same", "changed"} {
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: name, Complete: true, Tags: tags("a", "b")}); err != nil {
			t.Fatal(err)
		}
	}
	gate, release := holdSource(t, st, u, "gate")
	scans, errs, wait := applyAll(st, []resolver.ScanResult{
		{Source: "first", Complete: true, Tags: tags("a", "b", "c")},
		{Source: "same", Complete: true, Tags: tags("b", "a")},
		{Source: "changed", Complete: true, Tags: tags("b", "c")},
		{Source: "ghost", Complete: true, Tags: tags("a")},
		{Source: "bad", Complete: true, Tags: tags("a", "\xff")},
	})
	time.Sleep(200 * time.Millisecond)
	release()
	wait()
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	want := []struct{ seen, added, gone int }{{3, 3, 0}, {2, 0, 0}, {2, 1, 1}}
	for i, w := range want {
		sc := scans[i]
		if errs[i] != nil || sc.ID == 0 || sc.TagsSeen != w.seen || sc.TagsNew != w.added || sc.TagsGone != w.gone {
			t.Errorf("listing %d: scan %+v, err %v; want %d seen, %d new, %d gone", i, sc, errs[i], w.seen, w.added, w.gone)
		}
	}
	if !errors.Is(errs[3], resolver.ErrNotFound) || !strings.Contains(errs[3].Error(), `"ghost"`) {
		t.Errorf("listing of an unsynced source: err %v, want ErrNotFound naming it", errs[3])
	}
	if errs[4] == nil || !strings.Contains(errs[4].Error(), `"bad"`) {
		t.Errorf("listing with a tag Postgres refuses: err %v, want one naming the source", errs[4])
	}
	got := query(t, u, `select source, string_agg(tag, ',' order by tag) from tags where present group by source order by source`)
	wantTags := [][]any{{"changed", "b,c"}, {"first", "a,b,c"}, {"gate", "gate"}, {"same", "a,b"}}
	if fmt.Sprint(got) != fmt.Sprint(wantTags) {
		t.Errorf("present tags %v, want %v", got, wantTags)
	}
}

// A group aborted by a deadlock (here with a transaction that locks its
// sources in the other order) records each listing alone: neither fails.
func TestAGroupAbortedByADeadlockRecordsEachListingAlone(t *testing.T) {
	st, u := newStore(t, "gate", "a", "b")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx); _ = conn.Close(ctx) })
	if _, err := tx.Exec(ctx, `select from sources where name = 'b' for update`); err != nil {
		t.Fatal(err)
	}
	gate, release := holdSource(t, st, u, "gate")
	scans, errs, wait := applyAll(st, []resolver.ScanResult{
		{Source: "a", Complete: true, Tags: tags("1")},
		{Source: "b", Complete: true, Tags: tags("2")},
	})
	time.Sleep(200 * time.Millisecond)
	release() // the group of a and b locks a, then waits for b
	if err := <-gate; err != nil {
		t.Fatal(err)
	}
	storetest.WaitForLockWait(t, u)
	// Lock a too: a deadlock, which Postgres breaks by aborting the group
	// (it waited first, so its check runs first).
	if _, err := tx.Exec(ctx, `select from sources where name = 'a' for update`); err != nil {
		t.Fatalf("the other transaction was the one aborted: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wait()
	for i, sc := range scans {
		if errs[i] != nil || sc.ID == 0 || sc.TagsNew != 1 {
			t.Errorf("listing %d: scan %+v, err %v; want it recorded", i, sc, errs[i])
		}
	}
}

// scansPerCommit reads tidemark_store_scans_per_commit from st's
// collectors: how many commits recorded scans, and how many scans.
func scansPerCommit(t *testing.T, st *store.Store) (commits, scans int) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(st.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tidemark_store_scans_per_commit" {
			h := mf.GetMetric()[0].GetHistogram()
			return int(h.GetSampleCount()), int(h.GetSampleSum())
		}
	}
	t.Fatal("no tidemark_store_scans_per_commit among the store's collectors")
	return 0, 0
}
