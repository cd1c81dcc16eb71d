// Package lockdb is the indexer lock and the signer lock: Postgres
// advisory locks held on a connection of their own by the one replica
// that indexes (signs), watched so that their loss is noticed within
// seconds. *store.Store embeds its Locker.
package lockdb

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Locker takes the indexer lock.
type Locker struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// Ping is how often a held lock's quiet connection is pinged; a ping
	// slower than PingTimeout counts the lock as lost.
	Ping, PingTimeout time.Duration
}

// lockTimeout bounds TryIndexerLock.
const lockTimeout = 10 * time.Second

// indexerLockKey is the advisory lock the indexing replica holds.
const indexerLockKey = int64(0x7469_6465_6d61_726b) // "tidemark"

// signerLockKey is the advisory lock the one replica that signs TUF
// metadata holds.
const signerLockKey = int64(0x7475_665f_7369_676e) // "tuf_sign"

// IndexerLock is the held indexer lock: a session-level advisory lock on a
// connection of its own. A nil *IndexerLock (not held) is safe to use:
// Release does nothing and Lost never fires.
type IndexerLock struct {
	key     int64
	what    string // "indexer lock", "signer lock"
	conn    *pgx.Conn
	log     *slog.Logger
	lost    chan struct{}
	stop    context.CancelFunc
	stopped chan struct{} // closed when the watcher no longer uses conn
	once    sync.Once
}

// TryIndexerLock tries to become the one indexing replica. held reports
// whether this process now holds the lock; when it does not, lock is a nil
// *IndexerLock (safe to Release).
// If the holder dies, its session ends and the lock is free for the next
// TryIndexerLock; if the holder's session ends under it (database restart,
// pg_terminate_backend, a network cut), lock.Lost fires, so the holder stops
// indexing before another replica takes over.
func (s *Locker) TryIndexerLock(ctx context.Context) (lock *IndexerLock, held bool, err error) {
	return s.tryLock(ctx, indexerLockKey, "indexer lock")
}

// TrySignerLock tries to become the one replica that signs TUF metadata,
// as TryIndexerLock does for indexing.
func (s *Locker) TrySignerLock(ctx context.Context) (lock *IndexerLock, held bool, err error) {
	return s.tryLock(ctx, signerLockKey, "signer lock")
}

func (s *Locker) tryLock(ctx context.Context, key int64, what string) (lock *IndexerLock, held bool, err error) {
	// Not held: a nil *IndexerLock, whose methods are safe to call.
	var none *IndexerLock
	// A database that does not answer must not hold the indexer's loop.
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	pc, err := s.Pool.Acquire(ctx)
	if err != nil {
		return none, false, pg.Err(what, err)
	}
	if err := pc.QueryRow(ctx, "select pg_try_advisory_lock($1)", key).Scan(&held); err != nil {
		pc.Release()
		return none, false, pg.Err(what, err)
	}
	if !held {
		pc.Release()
		return none, false, nil
	}
	// The connection leaves the pool for good: a lock-holding session must
	// never be handed to an unrelated query, and closing it is the surest
	// way to let the lock go.
	wctx, stop := context.WithCancel(context.Background())
	l := &IndexerLock{
		key: key, what: what, conn: pc.Hijack(), log: s.Log,
		lost: make(chan struct{}), stop: stop, stopped: make(chan struct{}),
	}
	go l.watch(wctx, s.Ping, s.PingTimeout)
	return l, true, nil
}

// Key is the advisory lock's key as pg_locks shows it: classid (the high
// 32 bits) and objid (the low 32 bits).
func (l *IndexerLock) Key() (class, obj int64) {
	return int64(uint32(l.key >> 32)), int64(uint32(l.key))
}

// PID is the backend process of the session that holds the lock.
func (l *IndexerLock) PID() uint32 { return l.conn.PgConn().PID() }

// Lost is closed when the lock's session ended without Release: the lock may
// already be someone else's. It is never closed by Release.
func (l *IndexerLock) Lost() <-chan struct{} {
	if l == nil {
		return nil
	}
	return l.lost
}

// Release gives the lock up. Safe to call more than once, after Lost, and on nil.
func (l *IndexerLock) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		l.stop()
		<-l.stopped // conn is not safe for concurrent use
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		select {
		case <-l.lost: // the session is gone, and the lock with it
		default:
			// Unlock first: closing alone frees the lock only once the
			// server notices, and the next TryIndexerLock may come sooner.
			if _, err := l.conn.Exec(ctx, "select pg_advisory_unlock($1)", l.key); err != nil {
				l.log.Warn("releasing "+l.what, "err", pg.Err(l.what, err))
			}
		}
		if err := l.conn.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
			l.log.Warn("releasing "+l.what, "err", pg.Err(l.what, err))
		}
	})
}

// watch closes lost when the lock's session ends. It blocks reading the
// connection, so a terminated session (the server sends a FATAL error, or
// closes the socket) is noticed at once; a connection that merely goes quiet
// (a network cut sends nothing) is pinged every `every`, and lost when the
// ping gets no answer within `timeout`. The two are separate so that a short
// interval (tests) does not also mean a short patience: a ping that is merely
// slow on a loaded machine must not give the lock up.
func (l *IndexerLock) watch(ctx context.Context, every, timeout time.Duration) {
	defer close(l.stopped)
	for {
		// A timed-out wait leaves the connection usable: pgx closes a
		// connection on read errors other than timeouts.
		wctx, cancel := context.WithTimeout(ctx, every)
		err := l.conn.PgConn().WaitForNotification(wctx)
		quiet := wctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return // released
		}
		if err == nil {
			continue // a notification; nothing LISTENs here, but it is harmless
		}
		if quiet {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			err = l.conn.Ping(pctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				continue
			}
		}
		l.log.Warn(l.what+" lost: its database session ended", "err", pg.Err(l.what, err))
		close(l.lost)
		return
	}
}
