package indexer

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidemark-dev/tidemark/store"
)

func TestRegistryDownMidDigestsStopsThePhaseAndSaysSo(t *testing.T) {
	reg := newTestRegistry(t)
	all := tagNames(300)
	reg.push("app", all...)
	st, ix := newStoreIndexer(t, reg, func(s *Source) { s.Concurrency = 4 })
	// The registry dies for good after 40 manifest requests: it stops
	// listening and drops every connection, as a crashed host would.
	var heads atomic.Int64
	var once sync.Once
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.Contains(req.URL.Path, "/manifests/") && heads.Add(1) > 40 {
				once.Do(func() {
					r.srv.Listener.Close()
					go r.srv.CloseClientConnections()
				})
				http.Error(w, "shutting down", http.StatusServiceUnavailable)
				return true
			}
			return false
		}
	})
	err := ix.ScanNow(context.Background(), "app")
	if err == nil || !strings.Contains(err.Error(), "registry "+reg.host) || !strings.Contains(err.Error(), "in a row failed") {
		t.Fatalf("scan err = %v, want the registry named as down", err)
	}
	got := indexed(t, st, ix)
	if s := got.LastScan; s == nil || s.Outcome != "failed" || !strings.Contains(s.Error, "digests stopped") || s.TagsSeen != 300 {
		t.Errorf("last scan = %+v, want failed, 300 tags seen, saying digests stopped", s)
	}
	var withDigest int
	for _, tag := range got.Tags {
		if !tag.Digest.IsZero() {
			withDigest++
		}
	}
	if withDigest < 30 || withDigest > 40 {
		t.Errorf("%d tags kept a digest, want those resolved before the registry died (~40)", withDigest)
	}
	// Without the breaker every one of the 260 other tags is tried 4 times.
	if n := got.LastScan.Requests; n > 120 {
		t.Errorf("scan made %d registry requests, want the digest phase stopped soon after the registry died", n)
	}
	if p := ix.Status("app"); !strings.Contains(p.LastError, "in a row failed") {
		t.Errorf("status last error = %q", p.LastError)
	}
}

// batchStore records the size of every SetDigests.
type batchStore struct {
	*store.Store
	mu    sync.Mutex
	sizes []int
}

func (s *batchStore) SetDigests(ctx context.Context, source string, d map[string]string) error {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(d))
	s.mu.Unlock()
	return s.Store.SetDigests(ctx, source, d)
}

func TestDigestsAreWrittenInSmallBatches(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", tagNames(175)...)
	st, ix := newStoreIndexer(t, reg)
	bs := &batchStore{Store: st}
	ix.store = bs
	if err := ix.ScanNow(context.Background(), "app"); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range bs.sizes {
		if n > digestBatch {
			t.Errorf("a batch of %d digests, want at most %d: a kill loses the batch", n, digestBatch)
		}
		total += n
	}
	if total != 175 || len(bs.sizes) < 4 {
		t.Errorf("batches %v: want 175 digests in at least 4 writes", bs.sizes)
	}
}
