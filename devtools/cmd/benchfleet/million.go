package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/store"
)

// The million-clusters run (issue 31): a fleet of a million records, and
// new clusters arriving at SUC's rate for a million (1,111 a second), each
// from its own address behind a trusted proxy, against a replica in a
// process of its own with the shipped admission limits but max_clusters
// raised to 2,000,000 (the one setting a million clusters in one channel
// needs). It prints the 302's latency, how long a record takes to reach
// Postgres, how many were dropped, the replica's CPU and peak RSS,
// Postgres bytes per record, the fleet API's latency at that size, and
// what the 30-day purge, run a third of the way in, costs recording.

func millionChild(ctx context.Context) error {
	return serveChild(ctx, fleet.Options{MaxClusters: 2_000_000}, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
}

func runMillion(ctx context.Context, records, rate int, d time.Duration) error {
	st, db, token, seedTime, err := openSeeded(ctx, records)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Printf("benchfleet -million: %d records seeded in %s; %d new clusters a second for %s, each from its own X-Forwarded-For address\n",
		records, seedTime.Round(time.Millisecond), rate, d)

	cmd, stdin, base, err := startReplica("million")
	if err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	cpu0 := benchkit.ProcessCPU(cmd.Process.Pid)

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	// A third of the way in, the 30-day purge runs against the seeded
	// records (half of them last seen over an hour ago, purged here with
	// a one-hour cutoff), so that its cost to recording is measured.
	var purge purgeRun
	var pwg sync.WaitGroup
	pwg.Go(func() {
		time.Sleep(d / 3)
		purge.start = time.Now()
		purge.rows, purge.err = st.PurgeFleet(ctx, time.Now().Add(-time.Hour))
		purge.end = time.Now()
	})
	lat, lags, sent, err := millionLoad(ctx, base, pool, rate, d)
	pwg.Wait()
	if err != nil {
		return err
	}
	if purge.err != nil {
		return fmt.Errorf("purge during the load: %w", purge.err)
	}
	cpu := benchkit.ProcessCPU(cmd.Process.Pid) - cpu0
	rss := benchkit.PeakRSS(cmd.Process.Pid)
	summary, _, err := timeSummaries(ctx, base, token, 20)
	if err != nil {
		return err
	}
	page, err := timePage(ctx, base+"/api/v1/fleet/clusters?channel=stable&limit=100", token, 20)
	if err != nil {
		return err
	}
	var drops []string
	for _, l := range strings.Split(benchkit.Scrape(base), "\n") {
		if strings.HasPrefix(l, "tidemark_fleet_dropped_total") {
			drops = append(drops, strings.TrimPrefix(l, "tidemark_fleet_dropped_total"))
		}
	}
	dropped := strings.Join(drops, ", ")
	stdin.Close() // the replica flushes what it holds, then exits
	_ = cmd.Wait()
	var stored int
	if err := conn.QueryRow(ctx, `select count(*) from fleet where cluster like 'm-%'`).Scan(&stored); err != nil {
		return err
	}
	var bytes int64
	var rows int64
	if err := conn.QueryRow(ctx, `select pg_total_relation_size('fleet'), (select count(*) from fleet)`).Scan(&bytes, &rows); err != nil {
		return err
	}
	all := func(sample) bool { return true }
	during := func(x sample) bool { return !x.at.Before(purge.start) && x.at.Before(purge.end) }
	latAll, latPurge := pcts(lat, all), pcts(lat, during)
	lagAll, lagPurge := pcts(lags, all), pcts(lags, during)
	fmt.Printf("\n%-44s %s\n", "302 to a new cluster, p50 / p99", ms(latAll.p50)+" / "+ms(latAll.p99)+fmt.Sprintf("   (%d requests, %.0f/s reached; goal p99 <= 2 ms)", sent, float64(sent)/d.Seconds()))
	fmt.Printf("%-44s %s\n", "record in Postgres after the answer, p50 / p99", ms(lagAll.p50)+" / "+ms(lagAll.p99)+fmt.Sprintf("   (%d sampled; goal p99 <= 5 s)", lagAll.n))
	fmt.Printf("%-44s %d records in %s, from %s into the load\n", "the 30-day purge (cutoff 1 h) during it", purge.rows,
		purge.end.Sub(purge.start).Round(time.Millisecond), (d / 3).Round(time.Second))
	fmt.Printf("%-44s 302 p99 %s (%d requests); record lag p99 %s (%d sampled)   (goal: the purge never blocks recording)\n",
		"  while the purge ran", ms(latPurge.p99), latPurge.n, ms(lagPurge.p99), lagPurge.n)
	fmt.Printf("%-44s %d of %d   (tidemark_fleet_dropped_total: %s)\n", "records written", stored, sent, dropped)
	fmt.Printf("%-44s %s (%.0f µs a request); peak RSS %d MB\n", "replica CPU", cpu, float64(cpu.Microseconds())/float64(max(sent, 1)), rss>>20)
	fmt.Printf("%-44s %.0f bytes a record   (%d MB for %d records, indexes included; the purged rows' space stays in the table for reuse)\n",
		"Postgres fleet table", float64(bytes)/float64(rows), bytes>>20, rows)
	fmt.Printf("%-44s %s / %s   (goal p99 <= 100 ms)\n", "GET /api/v1/fleet at this size, p50 / p99", ms(summary.p50), ms(summary.p99))
	fmt.Printf("%-44s %s / %s   (goal p99 <= 100 ms)\n", "GET /api/v1/fleet/clusters page, p50 / p99", ms(page.p50), ms(page.p99))
	return nil
}

// millionLoad sends rate requests a second for d, each from a new cluster
// (m-<i>) with its own forwarded address; every 500th is followed into
// Postgres to time its record.
func millionLoad(ctx context.Context, base string, pool *pgxpool.Pool, rate int, d time.Duration) (lat, lags []sample, sent int, err error) {
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	u := base + "/v1-release/channels/stable"
	type probe struct {
		id string
		at time.Time
	}
	probes := make(chan probe, 10000)
	work := make(chan int, rate)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed error
	for range 16 {
		wg.Go(func() {
			for i := range work {
				id := fmt.Sprintf("m-%d", i)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				req.Header.Set("X-SUC-Cluster-ID", id)
				req.Header.Set("X-SUC-Latest-Version", fmt.Sprintf("v1.%d.0", i%20))
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
				start := time.Now()
				res, err := client.Do(req)
				took := time.Since(start)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusFound {
						err = fmt.Errorf("channel URL: %d", res.StatusCode)
					}
				}
				mu.Lock()
				lat = append(lat, sample{start, took})
				if err != nil {
					failed = err
				}
				mu.Unlock()
				if i%500 == 0 {
					probes <- probe{id, start.Add(took)}
				}
			}
		})
	}
	// Each probe polls on its own (a probe waiting behind another would
	// add the wait to its lag), on a pool of connections.
	var pw sync.WaitGroup
	pw.Go(func() {
		var each sync.WaitGroup
		for p := range probes {
			each.Go(func() {
				for deadline := p.at.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					var n int
					if pool.QueryRow(ctx, `select count(*) from fleet where channel = 'stable' and cluster = $1`, p.id).Scan(&n) == nil && n == 1 {
						mu.Lock()
						lags = append(lags, sample{p.at, time.Since(p.at)})
						mu.Unlock()
						return
					}
				}
				mu.Lock()
				lags = append(lags, sample{p.at, 30 * time.Second}) // never seen: counted as the deadline
				mu.Unlock()
			})
		}
		each.Wait()
	})
	total := pace(d, rate, work)
	wg.Wait()
	close(probes)
	pw.Wait()
	return lat, lags, total, failed
}

func timePage(ctx context.Context, u, token string, n int) (stats, error) {
	var ds []time.Duration
	for i := range n + 1 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return stats{}, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return stats{}, fmt.Errorf("%s: %d", u, res.StatusCode)
		}
		if i > 0 {
			ds = append(ds, time.Since(start))
		}
	}
	slices.Sort(ds)
	return stats{n: len(ds), p50: ds[len(ds)/2], p99: ds[len(ds)-1]}, nil
}

// openStore opens and migrates DATABASE_URL's store.
func openStore(ctx context.Context) (*store.Store, string, error) {
	db := os.Getenv("DATABASE_URL")
	if db == "" {
		return nil, "", fmt.Errorf("set DATABASE_URL or run via scripts/bench-fleet")
	}
	st, err := store.Open(ctx, db, nil)
	if err != nil {
		return nil, "", err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, "", err
	}
	return st, db, nil
}

// openSeeded is openStore with records seeded (and how long that took) and
// a read token for the API.
func openSeeded(ctx context.Context, records int) (st *store.Store, db, token string, seedTime time.Duration, err error) {
	if st, db, err = openStore(ctx); err != nil {
		return nil, "", "", 0, err
	}
	if seedTime, err = seed(ctx, db, records); err == nil {
		token, err = st.CreateToken(ctx, "benchfleet", []string{"read"})
	}
	if err != nil {
		st.Close()
		return nil, "", "", 0, err
	}
	return st, db, token, seedTime, nil
}

// startReplica runs this program as a replica (-serve mode) and reads the
// address it serves on; closing stdin stops it.
func startReplica(mode string) (cmd *exec.Cmd, stdin io.WriteCloser, base string, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, "", err
	}
	cmd = exec.Command(self, "-serve", mode)
	cmd.Stderr = os.Stderr
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, "", err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, nil, "", fmt.Errorf("replica process did not start")
	}
	return cmd, stdin, strings.TrimSpace(line), nil
}

// serveChild is a -serve replica recording into DATABASE_URL's fleet with
// fo and proxies: it prints its address and runs until stdin closes.
func serveChild(ctx context.Context, fo fleet.Options, proxies []netip.Prefix) error {
	st, err := store.Open(ctx, os.Getenv("DATABASE_URL"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	base, stop, err := serveWithProxies(ctx, st, fo, proxies)
	if err != nil {
		return err
	}
	fmt.Println(base)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

// sample is one timed event of the load: when it began and how long it took.
type sample struct {
	at time.Time
	d  time.Duration
}

// purgeRun is the purge the million run makes during its load.
type purgeRun struct {
	start, end time.Time
	rows       int64
	err        error
}

// pcts are the p50 and p99 of the samples keep selects.
func pcts(xs []sample, keep func(sample) bool) stats {
	var ds []time.Duration
	for _, x := range xs {
		if keep(x) {
			ds = append(ds, x.d)
		}
	}
	if len(ds) == 0 {
		return stats{}
	}
	slices.Sort(ds)
	return stats{n: len(ds), p50: ds[int(float64(len(ds)-1)*.5)], p99: ds[int(float64(len(ds)-1)*.99)]}
}
