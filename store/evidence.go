package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RolloutHalts counts, per version, the halts of rollouts to it on
// channel, by an alert or by hand; a later resume does not remove one.
func (s *Store) RolloutHalts(ctx context.Context, channel string) (map[string]int, error) {
	out := map[string]int{}
	err := s.inTx(ctx, fmt.Sprintf("count halts of channel %q", channel), func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select to_version, count(*) from audit where channel = $1 and action = 'rollout-halt' group by to_version`, channel)
		if err != nil {
			return err
		}
		var v string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&v, &n}, func() error {
			out[v] = n
			return nil
		})
		return err
	})
	return out, err
}
