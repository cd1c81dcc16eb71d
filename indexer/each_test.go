package indexer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachBoundsConcurrencyAndStopsHandingOut(t *testing.T) {
	items := make([]int, 50)
	var running, peak, calls atomic.Int64
	each(context.Background(), items, 4, func(int) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		calls.Add(1)
	})
	if calls.Load() != 50 || peak.Load() > 4 || peak.Load() < 2 {
		t.Errorf("%d calls, peak %d at once; want 50 calls, at most 4 at once (and more than 1)", calls.Load(), peak.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls.Store(0)
	each(ctx, items, 2, func(int) {
		if calls.Add(1) == 3 {
			cancel()
		}
	})
	if n := calls.Load(); n < 3 || n > 5 {
		t.Errorf("%d calls after ctx ended at the third; want the calls under way to finish and no more handed out", n)
	}
	calls.Store(0)
	each(context.Background(), items[:3], 0, func(int) { calls.Add(1) })
	if calls.Load() != 3 {
		t.Errorf("conc 0 made %d calls, want 3 (one at a time)", calls.Load())
	}
}
