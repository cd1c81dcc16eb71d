package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReconnectedPayload is passed to Listen's fn after the listening connection
// came back: notifications sent while it was down are lost, so the listener
// should reload everything.
const ReconnectedPayload = `{"kind":"reconnected"}`

// Listen calls fn with the payload of every change notification (from this
// or any other replica) until ctx ends, reconnecting by itself.
//
// It uses its own connection (LISTEN is per session) outside the pool. After
// a reconnect it calls fn(ReconnectedPayload). fn runs on Listen's goroutine;
// a slow fn delays later notifications but loses none. Returns nil when ctx
// ends.
func (s *Store) Listen(ctx context.Context, fn func(payload string)) error {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, fn, !first)
		if ctx.Err() != nil {
			break
		}
		first = false
		s.log.WarnContext(ctx, "change listener lost its connection; reconnecting",
			"err", dbErr("listen", err), "retry_in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
	return nil
}

// listenOnce connects, listens and delivers until the connection fails.
func (s *Store) listenOnce(ctx context.Context, fn func(string), reconnected bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{NotifyChannel}.Sanitize()); err != nil {
		return err
	}
	if reconnected {
		s.log.InfoContext(ctx, "change listener reconnected")
		fn(ReconnectedPayload)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}

// indexerLockKey is the advisory lock the indexing replica holds.
const indexerLockKey = int64(0x7469_6465_6d61_726b) // "tidemark"

// TryIndexerLock tries to become the one indexing replica: a session-level
// advisory lock on a dedicated connection. held reports whether this process
// holds it; release gives it up (and is safe to call when not held, and more
// than once). If the holder dies, its connection closes and the lock is free
// for the next TryIndexerLock.
func (s *Store) TryIndexerLock(ctx context.Context) (release func(), held bool, err error) {
	noop := func() {}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return noop, false, dbErr("indexer lock", err)
	}
	if err := pc.QueryRow(ctx, "select pg_try_advisory_lock($1)", indexerLockKey).Scan(&held); err != nil {
		pc.Release()
		return noop, false, dbErr("indexer lock", err)
	}
	if !held {
		pc.Release()
		return noop, false, nil
	}
	// The connection leaves the pool for good: a lock-holding session must
	// never be handed to an unrelated query, and closing it is the surest
	// way to let the lock go.
	conn := pc.Hijack()
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// Unlock first: closing alone frees the lock only once the
			// server notices, and the next TryIndexerLock may come sooner.
			if _, err := conn.Exec(ctx, "select pg_advisory_unlock($1)", indexerLockKey); err != nil {
				s.log.Warn("releasing indexer lock", "err", dbErr("indexer lock", err))
			}
			if err := conn.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("releasing indexer lock", "err", dbErr("indexer lock", err))
			}
		})
	}, true, nil
}
