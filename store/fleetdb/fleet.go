// Package fleetdb keeps the fleet's records in Postgres (CONTRACT section
// 5): batched upserts of sightings, the summaries and pages the API reads,
// the counts the rollout loops and the console show, and the purge.
// *store.Store embeds its Fleet, so callers see one store.
package fleetdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Fleet is the fleet's part of the store.
type Fleet struct{ db *pg.DB }

// New is the fleet's part of the store on db.
func New(db *pg.DB) *Fleet { return &Fleet{db: db} }

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

const fleetColumns = `channel, cluster, reported, reported_since, served, coalesce(directed, ''), first_seen, last_seen, enrolled, forced`

func scanCluster(row pgx.Row) (resolver.ClusterRecord, error) {
	var c resolver.ClusterRecord
	var since *time.Time
	err := row.Scan(&c.Channel, &c.ID, &c.Reported, &since, &c.Served, &c.Directed, &c.FirstSeen, &c.LastSeen, &c.Enrolled, &c.Forced)
	if since != nil {
		c.ReportedSince = *since
	}
	return c, err
}

// FleetSummary counts channel's clusters: all of them, those seen since
// activeSince, and by reported and by served version (unordered; the
// caller orders versions by its scheme). The counts are kept as the fleet
// is written (migration 008), so it reads a few rows per version and per
// minute of the active window, and the window's first minute from fleet.
func (s *Fleet) FleetSummary(ctx context.Context, channel string, activeSince time.Time) (resolver.FleetSummary, error) {
	sum := resolver.FleetSummary{Channel: channel, Versions: []resolver.VersionCount{}, Served: []resolver.VersionCount{}}
	err := s.db.InTxOpts(ctx, fmt.Sprintf("fleet summary of channel %q", channel), pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select kind, version, clusters from fleet_versions where channel = $1 and clusters > 0`, channel)
		if err != nil {
			return err
		}
		for rows.Next() {
			var kind, v string
			var n int
			if err := rows.Scan(&kind, &v, &n); err != nil {
				rows.Close()
				return err
			}
			switch {
			case kind == "served":
				sum.Served = append(sum.Served, resolver.VersionCount{Version: v, Clusters: n})
			case v == "":
				sum.Clusters += n
			default:
				sum.Clusters += n
				sum.Versions = append(sum.Versions, resolver.VersionCount{Version: v, Clusters: n})
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// Whole minutes after the window's first from the counts, that
		// minute itself (partly in the window) from fleet.
		return tx.QueryRow(ctx, `select
			(select coalesce(sum(clusters), 0) from fleet_activity
				where channel = $1 and minute > date_trunc('minute', $2::timestamptz))
			+ (select count(*) from fleet where channel = $1 and last_seen >= $2
				and last_seen < date_trunc('minute', $2::timestamptz) + interval '1 minute')`,
			channel, activeSince).Scan(&sum.Active)
	})
	return sum, err
}

// fleetPage is a page of one channel's clusters; fleetPageAll of every
// channel's ($1, $2: the last cluster and channel of the previous page).
const (
	fleetPage = `select ` + fleetColumns + ` from fleet
			where channel = $1 and cluster > $2
				and ($3 = '' or reported = $3)
				and (not $4 or last_seen < $5)
				and ($7::text[] is null or reported = any($7))
			order by cluster limit $6`
	fleetPageAll = `select ` + fleetColumns + ` from fleet
			where (cluster, channel) > ($1, $2)
				and ($3 = '' or reported = $3)
				and (not $4 or last_seen < $5)
				and ($7::text[] is null or reported = any($7))
			order by cluster, channel limit $6`
)

// FleetClusters is one page of a channel's clusters by ID; next is the last
// ID when more may follow, "" at the end.
func (s *Fleet) FleetClusters(ctx context.Context, q resolver.ClusterQuery) (page []resolver.ClusterRecord, next string, err error) {
	if q.Limit <= 0 {
		return nil, "", fmt.Errorf("%w: fleet page limit %d", resolver.ErrInvalid, q.Limit)
	}
	query, after := fleetPage, []any{q.Channel, q.After}
	if q.Channel == "" {
		// Across channels a page ends at a (cluster, channel) pair: After
		// is "cluster/channel" then ('/' is in neither).
		cluster, channel, _ := strings.Cut(q.After, "/")
		query, after = fleetPageAll, []any{cluster, channel}
	}
	err = s.db.InTxOpts(ctx, fmt.Sprintf("list fleet clusters of channel %q", q.Channel), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, after[0], after[1], q.Version, q.Stale, q.Since, q.Limit+1, q.Versions)
		if err != nil {
			return err
		}
		page, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (resolver.ClusterRecord, error) { return scanCluster(r) })
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(page) > q.Limit {
		page = page[:q.Limit]
		next = page[len(page)-1].ID
		if q.Channel == "" {
			next += "/" + page[len(page)-1].Channel
		}
	}
	return page, next, nil
}

// FleetCluster is every channel record of one cluster, by channel.
// ErrNotFound when the fleet has none.
func (s *Fleet) FleetCluster(ctx context.Context, id string) ([]resolver.ClusterRecord, error) {
	var out []resolver.ClusterRecord
	err := s.db.InTxOpts(ctx, fmt.Sprintf("fleet cluster %q", id), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select `+fleetColumns+` from fleet where cluster = $1 order by channel`, id)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (resolver.ClusterRecord, error) { return scanCluster(r) })
		if err == nil && len(out) == 0 {
			return fmt.Errorf("%w: cluster %q is not in the fleet", resolver.ErrNotFound, id)
		}
		return err
	})
	return out, err
}

// FleetCounts counts every channel's clusters, all of them and those seen
// since activeSince, in one pass: the console's channel list shows them.
// A channel without records is absent.
func (s *Fleet) FleetCounts(ctx context.Context, activeSince time.Time) (map[string]resolver.FleetCount, error) {
	out := map[string]resolver.FleetCount{}
	err := s.db.InTxOpts(ctx, "count fleet per channel", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, count(*), count(*) filter (where last_seen >= $1)
			from fleet group by channel`, activeSince)
		if err != nil {
			return err
		}
		var ch string
		var c resolver.FleetCount
		_, err = pgx.ForEachRow(rows, []any{&ch, &c.Clusters, &c.Active}, func() error {
			out[ch] = c
			return nil
		})
		return err
	})
	return out, err
}

// ServedCounts counts, for every (channel, version) in keys, the clusters
// last served that version on that channel, in one query on the counts
// kept as the fleet is written (migration 008). A key with none counts 0.
func (s *Fleet) ServedCounts(ctx context.Context, keys []resolver.ChannelVersion) (map[resolver.ChannelVersion]int, error) {
	out := make(map[resolver.ChannelVersion]int, len(keys))
	channels := make([]string, len(keys))
	versions := make([]string, len(keys))
	for i, k := range keys {
		out[k] = 0
		channels[i], versions[i] = k.Channel, k.Version
	}
	if len(keys) == 0 {
		return out, nil
	}
	err := s.db.InTxOpts(ctx, fmt.Sprintf("count served clusters of %d versions", len(keys)), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select f.channel, f.version, f.clusters from fleet_versions f
			join unnest($1::text[], $2::text[]) as k(channel, version) on f.channel = k.channel and f.version = k.version
			where f.kind = 'served'`, channels, versions)
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

// FleetActive counts the clusters seen since activeSince by channel and
// reported version (the tidemark_fleet_clusters gauge).
func (s *Fleet) FleetActive(ctx context.Context, activeSince time.Time) (map[string][]resolver.VersionCount, error) {
	out := map[string][]resolver.VersionCount{}
	err := s.db.InTxOpts(ctx, "count active fleet", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, reported, count(*) from fleet
			where last_seen >= $1 and reported <> '' group by channel, reported`, activeSince)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ch string
			var c resolver.VersionCount
			if err := rows.Scan(&ch, &c.Version, &c.Clusters); err != nil {
				return err
			}
			out[ch] = append(out[ch], c)
		}
		return rows.Err()
	})
	return out, err
}

// FleetActiveServed lists, per channel, the versions Tidemark last
// directed the clusters seen since activeSince whose reports count (each
// channel's served set keeps them: a registry client is never moved below
// them; a stay, which only echoes a report, never adds one). It reads the
// per-minute counts kept as the fleet is written (fleet_served, migration
// 024): whole minutes after the window's first from them, that minute
// itself from fleet (fleet_channel_seen), so the list is exact.
func (s *Fleet) FleetActiveServed(ctx context.Context, activeSince time.Time) (map[string][]string, error) {
	out := map[string][]string{}
	err := s.db.InTxOpts(ctx, "list versions served to active clusters", pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `with m as (
				select distinct seen = date_trunc('minute', $1::timestamptz) as first, channel, served from fleet_served
				where seen >= date_trunc('minute', $1::timestamptz) and clusters > 0)
			select distinct channel, served from m
			where not first or exists (select 1 from fleet f where f.channel = m.channel and f.last_seen >= $1
				and f.last_seen < date_trunc('minute', $1::timestamptz) + interval '1 minute' and f.directed = m.served and f.evidence)`, activeSince)
		if err != nil {
			return err
		}
		var ch, v string
		_, err = pgx.ForEachRow(rows, []any{&ch, &v}, func() error {
			out[ch] = append(out[ch], v)
			return nil
		})
		return err
	})
	return out, err
}

// PurgeFleet deletes the records last seen before cutoff, a bounded batch
// per statement so that no purge holds many row locks at once against the
// recorders' upserts. It returns how many went.
func (s *Fleet) PurgeFleet(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.db.InTx(ctx, "purge fleet", func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `delete from fleet where ctid = any(array(
				select ctid from fleet where last_seen < $1 limit 10000))`, cutoff)
			n = tag.RowsAffected()
			return err
		})
		total += n
		if err == nil && n < 10000 {
			// Counters of versions and minutes no cluster is at any more.
			err = s.db.InTx(ctx, "purge fleet counts", func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `delete from fleet_versions where clusters = 0`); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `delete from fleet_evidence where clusters = 0`); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `delete from fleet_served where clusters = 0`); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `delete from fleet_adoption where clusters = 0`); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `delete from evidence_history where at < now() - interval '30 days'`); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `delete from fleet_activity where clusters = 0`)
				return err
			})
		}
		if err != nil || n < 10000 {
			return total, err
		}
	}
}

// FleetMembers calls fn with every recorded (channel, cluster), for the
// admission limits' set of known clusters.
func (s *Fleet) FleetMembers(ctx context.Context, fn func(channel, cluster string)) error {
	return s.db.InTxOpts(ctx, "list recorded clusters", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, cluster from fleet`)
		if err != nil {
			return err
		}
		var ch, id string
		_, err = pgx.ForEachRow(rows, []any{&ch, &id}, func() error {
			fn(ch, id)
			return nil
		})
		return err
	})
}
