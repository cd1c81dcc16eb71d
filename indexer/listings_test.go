package indexer

import (
	"context"
	"testing"
	"time"
)

func TestListingGate(t *testing.T) {
	ctx := context.Background()
	g := newListingGate()

	start := time.Now()
	g.wait(ctx, time.Minute)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("wait with no listing took %s, want at once", d)
	}

	doneA, doneB := g.start(), g.start()
	go func() {
		time.Sleep(50 * time.Millisecond)
		doneA()
		doneA() // a second call ends nothing more
		time.Sleep(100 * time.Millisecond)
		doneB()
	}()
	start = time.Now()
	g.wait(ctx, time.Minute)
	if d := time.Since(start); d < 140*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait returned after %s, want when the second listing ended (~150ms)", d)
	}

	defer g.start()()
	start = time.Now()
	g.wait(ctx, 50*time.Millisecond)
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait under a listing that never ends took %s, want the 50ms bound", d)
	}
}
