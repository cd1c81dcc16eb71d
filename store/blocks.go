package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// Block blocks version (canonical) of source, with an audit event and a
// notification in the same transaction. Blocking a blocked version changes
// nothing and returns the existing block (PUT is idempotent). ErrNotFound
// for a source never synced; whether the version exists is the caller's
// (the snapshot's) business.
func (s *Store) Block(ctx context.Context, source, version, actor, reason string) (catalog.Block, error) {
	if source == "" || version == "" {
		return catalog.Block{}, fmt.Errorf("%w: block: source %q, version %q: both are required", resolver.ErrInvalid, source, version)
	}
	b := catalog.Block{Source: source, Version: version}
	err := s.inTx(ctx, fmt.Sprintf("block %s of source %q", version, source), func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			insert into blocks (source, version, reason, blocked_by) values ($1, $2, $3, $4)
			on conflict (source, version) do nothing
			returning reason, blocked_by, blocked_at`, source, version, reason, actor).
			Scan(&b.Reason, &b.BlockedBy, &b.BlockedAt)
		if errors.Is(err, pgx.ErrNoRows) { // already blocked
			return tx.QueryRow(ctx, `select reason, blocked_by, blocked_at from blocks where source = $1 and version = $2`,
				source, version).Scan(&b.Reason, &b.BlockedBy, &b.BlockedAt)
		}
		if err != nil {
			return err
		}
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "block", Source: source, To: version, Reason: reason}); err != nil {
			return err
		}
		if err := outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventVersionBlocked, Source: source, To: version, Actor: actor, Reason: reason}); err != nil {
			return err
		}
		return s.notify(ctx, tx, "block", source, "version", version)
	})
	if err != nil {
		return catalog.Block{}, err
	}
	return b, nil
}

// Unblock lifts a block; ErrNotFound when version of source is not blocked.
func (s *Store) Unblock(ctx context.Context, source, version, actor, reason string) error {
	return s.inTx(ctx, fmt.Sprintf("unblock %s of source %q", version, source), func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `delete from blocks where source = $1 and version = $2`, source, version)
		if err != nil {
			return err
		}
		if res.RowsAffected() == 0 {
			return fmt.Errorf("%w: version %q of source %q is not blocked", resolver.ErrNotFound, version, source)
		}
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "unblock", Source: source, To: version, Reason: reason}); err != nil {
			return err
		}
		return s.notify(ctx, tx, "unblock", source, "version", version)
	})
}
