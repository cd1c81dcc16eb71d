package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// PendingTUFRoot is the root that `tuf rotate-online` signed and no
// replica has published yet; ErrNotFound when there is none.
func (s *Store) PendingTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.newestRoot(ctx, "pending", true, "no pending TUF root")
}

// newestRoot is the newest root (only a pending one when pendingOnly);
// ErrNotFound saying none when there is none.
func (s *Store) newestRoot(ctx context.Context, what string, pendingOnly bool, none string) (signed.Meta, error) {
	m := signed.Meta{Role: signed.Root}
	err := s.inTx(ctx, "read the "+what+" TUF root", func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `select version, body, expires_at from tuf_metadata where role = 'root' and (pending or not $1)
			order by version desc limit 1`, pendingOnly).Scan(&m.Version, &m.Body, &m.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", resolver.ErrNotFound, none)
		}
		return err
	})
	return m, err
}

// DiscardPendingTUFRoot drops pending root version, under the lock every
// publication takes: a replica that published it in the meantime made it
// the served root, and then it is not dropped (ErrState).
func (s *Store) DiscardPendingTUFRoot(ctx context.Context, version int64) error {
	return s.inTx(ctx, "discard the pending TUF root", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1)`, tufLock); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `delete from tuf_metadata where role = 'root' and version = $1 and pending`, version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: root version %d is not pending any more (a replica published it, or it was discarded)", resolver.ErrState, version)
		}
		return nil
	})
}
