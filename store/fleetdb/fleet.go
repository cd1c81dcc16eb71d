// Package fleetdb keeps the fleet's records in Postgres (CONTRACT section
// 5): batched upserts of sightings, the summaries and pages the API reads,
// the counts the rollout loops and the console show, and the purge.
// *store.Store embeds its Fleet, so callers see one store.
package fleetdb

import (
	"context"
	"fmt"
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
		// Whole minutes after the window's first from the counts by
		// minute, that minute itself (partly in the window) from the
		// counts by second.
		return tx.QueryRow(ctx, `select (
			(select coalesce(sum(clusters), 0) from fleet_activity
				where channel = $1 and minute > date_trunc('minute', $2::timestamptz))
			+ (select coalesce(sum(clusters), 0) from fleet_seconds where channel = $1
				and second >= date_trunc('second', $2::timestamptz)
				and second < date_trunc('minute', $2::timestamptz) + interval '1 minute'))::bigint`,
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
// since activeSince: the console's channel list and admission read them.
// A channel without records is absent. Both come from the counts kept as
// the fleet is written (migrations 008, 029): the active ones by whole
// minutes after the window's first, that minute itself from the counts by
// second (fleet_seconds, migration 029), so the count is exact to the
// second.
func (s *Fleet) FleetCounts(ctx context.Context, activeSince time.Time) (map[string]resolver.FleetCount, error) {
	out := map[string]resolver.FleetCount{}
	err := s.db.InTxOpts(ctx, "count fleet per channel", pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `with t as (
				select channel, sum(clusters) as clusters from fleet_versions
				where kind = 'reported' group by channel having sum(clusters) > 0
			), a as (
				select channel, sum(clusters) as active from fleet_activity
				where minute > date_trunc('minute', $1::timestamptz) group by channel
			)
			select t.channel, t.clusters::bigint, (coalesce(a.active, 0) + b.active)::bigint
			from t left join a using (channel)
			cross join lateral (select coalesce(sum(clusters), 0) as active from fleet_seconds s where s.channel = t.channel
				and s.second >= date_trunc('second', $1::timestamptz)
				and s.second < date_trunc('minute', $1::timestamptz) + interval '1 minute') b`, activeSince)
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
// reported version (the tidemark_fleet_clusters gauge), from the counts
// kept as the fleet is written (migration 029): whole minutes after
// the window's first by minute, that minute itself by second.
func (s *Fleet) FleetActive(ctx context.Context, activeSince time.Time) (map[string][]resolver.VersionCount, error) {
	out := map[string][]resolver.VersionCount{}
	err := s.db.InTxOpts(ctx, "count active fleet", pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, reported, sum(n)::bigint from (
				select channel, reported, clusters as n from fleet_activity
				where minute > date_trunc('minute', $1::timestamptz) and reported <> '' and clusters <> 0
				union all
				select s.channel, s.reported, s.clusters
				from (select distinct channel from fleet_activity
					where minute = date_trunc('minute', $1::timestamptz) and clusters > 0) c
				join fleet_seconds s on s.channel = c.channel and s.second >= date_trunc('second', $1::timestamptz)
					and s.second < date_trunc('minute', $1::timestamptz) + interval '1 minute'
				where s.reported <> '' and s.clusters <> 0
			) u group by 1, 2 having sum(n) > 0`, activeSince)
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
// itself from the counts by second (fleet_seconds), so the list is exact
// to the second.
func (s *Fleet) FleetActiveServed(ctx context.Context, activeSince time.Time) (map[string][]string, error) {
	out := map[string][]string{}
	err := s.db.InTxOpts(ctx, "list versions served to active clusters", pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `with m as (
				select distinct seen = date_trunc('minute', $1::timestamptz) as first, channel, served from fleet_served
				where seen >= date_trunc('minute', $1::timestamptz) and clusters > 0)
			select distinct channel, served from m
			where not first or exists (select 1 from fleet_seconds s where s.channel = m.channel
				and s.second >= date_trunc('second', $1::timestamptz)
				and s.second < date_trunc('minute', $1::timestamptz) + interval '1 minute'
				and s.directed = m.served and s.evidence and s.clusters > 0)`, activeSince)
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
				if _, err := tx.Exec(ctx, `delete from fleet_seconds where clusters = 0`); err != nil {
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
