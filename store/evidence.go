package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// RolloutHalts counts, per channel and version, the halts of rollouts to
// it, by an alert or by hand; a later resume does not remove one.
func (s *Store) RolloutHalts(ctx context.Context) (map[resolver.ChannelVersion]int, error) {
	out := map[resolver.ChannelVersion]int{}
	err := s.inTxOpts(ctx, "count rollout halts", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, to_version, count(*) from audit where action = 'rollout-halt' group by 1, 2`)
		if err != nil {
			return err
		}
		var k resolver.ChannelVersion
		var n int
		_, err = pgx.ForEachRow(rows, []any{&k.Channel, &k.Version, &n}, func() error {
			out[k] = n
			return nil
		})
		return err
	})
	return out, err
}
