// Command benchindex measures the indexer against the distribution registry:
// it pushes N tags, then prints side by side `crane ls`, a COPY of N rows,
// the first index to servable, digest completion, a no-change rescan and the
// peak RSS of the indexing. Run it through scripts/bench-index (which starts
// a throwaway Postgres and finds crane).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

func main() {
	n := flag.Int("tags", 10000, "tags to push")
	crane := flag.String("crane", "crane", "crane binary")
	conc := flag.Int("concurrency", 8, "digest requests in flight")
	verbose := flag.Bool("v", false, "indexer logs on stderr")
	rtt := flag.Duration("rtt", 0, "hold every registry response this long (a far registry; crane ls goes through the same proxy)")
	rate := flag.Float64("rate", 0, "the registry's rate limit in the indexer's configuration, requests/s (0: none)")
	flag.Parse()
	far = farOptions{rtt: *rtt, rate: *rate}
	if err := run(context.Background(), *n, *crane, *conc, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "benchindex:", err)
		os.Exit(1)
	}
}

// farOptions put a latency-injecting proxy between the registry and both
// crane and the indexer (make bench-far).
type farOptions struct {
	rtt  time.Duration
	rate float64
}

var far farOptions

// manifests counts manifest requests that reach the registry.
type manifests struct{ n atomic.Int64 }

func (c *manifests) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/manifests/") {
		c.n.Add(1)
	}
	return remote.DefaultTransport.RoundTrip(r)
}

func run(ctx context.Context, n int, crane string, conc int, verbose bool) error {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return fmt.Errorf("set DATABASE_URL or run via scripts/bench-index")
	}
	reg, err := distreg.Start(ctx, "")
	if err != nil {
		return err
	}
	defer reg.Stop()
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	t0 := time.Now()
	if _, err := distreg.Push(ctx, reg.Host, "bench/app", tags, 16); err != nil {
		return err
	}
	fmt.Printf("pushed %d tags to %s in %s (distribution %s)\n", n, reg.Host, since(t0), distreg.Binary)
	host := reg.Host
	var proxy *farProxy
	if far.rtt > 0 {
		if proxy, err = startFarProxy(reg.Host, far.rtt); err != nil {
			return err
		}
		defer proxy.Close()
		host = proxy.Host
		fmt.Printf("crane and the indexer reach it through a proxy holding every response %s; rate limit %.0f/s\n", far.rtt, far.rate)
	}
	fmt.Println()

	craneLs, listed, err := timeCrane(crane, host+"/bench/app")
	if err != nil {
		return err
	}
	if listed != n {
		return fmt.Errorf("crane ls listed %d tags, want %d", listed, n)
	}

	db, cleanup, err := storetest.Create(ctx, dbURL, "tidemark_bench_", "")
	if err != nil {
		return err
	}
	defer func() { _ = cleanup(context.WithoutCancel(ctx)) }()
	copyTime, err := timeCopy(ctx, db, n)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}

	parser, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		return err
	}
	src := indexer.Source{
		Source:      catalog.Source{Name: "app", Image: host + "/bench/app", Parser: parser},
		Insecure:    true,
		Concurrency: conc,
	}
	if err := st.SyncSources(ctx, []catalog.Source{src.Source}); err != nil {
		return err
	}
	var servable atomic.Int64 // unix nanos of the first change (the listing recorded)
	counter := &manifests{}
	log := slog.New(slog.DiscardHandler)
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ix, err := indexer.New(indexer.Options{
		Sources: []indexer.Source{src}, Store: st, Log: log, Transport: counter,
		RateLimits: rateLimits(host),
		OnChange:   func(string) { servable.CompareAndSwap(0, time.Now().UnixNano()) },
	})
	if err != nil {
		return err
	}

	resetPeakRSS()
	var peakBefore, totalBefore int
	if proxy != nil {
		peakBefore, totalBefore = proxy.peak()
	}
	start := time.Now()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		return err
	}
	digests := time.Since(start)
	toServable := time.Unix(0, servable.Load()).Sub(start)
	firstManifests := counter.n.Load()
	var peakRate, firstRequests int
	if proxy != nil {
		peakRate, firstRequests = proxy.peak()
		peakRate, firstRequests = max(peakRate, peakBefore), firstRequests-totalBefore
	}
	if p := ix.Status("app"); p.Digests != n {
		return fmt.Errorf("first scan resolved %d digests, want %d", p.Digests, n)
	}

	// Best of 3, like crane ls: on a shared machine one run measures the
	// neighbours as much as the rescan.
	counter.n.Store(0)
	var rescan time.Duration
	var rescanReqs int
	for range 3 {
		start = time.Now()
		if err := ix.ScanNow(ctx, "app"); err != nil {
			return err
		}
		if d := time.Since(start); rescan == 0 || d < rescan {
			rescan, rescanReqs = d, ix.Status("app").Requests
		}
	}
	rescanManifests := counter.n.Load()
	peak := peakRSS()

	base := craneLs + copyTime
	fmt.Printf("%-36s %12s   %s\n", "measure", "time", "notes")
	fmt.Printf("%-36s %12s   %d tags (best of 3)\n", "crane ls", ms(craneLs), listed)
	fmt.Printf("%-36s %12s   %d rows into a temp table\n", "COPY of the rows", ms(copyTime), n)
	if far.rtt > 0 {
		fmt.Printf("%-36s %12s   %.2fx crane ls through the same proxy; goal <= 1.2x\n", "first index to servable", ms(toServable), ratio(toServable, craneLs))
		fmt.Printf("%-36s %12s   %d requests, busiest second %d requests (rate limit %.0f/s)\n", "first scan, registry requests", "", firstRequests, peakRate, far.rate)
	} else {
		fmt.Printf("%-36s %12s   %.2fx (crane ls + COPY); goal <= 4x\n", "first index to servable", ms(toServable), ratio(toServable, base))
	}
	fmt.Printf("%-36s %12s   %d manifest requests, concurrency %d\n", "first index, digests complete", ms(digests), firstManifests, conc)
	fmt.Printf("%-36s %12s   %.2fx crane ls; goal <= 1.5x; %d requests, %d manifest in 3 runs (goal 0)\n", "no-change rescan (best of 3)", ms(rescan), ratio(rescan, craneLs), rescanReqs, rescanManifests)
	fmt.Printf("%-36s %10.1f MB   goal < 150 MB (VmHWM while indexing, includes the Go runtime)\n", "peak RSS", float64(peak)/(1<<20))
	return nil
}

// rateLimits is the indexer's per-registry rate limit, when the bench sets one.
func rateLimits(host string) map[string]float64 {
	if far.rate <= 0 {
		return nil
	}
	return map[string]float64{host: far.rate}
}

// timeCrane runs `crane ls` three times and keeps the fastest, as a fair
// floor for "just list the tags".
func timeCrane(crane, repo string) (time.Duration, int, error) {
	best, count := time.Duration(0), 0
	for range 3 {
		start := time.Now()
		out, err := exec.Command(crane, "ls", "--insecure", repo).Output()
		d := time.Since(start)
		if err != nil {
			return 0, 0, fmt.Errorf("crane ls %s: %w", repo, err)
		}
		count = strings.Count(string(out), "\n")
		if best == 0 || d < best {
			best = d
		}
	}
	return best, count, nil
}

// timeCopy measures COPYing n tag-shaped rows into a temp table: the least
// any store must do to hold the listing.
func timeCopy(ctx context.Context, url string, n int) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("1.%d.%d", i/100, i%100), true, "", 1, i / 100, i % 100, "", 0, "", 0, "", fmt.Sprintf("1.%d.%d", i/100, i%100), "released"}
	}
	start := time.Now()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `create temp table copy_bench (tag text primary key, valid boolean, error text, major int, minor int, patch int,
		pre text, pre_number int, prerelease text, build int, build_meta text, canonical text, stream text) on commit drop`)
	if err != nil {
		return 0, err
	}
	cols := []string{"tag", "valid", "error", "major", "minor", "patch", "pre", "pre_number", "prerelease", "build", "build_meta", "canonical", "stream"}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"copy_bench"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb << 10
		}
	}
	return -1
}

func since(t time.Time) string         { return time.Since(t).Round(time.Millisecond).String() }
func ms(d time.Duration) string        { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
