package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// TestDBErrMapsSQLStates: a serialization failure or a deadlock is a
// transient refusal (retry), not a stale ETag; a unique violation is a
// conflict.
func TestDBErrMapsSQLStates(t *testing.T) {
	for _, tc := range []struct {
		code string
		want error
	}{
		{"40001", resolver.ErrUnavailable},
		{"40P01", resolver.ErrUnavailable},
		{"23505", resolver.ErrConflict},
	} {
		err := pg.Err("pin channel \"stable\"", &pgconn.PgError{Code: tc.code, Message: "m"})
		if !errors.Is(err, tc.want) {
			t.Errorf("SQLSTATE %s: %v, want %v", tc.code, err, tc.want)
		}
		if tc.want == resolver.ErrUnavailable && !strings.HasSuffix(err.Error(), "retry") {
			t.Errorf("SQLSTATE %s: %q should end by saying to retry", tc.code, err)
		}
	}
}

// TestABadDatabaseURLIsNamedWithoutItsPassword (issue 25 item 14).
func TestABadDatabaseURLIsNamedWithoutItsPassword(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"foo", `database URL "foo": invalid keyword/value`},
		{"postgres://u:s3cret@host/db?sslmode=bogus", `database URL "postgres://u:xxxxx@host/db?sslmode=bogus": sslmode is invalid`},
		{"host=h password=s3cret port=x", `database URL "host=h password=xxxxx port=x"`},
		{"postgres://u:s3cret@[::1/db", `database URL "postgres://u:xxxxx@[::1/db"`},
	} {
		_, err := Open(context.Background(), tc.url, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): %v, want it to say %s and never the password", tc.url, err, tc.want)
		}
	}
}
