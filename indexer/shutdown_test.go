package indexer

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
)

// holdListing makes reg hold every tag list request until release is closed
// or the client gives up; listing receives once per held request.
func holdListing(reg *testRegistry) (listing <-chan struct{}, release func()) {
	in := make(chan struct{}, 10)
	stop := make(chan struct{})
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if !strings.HasSuffix(req.URL.Path, "/tags/list") {
				return false
			}
			in <- struct{}{}
			select {
			case <-stop:
				return false // answered by the registry
			case <-req.Context().Done():
				return true
			}
		}
	})
	var once sync.Once
	return in, func() { once.Do(func() { close(stop) }) }
}

// A scan cut short by shutdown (or a lost lock) is not a failed scan: nothing
// is recorded, scans_total{failed} stays 0, the log says "scan interrupted"
// at INFO and nothing at ERROR, and the status shows no error.
func TestScanInterruptedByShutdownIsNotAFailure(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	st, ix := newStoreIndexer(t, reg)
	ix.retry.Timeout = 10 * time.Second
	var logs testutil.LockedBuffer
	ix.log = slog.New(slog.NewTextHandler(&logs, nil))
	listing, release := holdListing(reg)
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ix.ScanNow(ctx, "app") }()
	<-listing
	cancel()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("ScanNow = %v, want an interrupted scan", err)
	}
	t.Log(logs.String())
	if s := indexed(t, st, ix).LastScan; s != nil {
		t.Errorf("interrupted scan recorded as %+v, want nothing recorded", s)
	}
	if n := value(t, ix.metrics.scans.WithLabelValues("app", "failed")); n != 0 {
		t.Errorf("scans_total{failed} = %v, want 0", n)
	}
	if out := logs.String(); !strings.Contains(out, `level=INFO msg="scan interrupted"`) || strings.Contains(out, "level=ERROR") {
		t.Errorf("log does not say the scan was interrupted at INFO without an ERROR:\n%s", out)
	}
	if p := ix.Status("app"); p.Running || p.LastError != "" {
		t.Errorf("status = %+v, want idle without an error", p)
	}
}

// Run's caller closes the store when Run returns, so Run must not return
// under a scan still in flight: here one triggered by a request while
// another replica leads.
func TestRunReturnsOnlyAfterTheTriggeredScanFinished(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	st, ix := newStoreIndexer(t, reg)
	ix.retry.Timeout = 10 * time.Second
	other, held, err := st.TryIndexerLock(context.Background())
	if err != nil || !held {
		t.Fatalf("lock: held=%v err=%v", held, err)
	}
	defer other.Release()
	listing, release := holdListing(reg)
	defer release()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ix.Run(ctx) }()
	if err := ix.Trigger(context.Background(), "app"); err != nil {
		t.Fatal(err)
	}
	<-listing
	cancel()
	select {
	case <-done:
		t.Fatal("Run returned while a triggered scan was still listing")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil at shutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of the scan being let go")
	}
	if p := ix.Status("app"); p.Running {
		t.Error("Run returned with the scan still running")
	}
	if s := indexed(t, st, ix).LastScan; s == nil || s.Outcome != "ok" {
		t.Errorf("last scan = %+v, want the triggered scan recorded ok before Run returned", s)
	}
}
