package indexdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// IndexTag records one tag a registry confirmed (a push webhook): its
// classification and digest, present, seen at seen. It writes and NOTIFYs
// only when something a client could be answered changed (a new tag, a
// digest, a classification, a tag present again), and reports whether it
// did. The source row is locked as a scan locks it, so a push and a scan of
// one source never interleave; and the listing fingerprint is cleared, so
// the next complete listing merges rather than trusting the one before.
// ErrNotFound for a source never synced.
func (s *Index) IndexTag(ctx context.Context, source string, t resolver.Tag, seen time.Time) (changed bool, err error) {
	if source == "" || t.Name == "" || t.Digest.IsZero() {
		return false, fmt.Errorf("%w: index tag: source %q, tag %q, digest %q: all are required", resolver.ErrInvalid, source, t.Name, t.Digest)
	}
	row := tagArgs(t)
	err = s.inTx(ctx, fmt.Sprintf("index tag %q of source %q", t.Name, source), func(tx pgx.Tx) error {
		if err := lockSource(ctx, tx, source); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `
			insert into tags as t (source, tag, valid, error, major, minor, patch, pre, pre_number,
				prerelease, build, build_meta, canonical, stream, digest, first_seen, last_seen, present)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16, true)
			on conflict (source, tag) do update set
				`+parsedFromExcluded+`
				digest = excluded.digest,
				previous_digest = case when t.digest not in ('', excluded.digest) then t.digest else t.previous_digest end,
				retagged_at = case when t.digest not in ('', excluded.digest) then now() else t.retagged_at end,
				last_seen = greatest(t.last_seen, excluded.last_seen), present = true
			where (t.valid, t.error, t.major, t.minor, t.patch, t.pre, t.pre_number, t.prerelease,
					t.build, t.build_meta, t.canonical, t.stream, t.digest, t.present)
				is distinct from (excluded.valid, excluded.error, excluded.major, excluded.minor,
					excluded.patch, excluded.pre, excluded.pre_number, excluded.prerelease, excluded.build,
					excluded.build_meta, excluded.canonical, excluded.stream, excluded.digest, true)`,
			append([]any{source}, append(row, t.Digest, seen)...)...)
		if err != nil {
			return err
		}
		if changed = res.RowsAffected() > 0; !changed {
			return nil
		}
		return s.tagChanged(ctx, tx, source, t.Name)
	})
	return changed, err
}

// MarkTagAbsent marks a tag the registry confirmed gone (a delete webhook)
// absent, as a complete listing would, and reports whether it was present.
// The row stays: history and first_seen survive a delete and a re-push.
func (s *Index) MarkTagAbsent(ctx context.Context, source, tag string) (changed bool, err error) {
	err = s.inTx(ctx, fmt.Sprintf("mark tag %q of source %q absent", tag, source), func(tx pgx.Tx) error {
		if err := lockSource(ctx, tx, source); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `update tags set present = false where source = $1 and tag = $2 and present`, source, tag)
		if err != nil {
			return err
		}
		if changed = res.RowsAffected() > 0; !changed {
			return nil
		}
		return s.tagChanged(ctx, tx, source, tag)
	})
	return changed, err
}

// tagChanged follows a change to one tag outside a listing: the source's
// listing fingerprint is forgotten, so the next listing merges rather than
// skipping as unchanged, and the change is announced.
func (s *Index) tagChanged(ctx context.Context, tx pgx.Tx, source, tag string) error {
	if _, err := tx.Exec(ctx, `update sources set listing_fingerprint = null where name = $1`, source); err != nil {
		return err
	}
	return s.notify(ctx, tx, "scan", source, "tag", tag)
}

// lockSource takes the lock a scan takes on its source row (see mergeTags).
func lockSource(ctx context.Context, tx pgx.Tx, source string) error {
	var one int
	err := tx.QueryRow(ctx, `select 1 from sources where name = $1 for no key update`, source).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: source %q: not recorded (SyncSources first)", resolver.ErrNotFound, source)
	}
	return err
}
