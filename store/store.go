// Package store keeps Tidemark's index, channel state, blocks, tokens and
// audit trail in Postgres through pgx. Every exported method takes ctx first,
// runs in one transaction, and speaks resolver types; errors wrap the
// resolver taxonomy (ErrNotFound, ErrConflict, ErrUnavailable, ...), mapped
// from driver errors in one place (errors.go).
//
// One file per entity: sources.go, scans.go (ApplyScan; fingerprint.go for
// its no-change fast path), tags.go, load.go, channels.go (pins, history),
// blocks.go, tokens.go, fleet.go (clusters per channel), notify.go (Listen,
// NOTIFY), lock.go (the indexer lock), migrate.go.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Store is a handle on the database. Safe for concurrent use.
type Store struct {
	log      *slog.Logger
	pool     *pgxpool.Pool
	addr     string        // host:port, for error messages (never the password)
	lockPing time.Duration // how often a held indexer lock's quiet connection is pinged
	origin   string        // random per Store; marks the notifications it sends
	// lockPingTimeout is how long that ping may take before the lock counts
	// as lost.
	lockPingTimeout time.Duration
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
		return nil, fmt.Errorf("%w: database URL %s: %s", resolver.ErrInvalid, RedactURL(url), cause(err))
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
		return nil, fmt.Errorf("%w: database at %s: %s", resolver.ErrUnavailable, addr, cause(err))
	}
	pctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		if ctx.Err() == nil && (pctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			return nil, &noAnswerError{addr: addr, within: within}
		}
		return nil, fmt.Errorf("%w: database at %s: %s", resolver.ErrUnavailable, addr, cause(err))
	}
	return &Store{log: log, pool: pool, addr: addr, lockPing: 5 * time.Second, lockPingTimeout: 5 * time.Second, origin: newOrigin()}, nil
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

// inTx runs fn in one transaction and maps its error. Nothing fn wrote
// survives an error: a lost connection mid-way rolls the whole thing back.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return s.inTxOpts(ctx, op, pgx.TxOptions{}, fn)
}

func (s *Store) inTxOpts(ctx context.Context, op string, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil && connLost(err) && ctx.Err() == nil {
		// A pooled connection whose session ended while idle (a database
		// restart, pg_terminate_backend) fails its BEGIN; its idle siblings
		// are most likely dead too. Nothing was done yet, so drop them all
		// and try once more on a fresh connection.
		s.log.WarnContext(ctx, "database connection lost; reconnecting", "op", op, "err", cause(err))
		s.pool.Reset()
		tx, err = s.pool.BeginTx(ctx, opts)
	}
	if err != nil {
		return dbErr(op, err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if err := fn(tx); err != nil {
		return dbErr(op, err)
	}
	return dbErr(op, tx.Commit(ctx))
}

// notify queues a change notification that Postgres delivers on commit, so
// listeners never hear of a change that rolled back. Its payload is a JSON
// object: kind, source ("" for none), the pairs in kv, and this Store's
// origin, so that ListenChanges can leave out what this process did itself.
func (s *Store) notify(ctx context.Context, tx pgx.Tx, kind, source string, kv ...string) error {
	kv = append(kv, "origin", s.origin)
	_, err := tx.Exec(ctx, "select pg_notify($1, $2)", NotifyChannel, payload(kind, source, kv...))
	return err
}

// NotifyChannel is the Postgres NOTIFY channel that carries change notifications.
const NotifyChannel = "tidemark"

// RedactURL is a database URL (or keyword/value string) as it may be
// shown: any password replaced by xxxxx.
func RedactURL(s string) string {
	if s == "" {
		return "(not set)"
	}
	u, err := neturl.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" && u.Opaque != "" {
		// keyword/value ("host=h password=p"), or a URL too broken to
		// parse: mask what may be a password either way.
		s = urlPassword.ReplaceAllString(s, "${1}xxxxx@")
		return dsnPassword.ReplaceAllString(fmt.Sprintf("%q", s), "${1}xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return fmt.Sprintf("%q", u.Redacted())
}

var urlPassword = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)

var dsnPassword = regexp.MustCompile(`(password\s*=\s*)('[^']*'|[^\s"]*)`)
