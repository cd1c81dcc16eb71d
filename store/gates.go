package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// GateTargets lists the present tags of source that have a digest, with
// their stored gate checks (nil when never checked), for the indexer to
// decide which to check (resolver.NeedsGateCheck). Tags are returned by name
// only, with digest, first_seen and checks: the caller classifies them.
// With names set, only those tags.
func (s *Store) GateTargets(ctx context.Context, source string, names []string) ([]resolver.Tag, error) {
	var out []resolver.Tag
	err := s.inTxOpts(ctx, fmt.Sprintf("gate targets of source %q", source), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			select t.tag, t.digest, t.first_seen, `+gateColumns+`
			from tags t left join gate_checks g on g.source = t.source and g.tag = t.tag
			where t.source = $1 and t.present and t.digest <> '' and ($2::text[] is null or t.tag = any($2))
			order by t.tag`, source, names)
		if err != nil {
			return err
		}
		var (
			t     resolver.Tag
			first time.Time
		)
		gc := gateScan{}
		_, err = pgx.ForEachRow(rows, append([]any{&t.Name, &t.Digest, &first}, gc.dest()...), func() error {
			t.FirstSeen, t.Gates = resolver.InstantOf(first), gc.checks()
			out = append(out, t)
			return nil
		})
		return err
	})
	return out, err
}

// SetGateChecks records gate checks of tags of source (tag name -> checks),
// replacing what was stored, and reports whether a stored result changed.
// Only then does a NOTIFY go out (not for a check that confirmed what was
// stored), so that a rescan in which every gate answers as before rebuilds
// no snapshot.
func (s *Store) SetGateChecks(ctx context.Context, source string, checks map[string]resolver.GateChecks) (changed bool, err error) {
	if len(checks) == 0 {
		return false, nil
	}
	n := len(checks)
	var (
		tags, digests, keys, sigs, reasons = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		platforms, missing                 = make([]string, 0, n), make([]string, 0, n)
		at                                 = make([]time.Time, 0, n)
	)
	for tag, c := range checks {
		tags, digests, keys = append(tags, tag), append(digests, c.Digest.String()), append(keys, c.KeyID)
		sigs, reasons = append(sigs, c.Signature), append(reasons, c.SignatureReason)
		// Arrays of arrays must be rectangular in Postgres: each list goes
		// as one text, split again below.
		platforms, missing = append(platforms, joinList(c.Platforms)), append(missing, joinList(c.MissingPlatforms))
		if c.CheckedAt.IsZero() {
			c.CheckedAt = time.Now()
		}
		at = append(at, c.CheckedAt)
	}
	err = s.inTx(ctx, fmt.Sprintf("set gate checks of source %q", source), func(tx pgx.Tx) error {
		var n int
		err := tx.QueryRow(ctx, `
			with new as (
				select $1::text as source, tag, digest,
					string_to_array(nullif(plat, ''), ',') as platforms,
					string_to_array(nullif(miss, ''), ',') as missing_platforms,
					key_id, signature, signature_reason, checked_at
				from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])
					as n(tag, digest, plat, miss, key_id, signature, signature_reason, checked_at)
			), old as (
				select g.* from gate_checks g join new using (source, tag)
			), up as (
				insert into gate_checks as g (source, tag, digest, platforms, missing_platforms, key_id, signature, signature_reason, checked_at)
				select source, tag, digest, coalesce(platforms, '{}'), coalesce(missing_platforms, '{}'),
					key_id, signature, signature_reason, checked_at from new
				on conflict (source, tag) do update set
					digest = excluded.digest, platforms = excluded.platforms,
					missing_platforms = excluded.missing_platforms, key_id = excluded.key_id,
					signature = excluded.signature, signature_reason = excluded.signature_reason,
					checked_at = excluded.checked_at
				returning g.source, g.tag, g.digest, g.platforms, g.missing_platforms, g.key_id, g.signature, g.signature_reason
			)
			select count(*) from up
			where not exists (
				select 1 from old o where o.tag = up.tag and
					(o.digest, o.platforms, o.missing_platforms, o.key_id, o.signature, o.signature_reason) =
					(up.digest, up.platforms, up.missing_platforms, up.key_id, up.signature, up.signature_reason))`,
			source, tags, digests, platforms, missing, keys, sigs, reasons, at).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		changed = true
		return s.notify(ctx, tx, "gates", source)
	})
	return changed, err
}

func joinList(l []string) string { return strings.Join(l, ",") }

// gateColumns are gate_checks' columns as loads read them, g joined left.
const gateColumns = `coalesce(g.digest, ''), coalesce(g.platforms, '{}'), coalesce(g.missing_platforms, '{}'),
	coalesce(g.key_id, ''), coalesce(g.signature, ''), coalesce(g.signature_reason, ''), coalesce(g.checked_at, 'epoch')`

// gateScan receives gateColumns.
type gateScan struct {
	digest, keyID, sig, reason string
	platforms, missing         []string
	at                         time.Time
}

func (g *gateScan) dest() []any {
	return []any{&g.digest, &g.platforms, &g.missing, &g.keyID, &g.sig, &g.reason, &g.at}
}

// checks is the row as resolver.GateChecks; nil when there was none.
func (g *gateScan) checks() *resolver.GateChecks {
	if g.digest == "" {
		return nil
	}
	c := &resolver.GateChecks{Digest: resolver.ParseDigest(g.digest), KeyID: g.keyID, Signature: g.sig, SignatureReason: g.reason, CheckedAt: g.at}
	if len(g.platforms) > 0 {
		c.Platforms = append([]string(nil), g.platforms...)
	}
	if len(g.missing) > 0 {
		c.MissingPlatforms = append([]string(nil), g.missing...)
	}
	return c
}
