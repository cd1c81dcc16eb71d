package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/store"
)

// Evidence mode (make bench-evidence): records fleet records over 50
// channels, each told one of 20 versions over the last 20 hours; one
// evidence pass reads every channel's evidence as the promoting leader
// does (two grouped statements and the halts per channel). It prints the
// pass's time and the channel URL's latency with and without passes
// running back to back beside it.

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
	quiet, err := channelLatency(ctx, base, d)
	if err != nil {
		return err
	}
	var passes []time.Duration
	var mu sync.Mutex
	pctx, cancel := context.WithCancel(ctx)
	var passErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pctx.Err() == nil {
			t, err := evidencePass(pctx, st)
			if err != nil {
				if pctx.Err() == nil {
					passErr.Store(err)
				}
				return
			}
			mu.Lock()
			passes = append(passes, t)
			mu.Unlock()
		}
	}()
	busy, err := channelLatency(ctx, base, d)
	cancel()
	<-done
	if err != nil {
		return err
	}
	if e, ok := passErr.Load().(error); ok {
		return fmt.Errorf("evidence pass: %w", e)
	}
	if len(passes) == 0 {
		return fmt.Errorf("no evidence pass finished in %s", d)
	}
	slices.Sort(passes)
	p50, worst := passes[len(passes)/2], passes[len(passes)-1]
	perMinute := time.Duration(12) * p50 // a pass every 5 s
	fmt.Printf("\n%-46s %14s   %s\n", "measure", "value", "notes")
	row := func(name, val, note string) { fmt.Printf("%-46s %14s   %s\n", name, val, note) }
	row("evidence pass, p50 / max", ms(p50)+" / "+ms(worst), fmt.Sprintf("%d passes; %d channels, %d records; one connection, so at most one core of Postgres", len(passes), evidenceChannels, records))
	row("evidence cost per minute (a pass every 5 s)", ms(perMinute), "goal < 1 s of one core")
	row("channel URL p50 / p99, no pass", ms(quiet.p50)+" / "+ms(quiet.p99), fmt.Sprintf("%d requests, 4 clients back to back for %s", quiet.n, d))
	row("channel URL p50 / p99, passes back to back", ms(busy.p50)+" / "+ms(busy.p99), fmt.Sprintf("%d requests", busy.n))
	if perMinute >= time.Second || busy.p99 > 2*quiet.p99+time.Millisecond {
		fmt.Println("GOAL MISSED")
	}
	return nil
}

// seedEvidence fills the fleet: records clusters spread over the
// channels, told one of 20 versions 1 to 20 hours ago; 70% run what they
// were told (adopted), the rest an older version (stuck after an hour).
func seedEvidence(ctx context.Context, db string, records int) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	_, err = conn.Exec(ctx, `insert into fleet (channel, cluster, first_seen, last_seen, reported, reported_since, served, served_since)
		select case when g % $2 = 0 then 'stable' else 'ch-' || (g % $2) end, 'cluster-' || g,
			now() - interval '30 days', now() - (g % 1800) * interval '1 second',
			case when g % 10 < 7 then 'v1.' || (g % 20) || '.0' else 'v1.' || greatest(g % 20 - 1, 0) || '.0' end,
			now() - (g % 20) * interval '1 hour' + interval '10 minutes',
			'v1.' || (g % 20) || '.0', now() - (g % 20 + 1) * interval '1 hour'
		from generate_series(1, $1) g`, records, evidenceChannels)
	if err != nil {
		return 0, fmt.Errorf("seeding the fleet: %w", err)
	}
	if _, err := conn.Exec(ctx, `vacuum analyze fleet`); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// evidencePass reads every channel's evidence once, as the promotion loop
// does on a round.
func evidencePass(ctx context.Context, st *store.Store) (time.Duration, error) {
	start := time.Now()
	now := time.Now()
	for i := range evidenceChannels {
		ch := fmt.Sprintf("ch-%d", i)
		if i == 0 {
			ch = "stable"
		}
		rows, _, err := st.Evidence(ctx, ch, now.Add(-time.Hour), now.Add(-time.Hour))
		if err != nil {
			return 0, err
		}
		if len(rows) == 0 {
			return 0, fmt.Errorf("channel %s: no evidence rows", ch)
		}
		if _, err := st.RolloutHalts(ctx, ch); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
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
				res, err := client.Do(req)
				if err == nil {
					res.Body.Close()
					if res.StatusCode != http.StatusFound {
						err = fmt.Errorf("channel URL: %d", res.StatusCode)
					}
				}
				if err != nil {
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
