package tufdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// PendingTUFRoot is the root tuf rotate-online signed that no replica has
// published yet; ErrNotFound when there is none.
func (s *TUF) PendingTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.rootBy(ctx, `select version, body, expires_at from tuf_metadata where role = 'root' and pending`, "no TUF root is pending")
}

// DiscardPendingTUFRoot drops the pending root (under the publication lock).
func (s *TUF) DiscardPendingTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.rootBy(ctx, `delete from tuf_metadata where role = 'root' and pending returning version, body, expires_at`, "no TUF root is pending")
}

// rootBy is the root query q reads (or deletes), under the publication
// lock; ErrNotFound saying none when there is none.
func (s *TUF) rootBy(ctx context.Context, q, none string) (signed.Meta, error) {
	m := signed.Meta{Role: signed.Root}
	err := s.db.InTx(ctx, "read a TUF root", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1)`, tufLock); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, q).Scan(&m.Version, &m.Body, &m.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", resolver.ErrNotFound, none)
		}
		return err
	})
	return m, err
}
