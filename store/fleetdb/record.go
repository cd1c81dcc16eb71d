package fleetdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The fleet's write path: batches of sightings upserted in one statement.

// fleetChunk is the most rows one upsert statement carries: large enough
// that a busy second is a handful of statements, small enough that one
// statement's locks and WAL stay short.
const fleetChunk = 5000

// fleetUpsert writes a batch of sightings in one statement (the arrays are
// columns). reported_since is kept while the reported version stays the
// same, taking the earliest any replica saw, so replicas agree on it to
// their clocks' skew; it starts again when the version changes. An empty
// reported or served (none this time) keeps what was known; so does an
// empty directed (a stay): directed is the last answer the channel's rule
// chose, which a stay never changes.
const fleetUpsert = `
insert into fleet as f (channel, cluster, first_seen, last_seen, reported, reported_since, served, served_since,
	directed, directed_since, evidence, enrolled, forced)
select u.channel, u.cluster, u.first, u.at, u.reported, case when u.reported = '' then null else u.since end, u.served,
	case when u.served = '' then null else u.at end, nullif(u.directed, ''),
	case when u.directed = '' then null else u.at end, u.evidence, u.enrolled, u.forced
from unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::text[], $7::bool[], $8::text[],
	$9::timestamptz[], $10::bool[], $11::text[])
	as u(channel, cluster, at, reported, since, served, evidence, directed, first, enrolled, forced)
on conflict (channel, cluster) do update set
	evidence = excluded.evidence,
	enrolled = excluded.enrolled,
	forced = case when excluded.served = '' then f.forced else excluded.forced end,
	first_seen = least(f.first_seen, excluded.first_seen),
	last_seen = greatest(f.last_seen, excluded.last_seen),
	reported = case when excluded.reported = '' then f.reported else excluded.reported end,
	reported_since = case
		when excluded.reported = '' then f.reported_since
		when excluded.reported = f.reported then least(f.reported_since, excluded.reported_since)
		else excluded.reported_since end,
	served = case when excluded.served = '' then f.served else excluded.served end,
	served_since = case
		when excluded.served = '' then f.served_since
		when excluded.served = f.served then least(coalesce(f.served_since, excluded.served_since), excluded.served_since)
		else excluded.served_since end,
	directed = coalesce(excluded.directed, f.directed),
	directed_since = case
		when excluded.directed is null then f.directed_since
		when excluded.directed = f.directed then least(coalesce(f.directed_since, excluded.directed_since), excluded.directed_since)
		else excluded.directed_since end
returning f.channel, f.cluster, f.reported, f.reported_since`

// fleetCols is a batch of sightings as fleetUpsert's columns.
type fleetCols struct {
	channel, cluster, reported, served, directed, forced []string
	at, since, first                                     []time.Time
	evidence, enrolled                                   []bool
}

func (c *fleetCols) add(r resolver.Sighting) {
	since := r.Since
	if since.IsZero() {
		since = r.At
	}
	first := r.First
	if first.IsZero() || first.After(r.At) {
		first = r.At
	}
	c.channel = append(c.channel, r.Channel)
	c.cluster = append(c.cluster, r.Cluster)
	c.reported = append(c.reported, r.Reported)
	c.served = append(c.served, r.Served)
	c.directed = append(c.directed, r.Directed)
	c.at = append(c.at, r.At)
	c.since = append(c.since, since)
	c.first = append(c.first, first)
	c.evidence = append(c.evidence, !r.Outside)
	c.enrolled = append(c.enrolled, r.Enrolled)
	c.forced = append(c.forced, r.Forced)
}

// one is the batch's i-th sighting alone.
func (c *fleetCols) one(i int) fleetCols {
	j := i + 1
	return fleetCols{channel: c.channel[i:j], cluster: c.cluster[i:j], reported: c.reported[i:j], served: c.served[i:j],
		directed: c.directed[i:j], at: c.at[i:j], since: c.since[i:j], first: c.first[i:j], evidence: c.evidence[i:j],
		enrolled: c.enrolled[i:j], forced: c.forced[i:j]}
}

// RecordFleet writes sightings, at most one per (channel, cluster) (the
// recorder coalesces), and returns each written row's reported version and
// since when: the earliest any replica saw it, which the caller's settle
// clock adopts. Rows are written in key order, so two replicas writing
// overlapping batches lock them in the same order and never deadlock.
func (s *Fleet) RecordFleet(ctx context.Context, sightings []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	rows := slices.Clone(sightings)
	slices.SortFunc(rows, func(a, b resolver.Sighting) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Cluster, b.Cluster))
	})
	out := make([]resolver.ClusterRecord, 0, len(rows))
	for len(rows) > 0 {
		n := min(len(rows), fleetChunk)
		chunk := rows[:n]
		rows = rows[n:]
		var cols fleetCols
		for _, r := range chunk {
			cols.add(r)
		}
		recs, err := s.recordChunk(ctx, cols)
		if err != nil && !errors.Is(err, resolver.ErrUnavailable) && ctx.Err() == nil {
			// The database refused the data, not the connection: one bad
			// record must not drop the others, so each goes on its own.
			var bad int
			var first error
			for i := range chunk {
				one, err := s.recordChunk(ctx, cols.one(i))
				recs = append(recs, one...)
				if err != nil {
					bad++
					first = cmp.Or(first, err)
				}
			}
			err = nil
			if bad > 0 {
				err = fmt.Errorf("%d of %d fleet records refused, the first: %w", bad, n, first)
			}
		}
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Fleet) recordChunk(ctx context.Context, c fleetCols) ([]resolver.ClusterRecord, error) {
	var out []resolver.ClusterRecord
	err := s.db.InTx(ctx, fmt.Sprintf("record %d fleet sightings", len(c.channel)), func(tx pgx.Tx) error {
		out = out[:0]
		res, err := tx.Query(ctx, fleetUpsert, c.channel, c.cluster, c.at, c.reported, c.since, c.served, c.evidence,
			c.directed, c.first, c.enrolled, c.forced)
		if err != nil {
			return err
		}
		defer res.Close()
		for res.Next() {
			var c resolver.ClusterRecord
			var since *time.Time
			if err := res.Scan(&c.Channel, &c.ID, &c.Reported, &since); err != nil {
				return err
			}
			if since != nil {
				c.ReportedSince = *since
			}
			out = append(out, c)
		}
		return res.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
