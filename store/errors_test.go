package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tidemark-dev/tidemark/resolver"
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
		err := dbErr("pin channel \"stable\"", &pgconn.PgError{Code: tc.code, Message: "m"})
		if !errors.Is(err, tc.want) {
			t.Errorf("SQLSTATE %s: %v, want %v", tc.code, err, tc.want)
		}
		if tc.want == resolver.ErrUnavailable && !strings.HasSuffix(err.Error(), "retry") {
			t.Errorf("SQLSTATE %s: %q should end by saying to retry", tc.code, err)
		}
	}
}
