package pg

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Querier runs one query (a pool, a connection or a transaction).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SchemaVersion is the migration version tern's table records; 0 when the
// table does not exist yet (a database never migrated).
func SchemaVersion(ctx context.Context, q Querier, table string) (int32, error) {
	var exists bool
	if err := q.QueryRow(ctx, `select to_regclass($1) is not null`, table).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int32
	if err := q.QueryRow(ctx, `select version from `+table).Scan(&v); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	return v, nil
}
