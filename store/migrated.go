package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/migrations"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// CheckMigrated says whether the database holds every migration this
// binary has: the commands that write it directly (token, tuf) check
// before they make anything, so that a database not yet migrated costs a
// user one clear line, not a key file and a SQL error.
func (s *Store) CheckMigrated(ctx context.Context) error {
	want, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	var have int32
	var exists bool
	if err := s.pool.QueryRow(ctx, `select to_regclass($1) is not null`, versionTable).Scan(&exists); err != nil {
		return pg.Err("read the schema version", err)
	}
	if exists {
		if err := s.pool.QueryRow(ctx, `select version from `+versionTable).Scan(&have); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return pg.Err("read the schema version", err)
		}
	}
	if int(have) < len(want) {
		return fmt.Errorf("%w: the database at %s is not migrated (schema version %d, this tidemark needs %d): run tidemark migrate first",
			resolver.ErrState, s.addr, have, len(want))
	}
	return nil
}
