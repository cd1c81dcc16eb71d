// Package store keeps Tidemark's index, channel state, blocks, risks,
// rollouts, governance and audit trail in Postgres through pgx, and puts
// the parts kept in packages of their own (fleetdb, tokendb, outboxdb,
// lockdb, indexdb) into one Store. Every exported method takes ctx first,
// runs in one transaction (internal/pg) and speaks resolver types; errors
// wrap the resolver taxonomy, mapped from driver errors in one place
// (internal/pg/errors.go).
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/fleetdb"
	"github.com/tidemark-dev/tidemark/store/indexdb"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
	"github.com/tidemark-dev/tidemark/store/lockdb"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
	"github.com/tidemark-dev/tidemark/store/tokendb"
	"github.com/tidemark-dev/tidemark/store/tufdb"
)

// Store is a handle on the database. Safe for concurrent use.
type Store struct {
	log    *slog.Logger
	pool   *pgxpool.Pool
	addr   string // host:port, for error messages (never the password)
	origin string // random per Store; marks the notifications it sends
	db     *pg.DB // the transactions every part runs
	// The parts in packages of their own; their methods are the Store's.
	*fleetdb.Fleet
	*tokendb.Tokens
	*outboxdb.Outbox
	*lockdb.Locker
	*indexdb.Index
	*tufdb.TUF
}

// RedactURL is a database URL as logs may show it (password xxxxx).
var RedactURL = pg.RedactURL

// newStore assembles a Store on an open pool.
func newStore(log *slog.Logger, pool *pgxpool.Pool, addr string) *Store {
	db := &pg.DB{Pool: pool, Log: log}
	s := &Store{log: log, pool: pool, addr: addr, Locker: &lockdb.Locker{Pool: pool, Log: log, Ping: 5 * time.Second, PingTimeout: 5 * time.Second},
		origin: newOrigin(), db: db, Fleet: fleetdb.New(db), Tokens: tokendb.New(db), Outbox: outboxdb.New(db)}
	s.Index = indexdb.New(db, s.notify)
	s.TUF = tufdb.New(db, s.Locker)
	return s
}

// Open connects to url and checks the connection. The error is one line that
// names host:port and the cause (never the password) and wraps
// resolver.ErrUnavailable.
func Open(ctx context.Context, url string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse error sometimes quotes the URL and sometimes not:
		// name it once, without its password, then the reason.
		return nil, fmt.Errorf("%w: database URL %s: %s; want postgres://USER:PASSWORD@HOST:5432/DATABASE?sslmode=disable (or key=value pairs: host=... dbname=...)",
			resolver.ErrInvalid, RedactURL(url), pg.Cause(err))
	}
	addr := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	if cfg.ConnConfig.ConnectTimeout == 0 { // the URL's connect_timeout wins
		// A server that accepts and never answers must not hang a connect,
		// the handshake included.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	within := cfg.ConnConfig.ConnectTimeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: database at %s: %s", resolver.ErrUnavailable, addr, pg.Cause(err))
	}
	pctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		if ctx.Err() == nil && (pctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			return nil, &noAnswerError{addr: addr, within: within}
		}
		return nil, fmt.Errorf("%w: database at %s: %s", resolver.ErrUnavailable, addr, pg.Cause(err))
	}
	return newStore(log, pool, addr), nil
}

// DefaultConnectTimeout bounds a new connection, handshake included, when
// the database URL sets no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// NoAnswer is the error for a database that gave no answer within d: one
// line naming its host:port, wrapping resolver.ErrUnavailable.
func (s *Store) NoAnswer(d time.Duration) error { return &noAnswerError{addr: s.addr, within: d} }

type noAnswerError struct {
	addr   string
	within time.Duration
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("database %s did not answer within %s", e.addr, e.within)
}

func (e *noAnswerError) Unwrap() error { return resolver.ErrUnavailable }

// Close releases the pool.
func (s *Store) Close() { s.pool.Close() }

// inTx runs fn in one transaction and maps its error (pg.DB.InTx).
// Nothing fn wrote survives an error: a lost connection mid-way rolls the
// whole thing back.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return s.db.InTx(ctx, op, fn)
}

func (s *Store) inTxOpts(ctx context.Context, op string, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	return s.db.InTxOpts(ctx, op, opts, fn)
}

// notify queues a change notification that Postgres delivers on commit, so
// listeners never hear of a change that rolled back. Its payload is a JSON
// object: kind, source ("" for none), the pairs in kv, and this Store's
// origin, so that ListenChanges can leave out what this process did itself.
//
// It also moves the store revision, in the same statement: the row lock
// it takes is held to the commit, so revisions grow in commit order, and
// the payload carries the revision ("rev").
func (s *Store) notify(ctx context.Context, tx pgx.Tx, kind, source string, kv ...string) error {
	kv = append(kv, "origin", s.origin)
	p := payload(kind, source, kv...)
	_, err := tx.Exec(ctx, `with r as (update store_revision set n = n + 1 returning n)
		select pg_notify($1, left($2::text, -1) || ',"rev":"' || r.n || '"}') from r`, NotifyChannel, p)
	return err
}

// NotifyChannel is the Postgres NOTIFY channel that carries change notifications.
const NotifyChannel = "tidemark"
