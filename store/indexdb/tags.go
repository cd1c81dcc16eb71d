package indexdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// TagsWithoutDigest lists present tags of source whose digest is unknown.
func (s *Index) TagsWithoutDigest(ctx context.Context, source string) ([]string, error) {
	var tags []string
	err := s.inTx(ctx, fmt.Sprintf("tags without digest of source %q", source), func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select tag from tags where source = $1 and present and digest = '' order by tag`, source)
		if err != nil {
			return err
		}
		tags, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return tags, err
}

// SetDigests records digests for tags of source. A tag whose digest differs
// from the stored one is a re-tag: the old digest moves to previous_digest
// and retagged_at is set. Tags the store does not know, and empty digests,
// are ignored. A NOTIFY goes out when anything changed.
func (s *Index) SetDigests(ctx context.Context, source string, digests map[string]string) error {
	tags := make([]string, 0, len(digests))
	sums := make([]string, 0, len(digests))
	for t, d := range digests {
		if d == "" {
			continue
		}
		tags, sums = append(tags, t), append(sums, d)
	}
	if len(tags) == 0 {
		return nil
	}
	return s.inTx(ctx, fmt.Sprintf("set digests of source %q", source), func(tx pgx.Tx) error {
		res, err := tx.Exec(ctx, `
			update tags t set
				digest = d.digest,
				previous_digest = case when t.digest <> '' then t.digest else t.previous_digest end,
				retagged_at = case when t.digest <> '' then now() else t.retagged_at end
			from unnest($2::text[], $3::text[]) as d(tag, digest)
			where t.source = $1 and t.tag = d.tag and t.digest <> d.digest`,
			source, tags, sums)
		if err != nil {
			return err
		}
		if res.RowsAffected() == 0 {
			return nil
		}
		return s.notify(ctx, tx, "digests", source)
	})
}
