package store

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// pingTimeout bounds Ping so that a health loop never hangs on a database
// that accepts connections but does not answer.
const pingTimeout = 3 * time.Second

// Ping checks that the database answers. It wraps resolver.ErrUnavailable
// when it does not.
func (s *Store) Ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	err := s.pool.Ping(pctx)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && pctx.Err() != nil {
		return fmt.Errorf("%w: database at %s did not answer within %s", resolver.ErrUnavailable, s.addr, pingTimeout)
	}
	return pg.Err("ping", err)
}
