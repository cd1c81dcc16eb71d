package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/outboxdb"
)

// Yank holds (promotion from evidence): a version held on evidence is
// taken by no promotion until an admin lifts the hold.

// HoldVersion holds version of source on evidence, audited on channel and
// notified as yanked; false when it was held already.
func (s *Store) HoldVersion(ctx context.Context, source, version, channel, actor, reason string) (bool, error) {
	held := false
	err := s.inTx(ctx, fmt.Sprintf("hold %s of %q", version, source), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `insert into version_holds (source, version, reason, held_by) values ($1, $2, $3, $4) on conflict do nothing`,
			source, version, reason, actor)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		held = true
		if err := audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "yank", Channel: channel, Source: source, To: version, Reason: reason}); err != nil {
			return err
		}
		return outboxdb.Add(ctx, tx, resolver.Event{Type: resolver.EventVersionYanked, Channel: channel, Source: source, To: version, Actor: actor, Reason: reason})
	})
	return held, err
}

// LiftHold lifts the evidence hold of version of source; ErrNotFound
// when it is not held.
func (s *Store) LiftHold(ctx context.Context, source, version, actor, reason string) error {
	return s.inTx(ctx, fmt.Sprintf("lift the hold of %s of %q", version, source), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `delete from version_holds where source = $1 and version = $2`, source, version)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s of %q is not held", resolver.ErrNotFound, version, source)
		}
		return audit(ctx, tx, resolver.AuditEvent{Actor: actor, Action: "hold-lift", Source: source, To: version, Reason: reason})
	})
}

// VersionHolds lists the held versions of source: version -> reason.
func (s *Store) VersionHolds(ctx context.Context, source string) (map[string]string, error) {
	out := map[string]string{}
	err := s.inTx(ctx, "read version holds", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select version, reason from version_holds where source = $1`, source)
		if err != nil {
			return err
		}
		var v, r string
		_, err = pgx.ForEachRow(rows, []any{&v, &r}, func() error {
			out[v] = r
			return nil
		})
		return err
	})
	return out, err
}
