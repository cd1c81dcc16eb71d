package indexer

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// indexed loads what the store holds for the indexer's only source.
func indexed(t *testing.T, st *store.Store, ix *Indexer) catalog.SourceData {
	t.Helper()
	data, _, err := st.Load(context.Background(), []catalog.Source{ix.order[0].Source.Source})
	if err != nil {
		t.Fatal(err)
	}
	return data[0]
}

func byName(tags []resolver.Tag) map[string]resolver.Tag {
	m := map[string]resolver.Tag{}
	for _, t := range tags {
		m[t.Name] = t
	}
	return m
}

func names(tags []resolver.Tag) []string {
	var s []string
	for _, t := range tags {
		s = append(s, t.Name)
	}
	sort.Strings(s)
	return s
}

func newStoreIndexer(t *testing.T, reg *testRegistry, edit ...func(*Source)) (*store.Store, *Indexer) {
	t.Helper()
	st := storetest.New(t)
	ix := newTestIndexer(t, st, reg, "app", edit...)
	if err := st.SyncSources(context.Background(), []catalog.Source{ix.order[0].Source.Source}); err != nil {
		t.Fatal(err)
	}
	return st, ix
}

func TestScanIndexesThenRescanMakesNoManifestRequests(t *testing.T) {
	reg := newTestRegistry(t)
	digest := reg.push("app", "v1.0.0", "v1.1.0", "v2.0.0-rc.1", "nightly", "latest")
	reg.set(func(r *testRegistry) { r.pageSize = 2 })
	var changes atomic.Int64
	st, ix := newStoreIndexer(t, reg, func(s *Source) { s.Exclude = regexp.MustCompile(`^latest$`) })
	ix.onChng = func(string) { changes.Add(1) }
	ctx := context.Background()

	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	got := indexed(t, st, ix)
	if diff := cmp.Diff([]string{"nightly", "v1.0.0", "v1.1.0", "v2.0.0-rc.1"}, names(got.Tags)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	for _, tag := range got.Tags {
		if tag.Digest.String() != digest.String() {
			t.Errorf("%s digest = %q, want %s", tag.Name, tag.Digest, digest)
		}
	}
	if tags := byName(got.Tags); tags["nightly"].Valid || !tags["v1.0.0"].Valid {
		t.Errorf("nightly valid=%v, v1.0.0 valid=%v; want false, true", tags["nightly"].Valid, tags["v1.0.0"].Valid)
	}
	first := got.LastScan
	if first == nil || first.Outcome != "ok" || !first.Complete || first.TagsSeen != 4 || first.TagsNew != 4 || first.Requests < 3 {
		t.Fatalf("first scan = %+v; want ok, complete, 4 seen, 4 new, >= 3 requests (ping, 3 pages)", first)
	}
	if m := reg.manifests.Load(); m != 4 {
		t.Errorf("first scan manifest requests = %d, want 4 (one per new tag)", m)
	}
	if changes.Load() == 0 {
		t.Error("OnChange not called after a scan that found tags")
	}
	if p := value(t, ix.metrics.tags.WithLabelValues("app", "pending_digest")); p != 0 {
		t.Errorf("pending_digest = %v after every digest was recorded, want 0", p)
	}

	reg.manifests.Store(0)
	changes.Store(0)
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if m := reg.manifests.Load(); m != 0 {
		t.Errorf("no-change rescan made %d manifest requests, want 0", m)
	}
	again := indexed(t, st, ix).LastScan
	if again.ID == first.ID || again.TagsNew != 0 || again.TagsGone != 0 || again.Requests != 3 {
		// The registry's answer to the ping is remembered (pings.go).
		t.Errorf("rescan = %+v; want a new scan, 0 new, 0 gone, 3 requests (3 pages, no ping)", again)
	}
	if first.Requests != 1+again.Requests+4 {
		// The first page's request doubles as the ping (pings.go), after
		// a refused https attempt at this http registry.
		t.Errorf("first scan recorded %d requests, want an https attempt, the rescan's %d and 4 digest requests", first.Requests, again.Requests)
	}
	// The rescan changed no tag, but the source's status (its last scan)
	// changed: one OnChange, so that this replica shows it (issue 25).
	if changes.Load() != 1 {
		t.Errorf("OnChange called %d times after a no-change rescan, want 1 (the status)", changes.Load())
	}
}

func TestScanRecordsGoneAndRetaggedTags(t *testing.T) {
	reg := newTestRegistry(t)
	old := reg.push("app", "v1.0.0", "v1.1.0", "v1.2.0")
	st, ix := newStoreIndexer(t, reg)
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}

	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	retagged := reg.pushImage(img, "app", "v1.1.0")
	reg.untag("app", "v1.2.0")
	if err := ix.RecheckDigests(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	got := indexed(t, st, ix)
	if diff := cmp.Diff([]string{"v1.0.0", "v1.1.0"}, names(got.Tags)); diff != "" {
		t.Errorf("present tags (-want +got):\n%s", diff)
	}
	tag := byName(got.Tags)["v1.1.0"]
	if tag.Digest.String() != retagged.String() || tag.PreviousDigest() != old.String() {
		t.Errorf("re-tagged v1.1.0: digest %s previous %s; want %s previous %s", tag.Digest, tag.PreviousDigest(), retagged, old)
	}
	if got.LastScan.TagsGone != 1 {
		t.Errorf("scan = %+v, want 1 gone", got.LastScan)
	}
}

func TestScanThatFailsPartWayChangesNothing(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0", "v1.2.0", "v1.3.0")
	reg.set(func(r *testRegistry) { r.pageSize = 2 })
	st, ix := newStoreIndexer(t, reg)
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	before := indexed(t, st, ix)

	// Tags change, then the second page fails for good.
	reg.untag("app", "v1.0.0")
	reg.push("app", "v1.4.0")
	var lists atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.HasSuffix(req.URL.Path, "/tags/list") && lists.Add(1) > 1 {
				w.WriteHeader(http.StatusBadGateway)
				return true
			}
			return false
		}
	})
	reg.manifests.Store(0)
	err := ix.ScanNow(ctx, "app")
	if err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err = %v, want the 502", err)
	}
	after := indexed(t, st, ix)
	if diff := cmp.Diff(names(before.Tags), names(after.Tags)); diff != "" {
		t.Errorf("a failed listing changed the tags (-before +after):\n%s", diff)
	}
	if s := after.LastScan; s.Outcome != "failed" || s.Complete || !strings.Contains(s.Error, "502") || s.Requests < 2 {
		t.Errorf("failed scan recorded as %+v", s)
	}
	if after.LastOK == nil || after.LastOK.ID != before.LastScan.ID {
		t.Errorf("last ok scan = %+v, want the first scan", after.LastOK)
	}
	if m := reg.manifests.Load(); m != 0 {
		t.Errorf("failed scan made %d manifest requests", m)
	}
	if p := ix.Status("app"); p.Running || !strings.Contains(p.LastError, "502") {
		t.Errorf("status = %+v", p)
	}
}

func TestScanNowJoinsTheRunningScan(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	release := make(chan struct{})
	var lists atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.HasSuffix(req.URL.Path, "/tags/list") && lists.Add(1) == 1 {
				<-release // hold the first listing until both callers are in
			}
			return false
		}
	})
	st, ix := newStoreIndexer(t, reg)
	ix.retry.Timeout = 10 * time.Second
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = ix.ScanNow(context.Background(), "app") })
	}
	for !ix.Status("app").Running {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := lists.Load(); n != 1 {
		t.Errorf("%d listings for 3 concurrent ScanNow calls, want 1", n)
	}
	if s := indexed(t, st, ix).LastScan; s.TagsSeen != 1 {
		t.Errorf("scan = %+v", s)
	}
	if err := ix.ScanNow(context.Background(), "nope"); !errorsIs(err, resolver.ErrNotFound) {
		t.Errorf("unknown source: err = %v, want ErrNotFound", err)
	}
}

func TestRunScansAtStartOnlyWhenHoldingTheLock(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0")
	st, ix := newStoreIndexer(t, reg, func(s *Source) { s.Interval = time.Hour })
	ix.lockRetry = 20 * time.Millisecond
	metrics := prometheus.NewRegistry()
	m, err := newMetrics(metrics)
	if err != nil {
		t.Fatal(err)
	}
	ix.metrics = m

	// Another replica holds the lock: nothing is scanned.
	other, held, err := st.TryIndexerLock(context.Background())
	if err != nil || !held {
		t.Fatalf("lock: held=%v err=%v", held, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	time.Sleep(200 * time.Millisecond)
	if indexed(t, st, ix).LastScan != nil {
		t.Fatal("a standby replica scanned")
	}
	// The holder goes away: this one takes over and scans at once.
	other.Release()
	deadline := time.Now().Add(10 * time.Second)
	for indexed(t, st, ix).LastOK == nil || ix.Status("app").Running {
		if time.Now().After(deadline) {
			t.Fatal("no scan after the lock was released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil at shutdown", err)
	}
	if n := value(t, m.scans.WithLabelValues("app", "ok")); n != 1 {
		t.Errorf("scans_total{ok} = %v, want 1", n)
	}
	if n := value(t, m.tags.WithLabelValues("app", "valid")); n != 2 {
		t.Errorf("tags{valid} = %v, want 2", n)
	}
	if n := value(t, m.requests.WithLabelValues(reg.host, "200")); n < 3 {
		t.Errorf("registry_requests_total{200} = %v, want >= 3", n)
	}
	if n := value(t, m.lastOK.WithLabelValues("app")); n < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last_successful_scan_timestamp_seconds = %v", n)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// value reads a counter or gauge without client_golang's testutil (which
// needs a module this repository does not require).
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// The digest re-check is due by the time kept in the store, not by how long
// this process has run: a freshly started indexer re-checks on its first
// scheduled scan when the last re-check is older than Recheck, and not when
// it is recent.
func TestRecheckIsDueByTheStoredTimeAcrossRestarts(t *testing.T) {
	tests := []struct {
		name          string
		lastRecheck   time.Duration // ago
		wantManifests int64
	}{
		{"a re-check older than Recheck is done on the first scan", 25 * time.Hour, 3},
		{"a recent re-check is not repeated", time.Minute, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			reg.push("app", "v1.0.0", "v1.1.0", "v1.2.0")
			st, first := newStoreIndexer(t, reg)
			ctx := context.Background()
			if err := first.ScanNow(ctx, "app"); err != nil {
				t.Fatal(err)
			}
			last := time.Now().Add(-tc.lastRecheck)
			if err := st.SetRecheckedAt(ctx, "app", last); err != nil {
				t.Fatal(err)
			}

			reg.manifests.Store(0)
			ix := newTestIndexer(t, st, reg, "app", func(s *Source) { s.Recheck = 24 * time.Hour })
			ix.scheduled(ctx, ix.order[0])
			if m := reg.manifests.Load(); m != tc.wantManifests {
				t.Errorf("first scheduled scan made %d manifest requests, want %d", m, tc.wantManifests)
			}
			at, err := st.RecheckedAt(ctx, "app")
			if err != nil {
				t.Fatal(err)
			}
			if rechecked := at.After(last.Add(time.Second)); rechecked != (tc.wantManifests > 0) {
				t.Errorf("rechecked_at = %v after the scan (was %v); want it moved only by a re-check", at, last)
			}
		})
	}
}

// TestAFailedScanIsShownAtOnce: a scan that fails is recorded and this
// replica is told (OnChange), so GET /api/v1/sources/{source} and the
// last-success metric show it within a second, not at the next tag change
// (issue 25 item 1).
func TestAFailedScanIsShownAtOnce(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	st, ix := newStoreIndexer(t, reg)
	var changes atomic.Int64
	ix.onChng = func(string) { changes.Add(1) }
	ctx := context.Background()
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				http.Error(w, "<html>upstream down</html>", http.StatusBadGateway)
				return true
			}
			return false
		}
	})
	if err := ix.ScanNow(ctx, "app"); err == nil {
		t.Fatal("a scan of a registry answering 502 succeeded")
	}
	if n := changes.Load(); n != 1 {
		t.Errorf("OnChange called %d times after a failed scan, want 1", n)
	}
	if last := indexed(t, st, ix).LastScan; last.Outcome != "failed" || last.Error == "" {
		t.Errorf("last scan %+v, want the failure recorded", last)
	}
}

// TestARequestedScanReadsReTags: POST .../scan (Trigger) re-reads digests,
// so a tag re-pushed with a new digest is recorded by it (issue 25 item 2).
func TestARequestedScanReadsReTags(t *testing.T) {
	reg := newTestRegistry(t)
	old := reg.push("app", "v1.0.0")
	st, ix := newStoreIndexer(t, reg)
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	retagged := reg.pushImage(img, "app", "v1.0.0")
	if err := ix.Trigger(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the re-tag", func() bool { return byName(indexed(t, st, ix).Tags)["v1.0.0"].Digest.String() == retagged.String() })
	if prev := byName(indexed(t, st, ix).Tags)["v1.0.0"].PreviousDigest(); prev != old.String() {
		t.Errorf("previous digest %s, want %s", prev, old)
	}
}
