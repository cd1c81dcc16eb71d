package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// Evidence mode (make bench-evidence): records fleet records over 50
// channels, each told one of 20 versions over the last 20 hours (the
// triggers keep the evidence counters as they are written); one evidence
// pass is the indexing leader's round (internal/promotion): read the
// counters of every channel, compute, save. It prints the first pass
// (every adoption median read), the steady pass's time, and the channel
// URL's latency with and without passes running back to back beside it.

const evidenceChannels = 50

func runEvidence(ctx context.Context, records int, d time.Duration) error {
	st, db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	took, err := seedEvidence(ctx, db, records)
	if err != nil {
		return err
	}
	fmt.Printf("seeded %d fleet records over %d channels in %s (generate_series, then vacuum analyze)\n", records, evidenceChannels, took.Round(time.Millisecond))
	base, stop, err := serve(ctx, st)
	if err != nil {
		return err
	}
	defer stop()
	loop, err := promotion.New(promotion.Options{Store: st, Snapshot: func() *snapshot.Snapshot { return benchkit.SemverSnapshot(40) }, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	first, err := evidencePass(ctx, st, loop)
	if err != nil {
		return err
	}
	quiet, err := channelLatency(ctx, base, d)
	if err != nil {
		return err
	}
	// The leader's cadence (a pass every 2 s) beside the channel URL, then
	// passes back to back for their time.
	var busy stats
	if _, err := passesWhile(ctx, st, loop, 2*time.Second, func() (err error) {
		busy, err = channelLatency(ctx, base, d)
		return err
	}); err != nil {
		return err
	}
	var stress stats
	passes, err := passesWhile(ctx, st, loop, 0, func() (err error) {
		stress, err = channelLatency(ctx, base, d)
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(passes)
	p50, worst := passes[len(passes)/2], passes[len(passes)-1]
	perMinute := time.Duration(30) * p50 // a pass every 2 s
	var reads []time.Duration
	for range 20 {
		start := time.Now()
		if _, err := st.FleetActiveServed(ctx, start.Add(-time.Hour)); err != nil {
			return err
		}
		reads = append(reads, time.Since(start))
	}
	slices.Sort(reads)
	with, without, err := recordCost(ctx, st, db, records)
	if err != nil {
		return err
	}
	fmt.Printf("\n%-50s %16s   %s\n", "measure", "value", "notes")
	row := func(name, val, note string) { fmt.Printf("%-50s %16s   %s\n", name, val, note) }
	row("first evidence pass (every median read)", ms(first), fmt.Sprintf("%d channels, %d records", evidenceChannels, records))
	row("evidence pass, p50 / max", ms(p50)+" / "+ms(worst), fmt.Sprintf("%d passes back to back; one connection at a time", len(passes)))
	row("evidence cost per minute (a pass every 2 s)", ms(perMinute), "goal < 1 s of one core (Tidemark and Postgres together)")
	row("channel URL p50 / p99, no pass", ms(quiet.p50)+" / "+ms(quiet.p99), fmt.Sprintf("%d requests, 4 clients back to back for %s", quiet.n, d))
	row("channel URL p50 / p99, a pass every 2 s", ms(busy.p50)+" / "+ms(busy.p99), fmt.Sprintf("%d requests (the leader's cadence)", busy.n))
	row("channel URL p50 / p99, passes back to back", ms(stress.p50)+" / "+ms(stress.p99), fmt.Sprintf("%d requests (a stress: ~500x the cadence)", stress.n))
	row("versions served to active clusters, p50 / max", ms(reads[len(reads)/2])+" / "+ms(reads[len(reads)-1]), "every replica reads it every 2 s (the served set's fleet part); 20 reads")
	row("record 5,000 sightings, with / without counters", ms(with)+" / "+ms(without), "p50 of 20 batches re-polling known clusters; the share of the evidence and served-set counters")
	if perMinute >= time.Second || busy.p99 > 2*quiet.p99+time.Millisecond {
		fmt.Println("GOAL MISSED")
	}
	return nil
}

// seedEvidence fills the fleet: records clusters spread over the
// channels, told one of 20 versions 1 to 20 hours ago; 70% run what they
// were told (adopted), the rest an older version (stuck after an hour).
// Written 50,000 a statement, as batches of sightings are (the counters'
// triggers run per statement).
func seedEvidence(ctx context.Context, db string, records int) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	for lo := 1; lo <= records; lo += 50_000 {
		hi := min(lo+50_000-1, records)
		_, err = conn.Exec(ctx, `insert into fleet (channel, cluster, first_seen, last_seen, reported, reported_since, served, served_since, directed, directed_since)
			select case when g % $3 = 0 then 'stable' else 'ch-' || (g % $3) end, 'cluster-' || g,
				now() - interval '30 days', now() - (g % 1800) * interval '1 second',
				case when g % 10 < 7 then 'v1.' || (g % 20) || '.0' else 'v1.' || greatest(g % 20 - 1, 0) || '.0' end,
				now() - (g % 20) * interval '1 hour' + interval '10 minutes',
				'v1.' || (g % 20) || '.0', now() - (g % 20 + 1) * interval '1 hour',
				'v1.' || (g % 20) || '.0', now() - (g % 20 + 1) * interval '1 hour'
			from generate_series($1::int, $2::int) g`, lo, hi, evidenceChannels)
		if err != nil {
			return 0, fmt.Errorf("seeding the fleet: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, `vacuum analyze`); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// evidencePass is one round of the indexing leader's loop: every
// channel's evidence computed from the counters and saved.
func evidencePass(ctx context.Context, st *store.Store, loop *promotion.Loop) (time.Duration, error) {
	start := time.Now()
	loop.Round(ctx)
	took := time.Since(start)
	list, err := st.ChannelEvidence(ctx, "stable", time.Now().Add(-evidence.Days))
	if err != nil {
		return 0, err
	}
	if len(list) == 0 || list[0].Told == 0 {
		return 0, fmt.Errorf("the pass saved no evidence for channel stable: %+v", list)
	}
	return took, nil
}

// passesWhile runs evidence passes every every (0: back to back) while
// fn runs, and returns their times.
func passesWhile(ctx context.Context, st *store.Store, loop *promotion.Loop, every time.Duration, fn func() error) ([]time.Duration, error) {
	var passes []time.Duration
	var mu sync.Mutex
	pctx, cancel := context.WithCancel(ctx)
	var passErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			t, err := evidencePass(pctx, st, loop)
			if err != nil {
				if pctx.Err() == nil {
					passErr.Store(err)
				}
				return
			}
			mu.Lock()
			passes = append(passes, t)
			mu.Unlock()
			if every > 0 {
				select {
				case <-pctx.Done():
				case <-time.After(every - t):
				}
			}
		}
	}()
	err := fn()
	cancel()
	<-done
	if err != nil {
		return nil, err
	}
	if e, ok := passErr.Load().(error); ok {
		return nil, fmt.Errorf("evidence pass: %w", e)
	}
	if len(passes) == 0 {
		return nil, fmt.Errorf("no evidence pass finished")
	}
	return passes, nil
}

// recordCost is the p50 time to record a batch of 5,000 sightings of
// known clusters (a poll each, the common case), with the evidence
// counters' trigger and then with a trigger that keeps only the fleet
// summary's counts (the throwaway database's fleet_keep_counts replaced:
// withoutEvidence), so the difference is what keeping evidence and the
// served set's per-minute counts adds to recording.
func recordCost(ctx context.Context, st *store.Store, db string, records int) (with, without time.Duration, err error) {
	measure := func(round int) (time.Duration, error) {
		var took []time.Duration
		for b := range 20 {
			batch := make([]resolver.Sighting, 0, 5000)
			at := time.Now()
			for i := range 5000 {
				g := 1 + (round*100_000+b*5000+i)%records
				v := fmt.Sprintf("v1.%d.0", g%20)
				batch = append(batch, resolver.Sighting{Cluster: fmt.Sprintf("cluster-%d", g), Channel: evidenceChannel(g),
					Served: v, Directed: v, Reported: v, At: at})
			}
			start := time.Now()
			if _, err := st.RecordFleet(ctx, batch); err != nil {
				return 0, err
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		return took[len(took)/2], nil
	}
	if with, err = measure(0); err != nil {
		return 0, 0, err
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, withoutEvidence); err != nil {
		return 0, 0, err
	}
	without, err = measure(1)
	return with, without, err
}

// withoutEvidence is migration 029's fleet_keep_counts without evidence
// and the served set: fleet_versions and fleet_activity only.
const withoutEvidence = `create or replace function fleet_keep_counts() returns trigger language plpgsql as $$
declare
	cols text := 'channel, reported, served, last_seen';
	src text := case TG_OP
		when 'INSERT' then format('select %s, 1 as n from fleet_new', cols)
		when 'DELETE' then format('select %s, -1 as n from fleet_old', cols)
		else format('select %s, 1 as n from fleet_new union all select %s, -1 from fleet_old', cols, cols) end;
begin
	execute format($q$
		with c as materialized (%s),
		v as (
			insert into fleet_versions as f (channel, kind, version, clusters)
			select channel, kind, version, sum(n) from (
				select channel, 'reported' as kind, reported as version, n from c
				union all
				select channel, 'served', served, n from c where served <> ''
			) k
			group by 1, 2, 3 having sum(n) <> 0
			order by 1, 2, 3
			on conflict (channel, kind, version) do update set clusters = f.clusters + excluded.clusters
		)
		insert into fleet_activity as a (channel, minute, reported, clusters)
		select channel, date_trunc('minute', last_seen), reported, sum(n) from c
		group by 1, 2, 3 having sum(n) <> 0
		order by 1, 2, 3
		on conflict (channel, minute, reported) do update set clusters = a.clusters + excluded.clusters$q$, src);
	return null;
end $$`

// evidenceChannel is the channel seedEvidence gives record g.
func evidenceChannel(g int) string {
	if g%evidenceChannels == 0 {
		return "stable"
	}
	return fmt.Sprintf("ch-%d", g%evidenceChannels)
}

// channelLatency asks the channel URL from 4 clients back to back for d,
// without a cluster ID (nothing is recorded), and returns its latencies.
func channelLatency(ctx context.Context, base string, d time.Duration) (stats, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var mu sync.Mutex
	var all []time.Duration
	var failed error
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(end) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1-release/channels/stable", nil)
				t := time.Now()
				if err := benchkit.Found(client, req); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if failed != nil {
		return stats{}, failed
	}
	slices.Sort(all)
	return stats{n: len(all), p50: all[len(all)/2], p99: all[len(all)*99/100]}, nil
}
