package store

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
func (s *Store) PendingTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.pendingRoot(ctx, `select version, body, expires_at from tuf_metadata where role = 'root' and pending`)
}

// DiscardPendingTUFRoot drops the pending root (under the publication lock).
func (s *Store) DiscardPendingTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.pendingRoot(ctx, `delete from tuf_metadata where role = 'root' and pending returning version, body, expires_at`)
}

func (s *Store) pendingRoot(ctx context.Context, q string) (signed.Meta, error) {
	m := signed.Meta{Role: signed.Root}
	err := s.inTx(ctx, "the pending TUF root", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1)`, tufLock); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, q).Scan(&m.Version, &m.Body, &m.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no TUF root is pending", resolver.ErrNotFound)
		}
		return err
	})
	return m, err
}
