package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Err is the one place where driver errors become the resolver taxonomy,
// so that no caller ever has to look at a pgx type. op says what was being
// done ("apply scan of source \"x\""); the result is one line.
func Err(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, sentinel := range []error{
		resolver.ErrNotFound, resolver.ErrInvalid, resolver.ErrConflict, resolver.ErrUnprocessable,
		resolver.ErrUnauthorized, resolver.ErrForbidden, resolver.ErrUnavailable, resolver.ErrState,
	} {
		if errors.Is(err, sentinel) {
			return err // already classified by a helper
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The caller's deadline: a database that accepts connections but
		// does not answer in time is as unavailable as one that refuses.
		return fmt.Errorf("%w: %s: database did not answer in time: %w", resolver.ErrUnavailable, op, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", resolver.ErrNotFound, op)
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %s: already exists (%s)", resolver.ErrConflict, op, pg.ConstraintName)
		case pg.Code == "23503": // foreign_key_violation: a source that was never synced
			return fmt.Errorf("%w: %s: %s", resolver.ErrNotFound, op, OneLine(pg.Detail))
		case pg.Code == "40001" || pg.Code == "40P01": // serialization failure, deadlock
			// Transient, and not a stale If-Match (ErrConflict is 412 "channel
			// changed"): the same request can succeed when sent again.
			return fmt.Errorf("%w: %s: aborted by a concurrent transaction (SQLSTATE %s); retry", resolver.ErrUnavailable, op, pg.Code)
		case strings.HasPrefix(pg.Code, "08"), strings.HasPrefix(pg.Code, "57P"), strings.HasPrefix(pg.Code, "53"):
			// connection exception, admin shutdown / crash recovery, out of resources
			return fmt.Errorf("%w: %s: database: %s", resolver.ErrUnavailable, op, OneLine(pg.Message))
		}
		// Anything else is a bug in a statement or a refused write (the audit
		// trigger); keep the server's words, unclassified (a 500 upstream).
		return fmt.Errorf("%s: %s (SQLSTATE %s)", op, OneLine(pg.Message), pg.Code)
	}
	// Every other error out of pgx means the connection is gone or never
	// came up: broken pipe, EOF, refused, timeouts, "conn closed".
	return fmt.Errorf("%w: %s: database connection lost: %s", resolver.ErrUnavailable, op, Cause(err))
}

// Cause is the innermost useful text of a connection error, without pgx's
// preamble (which repeats user and database names).
func Cause(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return OneLine(pg.Message)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return OneLine(op.Op + ": " + op.Err.Error())
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return OneLine(dns.Error())
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return OneLine(err.Error())
		}
		err = inner
	}
}

func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ConnLost reports an error that says the connection, not the statement,
// failed: its session was ended by the server (SQLSTATE 57P01..57P05, or a
// connection exception, class 08) or the socket broke.
func ConnLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "57P") || strings.HasPrefix(pg.Code, "08")
	}
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
