package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// SyncSources records the configured sources (names, images, schemes).
// Sources no longer configured are kept, with their history.
func (s *Store) SyncSources(ctx context.Context, sources []catalog.Source) error {
	names := make([]string, len(sources))
	images := make([]string, len(sources))
	schemes := make([]string, len(sources))
	for i, src := range sources {
		if src.Name == "" || src.Parser == nil {
			return fmt.Errorf("%w: sync sources: source %d (%q) has no name or no parser", resolver.ErrInvalid, i, src.Name)
		}
		names[i], images[i], schemes[i] = src.Name, src.Image, string(src.Parser.Scheme())
	}
	return s.inTx(ctx, "sync sources", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			insert into sources (name, image, scheme)
			select * from unnest($1::text[], $2::text[], $3::text[])
			on conflict (name) do update set image = excluded.image, scheme = excluded.scheme, updated_at = now()
			where (sources.image, sources.scheme) is distinct from (excluded.image, excluded.scheme)`,
			names, images, schemes)
		return err
	})
}

// RecheckedAt returns when the digests of every present tag of source were
// last re-read (the indexer's re-tag check), or when the source was first
// recorded if they never were. ErrNotFound for a source never recorded.
func (s *Store) RecheckedAt(ctx context.Context, source string) (time.Time, error) {
	var at time.Time
	err := s.inTx(ctx, fmt.Sprintf("digest re-check time of source %q", source), func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `select rechecked_at from sources where name = $1`, source).Scan(&at)
	})
	return at, err
}

// SetRecheckedAt records that the digests of every present tag of source
// were re-read at at. ErrNotFound for a source never recorded.
func (s *Store) SetRecheckedAt(ctx context.Context, source string, at time.Time) error {
	op := fmt.Sprintf("set digest re-check time of source %q", source)
	return s.inTx(ctx, op, func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `update sources set rechecked_at = $2 where name = $1`, source, at)
		if err != nil {
			return err
		}
		if res.RowsAffected() == 0 {
			return fmt.Errorf("%w: %s: no such source", resolver.ErrNotFound, op)
		}
		return nil
	})
}
