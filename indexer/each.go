package indexer

import (
	"context"
	"sync"
)

// each runs fn on every item, at most conc (at least 1) at a time, and
// returns when every call it made has returned. Once ctx ends no further
// item is handed out; the calls under way finish (fn sees ctx itself).
// The digest phase and the gate checks share it.
func each[T any](ctx context.Context, items []T, conc int, fn func(T)) {
	conc = max(conc, 1)
	work := make(chan T)
	var wg sync.WaitGroup
	for range min(conc, len(items)) {
		wg.Go(func() {
			for it := range work {
				fn(it)
			}
		})
	}
feed:
	for _, it := range items {
		if ctx.Err() != nil { // select would pick at random among ready cases
			break
		}
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}
