package fleetdb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
)

// EvidenceCounts reads every channel's evidence counters (migrations 024
// and 025): the clusters active since activeSince, grouped by channel,
// the version last directed to them and what they report, and whether
// they were first directed it before stuckBefore; and when each
// channel first and last told each version. The counters keep last seen
// by whole minutes and first directed by whole seconds: minutes wholly in
// the window come from them, the window's first minute from the counts by
// second (fleet_seconds, migration 029, a channel at a time), so a cluster
// that falls silent leaves the figures within a second of leaving the
// window, and one counts as stuck at most a second late.
func (s *Fleet) EvidenceCounts(ctx context.Context, activeSince, stuckBefore time.Time) ([]resolver.EvidenceRow, map[resolver.ChannelVersion]resolver.EvidenceTold, error) {
	var rows []resolver.EvidenceRow
	told := map[resolver.ChannelVersion]resolver.EvidenceTold{}
	err := s.db.InTxOpts(ctx, "read evidence counters", pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `select channel, served, reported, told + interval '1 second' <= $2, sum(clusters)
			from fleet_evidence where seen > date_trunc('minute', $1::timestamptz)
			group by 1, 2, 3, 4 having sum(clusters) > 0
			union all
			select s.channel, s.directed, s.reported, s.told + interval '1 second' <= $2, sum(s.clusters)
			from (select distinct channel from evidence_told) c
			join fleet_seconds s on s.channel = c.channel and s.second >= date_trunc('second', $1::timestamptz)
				and s.second < date_trunc('minute', $1::timestamptz) + interval '1 minute'
			where s.counted
			group by 1, 2, 3, 4 having sum(s.clusters) > 0`, activeSince, stuckBefore)
		if err != nil {
			return err
		}
		var row resolver.EvidenceRow
		if _, err := pgx.ForEachRow(r, []any{&row.Channel, &row.Served, &row.Reported, &row.Old, &row.Clusters}, func() error {
			rows = append(rows, row)
			return nil
		}); err != nil {
			return err
		}
		r, err = tx.Query(ctx, `select channel, version, first_told, last_told from evidence_told`)
		if err != nil {
			return err
		}
		var k resolver.ChannelVersion
		var t resolver.EvidenceTold
		_, err = pgx.ForEachRow(r, []any{&k.Channel, &k.Version, &t.First, &t.Last}, func() error {
			told[k] = t
			return nil
		})
		return err
	})
	return rows, told, err
}

// MarkTold records when each channel's answer to a request reporting
// nothing became the version it names (a pin, an unpin, a newly indexed
// version, a rollout's start), unless a directed answer set it first:
// a version's first told is set once, and never from a report. Its last
// told moves on, at most once a minute.
func (s *Fleet) MarkTold(ctx context.Context, marks []resolver.ToldMark, now time.Time) error {
	if len(marks) == 0 {
		return nil
	}
	var channel, version []string
	var at []time.Time
	for _, m := range marks {
		channel, version, at = append(channel, m.Channel), append(version, m.Version), append(at, m.At)
	}
	return s.db.InTx(ctx, fmt.Sprintf("mark %d versions told", len(marks)), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `insert into evidence_told as t (channel, version, first_told, last_told)
			select k.channel, k.version, k.at, $4 from unnest($1::text[], $2::text[], $3::timestamptz[]) as k(channel, version, at)
			order by 1, 2
			on conflict (channel, version) do update set last_told = excluded.last_told
				where t.last_told < excluded.last_told - interval '1 minute'`, channel, version, at, now)
		return err
	})
}

// AdoptionMedians is, for each key, the median seconds from first told to
// first reporting the version over its clusters that adopted it (-1 with
// none), from the adoption histogram: exact below 100 s, to two
// significant figures above.
func (s *Fleet) AdoptionMedians(ctx context.Context, keys []resolver.ChannelVersion) (map[resolver.ChannelVersion]float64, error) {
	out := make(map[resolver.ChannelVersion]float64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	channels := make([]string, len(keys))
	versions := make([]string, len(keys))
	for i, k := range keys {
		out[k] = -1
		channels[i], versions[i] = k.Channel, k.Version
	}
	type bucket struct{ seconds, clusters int64 }
	hist := map[resolver.ChannelVersion][]bucket{}
	err := s.db.InTxOpts(ctx, fmt.Sprintf("read adoption of %d versions", len(keys)), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `select a.channel, a.version, a.seconds, a.clusters from fleet_adoption a
			join unnest($1::text[], $2::text[]) as k(channel, version) on a.channel = k.channel and a.version = k.version
			where a.clusters > 0`, channels, versions)
		if err != nil {
			return err
		}
		var k resolver.ChannelVersion
		var b bucket
		_, err = pgx.ForEachRow(r, []any{&k.Channel, &k.Version, &b.seconds, &b.clusters}, func() error {
			hist[k] = append(hist[k], b)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	for k, bs := range hist {
		sort.Slice(bs, func(i, j int) bool { return bs[i].seconds < bs[j].seconds })
		var n int64
		for _, b := range bs {
			n += b.clusters
		}
		// The two middle positions (one when n is odd), averaged: what
		// percentile_cont(0.5) gives over the values themselves.
		at := func(pos int64) float64 {
			for _, b := range bs {
				if pos < b.clusters {
					return float64(b.seconds)
				}
				pos -= b.clusters
			}
			return float64(bs[len(bs)-1].seconds)
		}
		out[k] = (at((n-1)/2) + at(n/2)) / 2
	}
	return out, nil
}

// historyEvery is the least time between two points of one version's
// adoption history.
const historyEvery = time.Minute

// SaveEvidence stores what the leader computed at at: a row per (channel,
// version), written only when its figures changed, and a point of
// adoption history when they differ from the version's last point and
// that point is a minute old. Versions last told over evidence.Days ago
// go.
func (s *Fleet) SaveEvidence(ctx context.Context, list []resolver.Evidence, at time.Time) error {
	var cols struct {
		channel, version          []string
		told, adopted, stuck, hal []int64
		first, last               []time.Time
		p50                       []*float64
	}
	for _, e := range list {
		cols.channel = append(cols.channel, e.Channel)
		cols.version = append(cols.version, e.Version)
		cols.told = append(cols.told, int64(e.Told))
		cols.adopted = append(cols.adopted, int64(e.Adopted))
		cols.stuck = append(cols.stuck, int64(e.Stuck))
		cols.hal = append(cols.hal, int64(e.Halts))
		cols.first = append(cols.first, e.FirstTold)
		cols.last = append(cols.last, e.LastTold)
		var p *float64
		if e.AdoptionP50 >= 0 {
			p = &e.AdoptionP50
		}
		cols.p50 = append(cols.p50, p)
	}
	return s.db.InTx(ctx, fmt.Sprintf("save evidence of %d versions", len(list)), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `insert into channel_evidence as c
				(channel, version, told, adopted, stuck, halts, first_told, last_told, adoption_p50, computed_at)
			select k.*, $10 from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
				$7::timestamptz[], $8::timestamptz[], $9::float8[]) as k
			order by 1, 2
			on conflict (channel, version) do update set told = excluded.told, adopted = excluded.adopted,
				stuck = excluded.stuck, halts = excluded.halts, first_told = excluded.first_told,
				last_told = excluded.last_told, adoption_p50 = excluded.adoption_p50, computed_at = excluded.computed_at
			where (c.told, c.adopted, c.stuck, c.halts, c.first_told, c.last_told, c.adoption_p50)
				is distinct from (excluded.told, excluded.adopted, excluded.stuck, excluded.halts,
					excluded.first_told, excluded.last_told, excluded.adoption_p50)`,
			cols.channel, cols.version, cols.told, cols.adopted, cols.stuck, cols.hal, cols.first, cols.last, cols.p50, at); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `insert into evidence_history (channel, version, at, told, adopted, stuck)
			select k.channel, k.version, $6, k.told, k.adopted, k.stuck
			from unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) as k(channel, version, told, adopted, stuck)
			left join lateral (select h.at, h.told, h.adopted, h.stuck from evidence_history h
				where h.channel = k.channel and h.version = k.version order by h.at desc limit 1) l on true
			where l.at is null or (l.at <= $6::timestamptz - $7::interval
				and (l.told, l.adopted, l.stuck) is distinct from (k.told, k.adopted, k.stuck))
			on conflict do nothing`,
			cols.channel, cols.version, cols.told, cols.adopted, cols.stuck, at, historyEvery); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `delete from channel_evidence where last_told < $1`, at.Add(-evidence.Days))
		return err
	})
}

// ChannelEvidence is what the leader last computed of channel's versions
// told since since, by version string.
func (s *Fleet) ChannelEvidence(ctx context.Context, channel string, since time.Time) ([]resolver.Evidence, error) {
	var out []resolver.Evidence
	err := s.db.InTxOpts(ctx, fmt.Sprintf("read evidence of channel %q", channel), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `select channel, version, told, adopted, stuck, halts, first_told, last_told, coalesce(adoption_p50, -1)
			from channel_evidence where channel = $1 and last_told >= $2 order by version`, channel, since)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (resolver.Evidence, error) {
			var e resolver.Evidence
			err := r.Scan(&e.Channel, &e.Version, &e.Told, &e.Adopted, &e.Stuck, &e.Halts, &e.FirstTold, &e.LastTold, &e.AdoptionP50)
			return e, err
		})
		return err
	})
	return out, err
}

// historyPoints bounds the points EvidenceHistory returns per version: a
// version whose figures moved every minute for 30 days has 43,200.
const historyPoints = 240

// EvidenceHistory is channel's adoption history since since, per version,
// oldest point first: at most historyPoints of them, the last of each of
// as many equal spans from the version's first point to now.
func (s *Fleet) EvidenceHistory(ctx context.Context, channel string, since time.Time) (map[string][]resolver.EvidencePoint, error) {
	out := map[string][]resolver.EvidencePoint{}
	err := s.db.InTxOpts(ctx, fmt.Sprintf("read adoption history of channel %q", channel), pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `with first as (
				select version, min(at) as at from evidence_history where channel = $1 and at >= $2 group by version)
			select version, at, told, adopted, stuck from (
				select distinct on (h.version, date_bin(greatest((now() - f.at) / $3, interval '1 second'), h.at, f.at))
					h.version, h.at, h.told, h.adopted, h.stuck
				from evidence_history h join first f on f.version = h.version
				where h.channel = $1 and h.at >= $2
				order by h.version, date_bin(greatest((now() - f.at) / $3, interval '1 second'), h.at, f.at), h.at desc) p
			order by version, at`, channel, since, historyPoints)
		if err != nil {
			return err
		}
		var v string
		var p resolver.EvidencePoint
		_, err = pgx.ForEachRow(rows, []any{&v, &p.At, &p.Told, &p.Adopted, &p.Stuck}, func() error {
			out[v] = append(out[v], p)
			return nil
		})
		return err
	})
	return out, err
}
