// Command benchfleet measures the fleet at internet scale on a real
// Postgres: GET /api/v1/fleet?channel= over a million records (seeded with
// generate_series), and what recording costs a replica that serves ~1,100
// channel requests a second with a record each (a million clusters polling
// every 15 minutes): CPU per request with recording on and off, and the
// rows each statement carries to Postgres. Run it through scripts/bench-fleet
// (make bench-fleet), which starts a throwaway Postgres.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/store"
)

func main() {
	records := flag.Int("records", 1_000_000, "fleet records to seed in the asked channel")
	rate := flag.Int("rate", 1100, "channel requests per second, each with a cluster ID")
	d := flag.Duration("duration", 10*time.Second, "length of each paced phase")
	asks := flag.Int("asks", 20, "fleet summaries to time")
	rounds := flag.Int("rounds", 3, "interleaved rounds of the paced phases (off, on, off, on, ...); the median counts")
	serveMode := flag.String("serve", "", "internal: serve with fleet recording on or off (flood: on, default admission limits), print the address, run until stdin closes")
	flood := flag.Int("flood", 0, "flood mode: this many random cluster IDs per phase (one address, then 10,000 loopback addresses), at full speed, instead of the paced phases")
	floodFor := flag.Duration("flood-for", 30*time.Second, "flood mode: the longest a phase may run")
	million := flag.Duration("million", 0, "million mode: new clusters at -rate a second, each from its own forwarded address, for this long, over -records seeded ones")
	rssChannel := flag.String("rss-channel", "stable", "rss mode: the channel the clusters ask, stable or stepwise (a settle of 10 minutes: a settle clock a cluster)")
	rss := flag.Int("rss", 0, "rss mode: this many distinct clusters a round, each asking once at -rate a second from its own forwarded address; the replica's RSS and live heap over -rounds rounds")
	heapProfiles := flag.String("heapprofiles", "", "rss mode: write each round's heap profile (after a forced collection) to DIR/heap-N.pprof")
	evidenceMode := flag.Bool("evidence", false, "evidence mode: -records over 50 channels; an evidence pass's time and the channel URL's latency beside passes (make bench-evidence)")
	flag.Parse()
	if *evidenceMode {
		if err := runEvidence(context.Background(), *records, *d); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *serveMode == "rss" {
		if err := rssChild(context.Background(), *rss); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *rss > 0 {
		if err := runRSS(context.Background(), *rss, *rate, *rounds, *rssChannel, *heapProfiles); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *serveMode == "million" {
		if err := millionChild(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *million > 0 {
		if err := runMillion(context.Background(), *records, *rate, *million); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *serveMode == "flood" {
		if err := floodChild(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *flood > 0 {
		if err := runFlood(context.Background(), *flood, *floodFor); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if *serveMode != "" {
		if err := child(context.Background(), *serveMode == "on"); err != nil {
			fmt.Fprintln(os.Stderr, "benchfleet:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), *records, *rate, *d, *asks, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "benchfleet:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, records, rate int, d time.Duration, asks, rounds int) error {
	st, db, token, seedTime, err := openSeeded(ctx, records)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Printf("seeded %d fleet records in channel stable in %s (generate_series, then vacuum analyze)\n", records, seedTime.Round(time.Millisecond))
	if sb, err := setting(ctx, db, "shared_buffers"); err == nil {
		fmt.Printf("Postgres shared_buffers %s (scripts/bench-fleet: WITH_PG_OPTS)\n", sb)
	}

	counting := &countingFleet{Store: st}
	base, stop, err := serve(ctx, counting)
	if err != nil {
		return err
	}
	summary, sample, err := timeSummaries(ctx, base, token, asks)
	stop()
	if err != nil {
		return err
	}
	plan, err := explain(ctx, db)
	if err != nil {
		return err
	}
	// One phase's CPU moves by 10-20% from run to run on a shared machine
	// (scheduler wake-ups, the collector): rounds interleave the two modes
	// and the median of each counts.
	pg, err := benchkit.PostgresCPU(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return fmt.Errorf("the Postgres cluster's CPU: %w", err)
	}
	var offs, ons []pacedResult
	var batches []int
	var writes []time.Duration
	smallest := -1 // the smallest batch of any round but its first and last
	for range max(rounds, 1) {
		off, _, err := pacedChild(ctx, false, rate, d, pg)
		if err != nil {
			return err
		}
		on, b, err := pacedChild(ctx, true, rate, d, pg)
		if err != nil {
			return err
		}
		offs, ons = append(offs, off), append(ons, on)
		sizes, took := splitBatches(b)
		batches, writes = append(batches, sizes...), append(writes, took...)
		if m := minBatch(sizes); smallest < 0 || m < smallest {
			smallest = m
		}
	}
	off, on := median(offs), median(ons)
	slices.Sort(writes)
	fmt.Printf("\n%-46s %14s   %s\n", "measure", "value", "notes")
	row := func(name, val, note string) { fmt.Printf("%-46s %14s   %s\n", name, val, note) }
	row("GET /api/v1/fleet?channel=stable, p50", ms(summary.p50), fmt.Sprintf("over %d asks, %d records", summary.n, records))
	row("GET /api/v1/fleet?channel=stable, p99", ms(summary.p99), "goal < 100 ms")
	row("  summary", "", sample)
	row("  plan of the kept counts", "", plan)
	row("server CPU per request, recording off", us(off.cpuPerReq), fmt.Sprintf("median of %s; %d requests in %s (%.0f/s) a round, a replica process of its own", cpuText(offs), off.requests, d, float64(off.requests)/d.Seconds()))
	row("server CPU per request, recording on", us(on.cpuPerReq), fmt.Sprintf("%+.1f%% (goal <= 10%%); median of %s; Postgres's CPU not included", 100*(on.cpuPerReq.Seconds()/off.cpuPerReq.Seconds()-1), cpuText(ons)))
	costRows(row, offs, ons)
	row("rows per fleet statement", batchText(batches), fmt.Sprintf("%d in every round's full seconds (its first and last flush are partial); goal >= 500 rows a statement", smallest))
	if len(writes) > 0 {
		row("  one statement's write, p50 / max", ms(writes[len(writes)/2])+" / "+ms(writes[len(writes)-1]), "upsert and the kept counts (migration 008)")
	}
	if summary.p99 >= 100*time.Millisecond || on.cpuPerReq.Seconds() > 1.1*off.cpuPerReq.Seconds() || smallest < 500 {
		fmt.Println("GOAL MISSED")
	}
	return nil
}

// seed fills the fleet with records clusters in one channel: versions
// spread over 20, last seen over the past two hours (so about half are
// active), a tenth with nothing reported.
func seed(ctx context.Context, db string, records int) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	start := time.Now()
	_, err = conn.Exec(ctx, `insert into fleet (channel, cluster, first_seen, last_seen, reported, reported_since, served)
		select 'stable', 'cluster-' || g, now() - interval '30 days', now() - (g % 7200) * interval '1 second',
			case when g % 10 = 0 then '' else 'v1.' || (g % 20) || '.0' end,
			case when g % 10 = 0 then null else now() - interval '1 day' end,
			'v1.' || (g % 20) || '.0'
		from generate_series(1, $1) g`, records)
	if err != nil {
		return 0, fmt.Errorf("seeding the fleet: %w", err)
	}
	if _, err := conn.Exec(ctx, `vacuum analyze fleet`); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// setting is one of the Postgres server's settings.
func setting(ctx context.Context, db, name string) (string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var v string
	err = conn.QueryRow(ctx, `select current_setting($1)`, name).Scan(&v)
	return v, err
}

func explain(ctx context.Context, db string) (string, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `explain (analyze, costs off) select
		(select coalesce(sum(clusters), 0) from fleet_activity where channel = 'stable' and minute > date_trunc('minute', now() - interval '1 hour'))
		+ (select coalesce(sum(clusters), 0) from fleet_seconds where channel = 'stable' and second >= date_trunc('second', now() - interval '1 hour')
			and second < date_trunc('minute', now() - interval '1 hour') + interval '1 minute')`)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	var keep []string
	for _, l := range lines {
		if strings.Contains(l, "Scan") || strings.Contains(l, "Execution Time") {
			keep = append(keep, strings.TrimLeft(strings.TrimSpace(l), "-> "))
		}
	}
	return strings.Join(keep, "; "), nil
}

// serve runs a replica on loopback, recording into fleet (nil: off).
func serve(ctx context.Context, fs fleet.Store) (string, func(), error) {
	// The load comes from one loopback address: admission limits are
	// raised so that the bench measures recording, not refusal.
	return serveWith(ctx, fs, fleet.Options{NewClustersPerMinute: 1 << 30, MaxClusters: 1 << 30})
}

// serveWith is serve with fleet options fo (their Store is fleet).
func serveWith(ctx context.Context, fs fleet.Store, fo fleet.Options) (string, func(), error) {
	return serveWithProxies(ctx, fs, fo, nil)
}

// serveWithProxies is serveWith trusting X-Forwarded-For from proxies.
func serveWithProxies(ctx context.Context, fs fleet.Store, fo fleet.Options, proxies []netip.Prefix) (string, func(), error) {
	return serveSnapshot(ctx, benchkit.SemverSnapshot(40), fs, fo, proxies)
}

// serveSnapshot is serveWithProxies serving snap.
func serveSnapshot(ctx context.Context, snap *snapshot.Snapshot, fs fleet.Store, fo fleet.Options, proxies []netip.Prefix) (string, func(), error) {
	opts := server.Options{
		TrustedProxies: proxies,
		ExternalURL:    "https://tidemark.example.com",
		Log:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:           func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
	}
	if fs != nil {
		fo.Store = fs
		opts.Fleet = fo
		switch st := fs.(type) {
		case *countingFleet:
			opts.Store = st.Store.(*store.Store)
		case *store.Store:
			opts.Store = st
		}
	}
	base, stop, err := benchkit.Serve(ctx, opts)
	if err != nil {
		return "", nil, err
	}
	return base, func() { _ = stop() }, nil
}

type stats struct {
	n        int
	p50, p99 time.Duration
}

func timeSummaries(ctx context.Context, base, token string, n int) (stats, string, error) {
	var ds []time.Duration
	var sample string
	for i := range n + 1 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/fleet?channel=stable", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return stats{}, "", err
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		d := time.Since(start)
		if res.StatusCode != http.StatusOK {
			return stats{}, "", fmt.Errorf("fleet summary: %d %s", res.StatusCode, body)
		}
		if i == 0 { // the first warms the connection and the caches
			sample = string(body[:min(len(body), 90)]) + "..."
			continue
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return stats{n: len(ds), p50: ds[len(ds)/2], p99: ds[min(len(ds)-1, len(ds)*99/100)]}, sample, nil
}

type pacedResult struct {
	requests  int
	cpuPerReq time.Duration // the replica's
	pgPerReq  time.Duration // the Postgres cluster's, every process of it
	rps       float64       // requests answered a second, paced
	p99       time.Duration // the channel URL's
	// startCPU and startPG: the replica's and the Postgres cluster's CPU
	// from its start to the end of its start-up work (recording on only).
	startCPU, startPG time.Duration
}

// countingFleet records the size of every batch the flusher writes.
type countingFleet struct {
	fleet.Store
	mu      sync.Mutex
	batches []int
	took    []time.Duration // each batch's write
}

func (c *countingFleet) RecordFleet(ctx context.Context, s []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	start := time.Now()
	recs, err := c.Store.RecordFleet(ctx, s)
	c.mu.Lock()
	c.batches = append(c.batches, len(s))
	c.took = append(c.took, time.Since(start))
	c.mu.Unlock()
	return recs, err
}

// take returns the batch sizes, then the write times in ms (one list, so
// the child can print it as one JSON value).
func (c *countingFleet) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.batches)
	for _, d := range c.took {
		out = append(out, -int(d.Milliseconds())-1)
	}
	return out
}

func batchText(b []int) string {
	if len(b) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(b))
	return fmt.Sprintf("%d..%d (p50 %d, %d statements)", s[0], s[len(s)-1], s[len(s)/2], len(s))
}

// splitBatches separates take's sizes (>= 0) and write times (< 0).
func splitBatches(all []int) (sizes []int, writes []time.Duration) {
	for _, v := range all {
		if v >= 0 {
			sizes = append(sizes, v)
		} else {
			writes = append(writes, time.Duration(-v-1)*time.Millisecond)
		}
	}
	return sizes, writes
}

// minBatch leaves out the last, partial flush of each phase.
func minBatch(b []int) int {
	if len(b) < 3 {
		return 0
	}
	s := slices.Sorted(slices.Values(b[1 : len(b)-1]))
	return s[0]
}

// median is the result with the median CPU per request.
func median(rs []pacedResult) pacedResult {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b pacedResult) int { return cmp.Compare(a.cpuPerReq, b.cpuPerReq) })
	return rs[len(rs)/2]
}

func cpuText(rs []pacedResult) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, us(r.cpuPerReq))
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }
