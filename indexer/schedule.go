package indexer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tidemark-dev/tidemark/resolver"
)

// errLockLost ends leading when the indexer lock's session ended.
var errLockLost = errors.New("indexer lock lost (its database session ended); another replica may index now")

// leadWhileHeld leads until ctx ends or the lock is lost, whichever is first.
func (ix *Indexer) leadWhileHeld(ctx context.Context, lock resolver.Lock) error {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lock.Lost():
			cancel(errLockLost)
		case <-lctx.Done():
		}
	}()
	ix.leading.Store(true)
	ix.metrics.leader.Set(1)
	defer func() {
		ix.leading.Store(false)
		ix.metrics.leader.Set(0)
	}()
	err := ix.lead(lctx)
	if cause := context.Cause(lctx); errors.Is(cause, errLockLost) {
		return cause
	}
	return err
}

// lead indexes while this replica holds the lock: one scan of every source at
// once, then one gocron job per source at its interval, until ctx ends.
func (ix *Indexer) lead(ctx context.Context) error {
	srcs := make([]resolver.Source, len(ix.order))
	for i, s := range ix.order {
		srcs[i] = s.Source.Source
	}
	if err := ix.store.SyncSources(ctx, srcs); err != nil {
		return fmt.Errorf("recording sources: %w", err)
	}
	// A job still running when the stop timeout passes is not lost track
	// of: Run waits for every scan before it returns.
	sched, err := gocron.NewScheduler(gocron.WithStopTimeout(10 * time.Second))
	if err != nil {
		return fmt.Errorf("starting scheduler: %w", err)
	}
	var once sync.WaitGroup // scans of sources without an interval
	for _, src := range ix.order {
		if src.Interval <= 0 {
			once.Go(func() { ix.scheduled(ctx, src) })
			continue
		}
		// Singleton with reschedule: a scan that outlasts its interval
		// skips the overlapping run rather than queueing it.
		_, err := sched.NewJob(
			gocron.DurationJob(src.Interval),
			gocron.NewTask(ix.scheduled, ctx, src),
			gocron.WithName(src.Name),
			gocron.WithSingletonMode(gocron.LimitModeReschedule),
			gocron.WithStartAt(gocron.WithStartImmediately()),
		)
		if err != nil {
			_ = sched.Shutdown()
			return fmt.Errorf("scheduling source %q every %s: %w", src.Name, src.Interval, err)
		}
	}
	sched.Start()
	<-ctx.Done()
	once.Wait()
	if err := sched.Shutdown(); err != nil {
		ix.log.Warn("stopping scheduler", "err", err)
	}
	return nil
}

// scheduled is a scheduled scan; its error is logged and counted by scan.
// It re-checks every digest when the last re-check (kept in the store) is
// Recheck old.
func (ix *Indexer) scheduled(ctx context.Context, src *source) {
	ix.scans.add()
	defer ix.scans.done()
	recheck := false
	if src.Recheck > 0 {
		at, err := ix.store.RecheckedAt(ctx, src.Name)
		if err != nil && ctx.Err() == nil {
			// The scan itself will say whether the database is there; the
			// re-check waits for a scan that can tell when it is due.
			ix.log.WarnContext(ctx, "reading when digests were last re-checked; not re-checking in this scan",
				"source", src.Name, "err", err)
		}
		recheck = err == nil && time.Since(at) >= src.Recheck
	}
	_ = ix.scanOrJoin(ctx, src, recheck)
}
