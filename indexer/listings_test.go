package indexer

import (
	"context"
	"errors"
	"testing"
	"time"
)

func start(t *testing.T, g *listingGate) func() {
	t.Helper()
	end, err := g.start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return end
}

func TestListingGateDigestsWaitForListings(t *testing.T) {
	ctx := context.Background()
	g := newListingGate(4)

	begin := time.Now()
	g.wait(ctx, time.Minute)
	if d := time.Since(begin); d > 100*time.Millisecond {
		t.Errorf("wait with no listing took %s, want at once", d)
	}

	doneA, doneB := start(t, g), start(t, g)
	go func() {
		time.Sleep(50 * time.Millisecond)
		doneA()
		doneA() // a second call ends nothing more
		time.Sleep(100 * time.Millisecond)
		doneB()
	}()
	begin = time.Now()
	g.wait(ctx, time.Minute)
	if d := time.Since(begin); d < 140*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait returned after %s, want when the second listing ended (~150ms)", d)
	}

	defer start(t, g)()
	begin = time.Now()
	g.wait(ctx, 50*time.Millisecond)
	if d := time.Since(begin); d < 50*time.Millisecond || d > 5*time.Second {
		t.Errorf("wait under a listing that never ends took %s, want the 50ms bound", d)
	}
}

func TestListingGateBoundsListingsAtOnce(t *testing.T) {
	g := newListingGate(1)
	first := start(t, g)
	go func() { time.Sleep(100 * time.Millisecond); first() }()
	begin := time.Now()
	second := start(t, g)
	if d := time.Since(begin); d < 90*time.Millisecond {
		t.Errorf("second listing started after %s, want after the first ended (~100ms)", d)
	}

	// A listing waiting for a slot counts: digest phases wait for it too,
	// and when its ctx ends it gives up, counted no more.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("start with every slot taken and ctx ending: %v, want the deadline", err)
	}
	second()
	begin = time.Now()
	g.wait(context.Background(), time.Minute)
	if d := time.Since(begin); d > 100*time.Millisecond {
		t.Errorf("wait after every listing ended took %s, want at once", d)
	}
}
