package store

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/tern/v2/migrate"

	"github.com/tidemark-dev/tidemark/migrations"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// versionTable is tern's bookkeeping table.
const versionTable = "public.schema_version"

// Migrate applies migrations/ under a Postgres advisory lock, so that several
// replicas may start at once.
//
// tern itself takes pg_advisory_lock (its own fixed key) on the migrating
// connection around creating its version table and around MigrateTo, and
// reads the current version only once it holds the lock; so replicas that
// start together queue up and the later ones find nothing left to do.
// TestMigrateConcurrently proves it. The connection is a dedicated one
// (acquired from the pool and closed after) because session advisory locks
// and tern's "reset all" must not leak into pooled connections.
func (s *Store) Migrate(ctx context.Context) error {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return pg.Err("migrate", err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))

	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return pg.Err("migrate: version table", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fmt.Errorf("migrate: load migrations: %w", err)
	}
	before, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return pg.Err("migrate: current version", err)
	}
	m.OnStart = func(seq int32, name, direction, _ string) {
		s.log.InfoContext(ctx, "applying migration", "seq", seq, "name", name, "direction", direction)
	}
	if err := m.Migrate(ctx); err != nil {
		return pg.Err("migrate", err)
	}
	after, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return pg.Err("migrate: current version", err)
	}
	s.log.InfoContext(ctx, "database migrated", "from", before, "to", after, "db", s.addr)
	return nil
}

// CheckMigrated says whether the database holds every migration this
// binary has (token and tuf check it before they make anything).
func (s *Store) CheckMigrated(ctx context.Context) error {
	want, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	if have, err := pg.SchemaVersion(ctx, s.pool, versionTable); err != nil {
		return pg.Err("read the schema version", err)
	} else if int(have) < len(want) {
		return fmt.Errorf("%w: the database at %s is not migrated (schema version %d, this tidemark needs %d): run tidemark migrate first",
			resolver.ErrState, s.addr, have, len(want))
	}
	return nil
}
