package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// SyncSources records the configured sources (names, images, schemes).
// Sources no longer configured are kept, with their history.
func (s *Store) SyncSources(ctx context.Context, sources []resolver.Source) error {
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
