package indexer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TryLock tries to take the lock whose holder indexes (one replica of
// many). held reports whether this process now holds it. lost is closed if
// the lock goes away without release (its database session ended), so the
// holder stops before another takes over; release gives it up, and is safe
// to call more than once. Both are only used when held.
type TryLock func(ctx context.Context) (lost <-chan struct{}, release func(), held bool, err error)

// Run indexes until ctx ends. It takes the indexer lock (Options.Lock), retrying
// every little while if another replica holds it; once held it scans every
// source at once and then each on its interval. If the lock is lost (its
// database session ended) it stops the schedule and its running scans at
// once, since another replica may take over, and goes back to trying. It
// returns nil when ctx ends, and only once every scan in flight (scheduled,
// or started by ScanNow, RecheckDigests or Trigger) has finished, so that
// its caller may close the store then; trouble with the database is logged
// and retried, never fatal. Its one error is a missing Options.Lock.
func (ix *Indexer) Run(ctx context.Context) error {
	defer ix.scans.wait()
	if ix.tryLock == nil {
		return errors.New("indexer: Run needs Options.Lock")
	}
	for {
		lost, release, held, err := ix.tryLock(ctx)
		switch {
		case ctx.Err() != nil:
			if held {
				release()
			}
			return nil
		case err != nil:
			ix.log.WarnContext(ctx, "indexer lock unavailable; retrying", "err", err, "retry", ix.lockRetry)
		case !held:
			ix.log.DebugContext(ctx, "another replica indexes; standing by", "retry", ix.lockRetry)
		default:
			ix.log.InfoContext(ctx, "indexer lock taken; indexing", "sources", len(ix.order))
			err := ix.leadWhileHeld(ctx, lost)
			release()
			if ctx.Err() != nil {
				return nil
			}
			ix.log.ErrorContext(ctx, "indexing stopped; retrying", "err", err, "retry", ix.lockRetry)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(ix.lockRetry):
		}
	}
}

// errLockLost ends leading when the indexer lock's session ended.
var errLockLost = errors.New("indexer lock lost (its database session ended); another replica may index now")

// leadWhileHeld leads until ctx ends or the lock is lost, whichever is first.
func (ix *Indexer) leadWhileHeld(ctx context.Context, lost <-chan struct{}) error {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lost:
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
	srcs := make([]catalog.Source, len(ix.order))
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
