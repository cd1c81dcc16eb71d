// Command benchscale measures Tidemark at scale against its floor: a
// distribution registry with -repos repositories of -tags tags each (seeded
// once and cached under -cache), indexed by one `tidemark serve` replica
// while a second serves from the same Postgres. It prints the first index
// next to crane ls of every repository plus one COPY of every row, the peak
// RSS of both replicas, the snapshot reload after one source changes, the
// channel URL's p99 with and without reloads going on, and how long a pin
// made through one replica takes to be served by the other. Run it through
// scripts/bench-scale (make bench-scale), which builds tidemark and starts a
// throwaway Postgres.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

type options struct {
	repos, tags   int
	cache         string
	tidemark      string
	craneConc     int
	changes, pins int
	load          time.Duration
	workers       int
	digestWait    time.Duration
	headFloor     bool
	headConc      int
	profile       string
}

func main() {
	var o options
	flag.IntVar(&o.repos, "repos", 1000, "repositories (one source and one channel each)")
	flag.IntVar(&o.tags, "tags", 1000, "tags per repository")
	flag.StringVar(&o.cache, "cache", "tmp/benchscale", "where the seeded registry storage is kept between runs")
	flag.StringVar(&o.tidemark, "tidemark", "bin/tidemark", "tidemark binary")
	flag.IntVar(&o.craneConc, "crane-concurrency", 8, "repositories crane lists at once (the floor)")
	flag.IntVar(&o.changes, "changes", 200, "single-source changes to time (a p99 of fewer is their slowest one)")
	flag.IntVar(&o.pins, "pins", 50, "pins to time")
	flag.DurationVar(&o.load, "load", 5*time.Second, "channel URL load per phase")
	flag.IntVar(&o.workers, "workers", 8, "channel URL clients in flight")
	flag.DurationVar(&o.digestWait, "digest-wait", 0, "wait up to this long after the first answer for the background work (digests, reloads) to settle before measuring (0: stop indexing after the first index)")
	flag.BoolVar(&o.headFloor, "head-floor", false, "at the end, time a HEAD of every tag against the registry alone (the digest phase's floor)")
	flag.IntVar(&o.headConc, "head-concurrency", 128, "HEADs in flight for -head-floor (the indexer's: 16 sources at once, 8 each)")
	flag.StringVar(&o.profile, "profile", "", "write each replica's CPU profile (DIR/A.pprof, DIR/B.pprof) and heap profile when it stops (DIR/A.heap.pprof, DIR/B.heap.pprof)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		return fmt.Errorf("set DATABASE_URL or run via scripts/bench-scale")
	}
	total := o.repos * o.tags
	reg, seedTime, err := seeded(ctx, o.cache, o.repos, o.tags)
	if err != nil {
		return err
	}
	defer reg.Stop()
	if seedTime > 0 {
		fmt.Printf("seeded %d repositories x %d tags in %s (cached in %s)\n", o.repos, o.tags, seedTime.Round(time.Millisecond), o.cache)
	} else {
		fmt.Printf("registry storage of %d x %d from the cache in %s\n", o.repos, o.tags, o.cache)
	}

	craneTime, listed, err := craneAll(ctx, reg.Host, o.repos, o.craneConc)
	if err != nil {
		return err
	}
	if listed != total {
		return fmt.Errorf("crane listed %d tags, want %d (remove %s to seed again)", listed, total, o.cache)
	}
	db, drop, err := storetest.Create(ctx, admin, "tidemark_scale_", "")
	if err != nil {
		return err
	}
	defer func() { _ = drop(context.WithoutCancel(ctx)) }()
	copyTime, err := copyAll(ctx, db, o.repos, o.tags)
	if err != nil {
		return err
	}
	floor := craneTime + copyTime

	dir, err := os.MkdirTemp("", "benchscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := writeConfig(dir, reg.Host, o.repos)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, db, nil)
	if err != nil {
		return err
	}
	defer st.Close()

	cpuBefore := sampleCPU()
	start := time.Now()
	a, err := startReplica(ctx, o.tidemark, "A", cfg, db, true, profilePath(o.profile, "A"))
	if err != nil {
		return err
	}
	defer func() { a.stop() }()
	b, err := startReplica(ctx, o.tidemark, "B", cfg, db, false, profilePath(o.profile, "B"))
	if err != nil {
		return err
	}
	defer b.stop()
	firstIndex, err := waitIndexed(ctx, db, o.repos, start, 30*time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("first index of all sources: %s (floor %s)\n", ms(firstIndex), ms(floor))
	indexCPU := sampleCPU().since(cpuBefore, map[int]string{a.cmd.Process.Pid: "A", b.cmd.Process.Pid: "B", reg.PID(): "registry"})
	peakA := a.peakRSS()
	var startTook time.Duration // A's start over every tag, when it restarts
	var peakStart int64
	names := map[int]string{a.cmd.Process.Pid: "A", b.cmd.Process.Pid: "B", reg.PID(): "registry"}
	var settle settled
	var settleCPU map[string]time.Duration
	var reloadsA, reloadsB int
	if o.digestWait > 0 {
		cpuSettle, ra, rb := sampleCPU(), a.reloadCount(), b.reloadCount()
		settle, err = waitSettled(ctx, a, b, o.repos, start.Add(firstIndex), o.digestWait)
		if err != nil {
			return err
		}
		settleCPU = sampleCPU().since(cpuSettle, names)
		reloadsA, reloadsB = a.reloadCount()-ra, b.reloadCount()-rb
		v, note := settle.line()
		fmt.Printf("background work: %s %s\n", v, note)
		peakA = a.peakRSS()
	} else {
		// The digest phase is bound by the registry (a HEAD per tag), not by
		// Tidemark, and at a million tags outlasts the bench: A stops
		// indexing and serves on, started again with --no-index.
		a.stop()
		restart := time.Now()
		if a, err = startReplica(ctx, o.tidemark, "A", cfg, db, false, ""); err != nil {
			return err
		}
		startTook, peakStart = time.Since(restart), a.peakRSS()
		fmt.Printf("replica A restarted with --no-index (digest phase left out; -digest-wait to wait for it)\n")
	}
	// A million rows just written wake autovacuum, which would then run
	// through the measures below on the same two cores (a reload's read
	// of 1,001 rows took 23 ms instead of 3 while it did); run it first.
	vacuumStart := time.Now()
	if err := vacuumAnalyze(ctx, db); err != nil {
		return err
	}
	fmt.Printf("vacuum analyze after the first index: %s\n", ms(time.Since(vacuumStart)))
	fmt.Println()
	// What B holds once every tag is in its snapshot, before the loads
	// below: issue 31's "RSS after the first index".
	rssB := b.rss()

	m, err := measure(ctx, o, st, a, b)
	if err != nil {
		return err
	}
	// The floor again, once the replicas have stopped: measured once, it
	// moved by 5.0-8.0 s between runs on this machine, which decided the
	// ratio more than the first index did (10.7-11.3 s in the same runs).
	// The ratio is to the mean of the two. B's peak is read first: a
	// stopped process has none.
	peakB := b.peakRSS()
	a.stop()
	b.stop()
	craneAgain, _, err := craneAll(ctx, reg.Host, o.repos, o.craneConc)
	if err != nil {
		return err
	}
	copyAgain, err := copyAll(ctx, db, o.repos, o.tags)
	if err != nil {
		return err
	}
	floorAgain := craneAgain + copyAgain
	var heads headFloor
	if o.headFloor {
		if heads, err = headAll(ctx, reg, o.repos, o.tags, o.headConc); err != nil {
			return err
		}
	}
	floorMean := (floor + floorAgain) / 2

	fmt.Printf("%d sources x %d tags = %d tags; replicas A (indexes) and B (--no-index) on one Postgres\n\n", o.repos, o.tags, total)
	fmt.Printf("%-44s %14s   %s\n", "measure", "value", "notes")
	row := func(name, val, note string) { fmt.Printf("%-44s %14s   %s\n", name, val, note) }
	row("crane ls of every repository", ms(craneTime), fmt.Sprintf("%d tags, %d repositories at once (in process)", listed, o.craneConc))
	row("COPY of every row", ms(copyTime), "into a scratch table")
	row("the same floor, measured again at the end", ms(floorAgain), fmt.Sprintf("crane ls %s + COPY %s, the replicas stopped", ms(craneAgain), ms(copyAgain)))
	row("first index of all sources", ms(firstIndex), fmt.Sprintf("%.2fx the floor's mean (crane ls + COPY; %.2fx and %.2fx each); goal <= 1.5x (issue 31)",
		ratio(firstIndex, floorMean), ratio(firstIndex, floor), ratio(firstIndex, floorAgain)))
	row("CPU during the first index", "", cpuLine(indexCPU, firstIndex, runtime.NumCPU()))
	if o.digestWait > 0 {
		v, note := settle.line()
		row("background work settled", v, note)
		row("snapshot reloads meanwhile", fmt.Sprintf("%d / %d", reloadsA, reloadsB), "replica A / B")
		row("heap in use when settled", mb(settle.heap[0])+" / "+mb(settle.heap[1]),
			fmt.Sprintf("A / B; the collector's goal %s / %s (about twice the live heap)", mb(settle.goal[0]), mb(settle.goal[1])))
		row("CPU meanwhile", "", cpuLine(settleCPU, settle.after, runtime.NumCPU()))
	}
	if heads.heads > 0 {
		row("HEAD of every tag, registry alone", ms(heads.took), fmt.Sprintf("%d HEADs, %d in flight: %.0f/s; registry CPU %.1f s, %.0f µs a HEAD",
			heads.heads, o.headConc, float64(heads.heads)/heads.took.Seconds(), heads.registry.Seconds(), float64(heads.registry.Microseconds())/float64(heads.heads)))
	}
	row("peak RSS, replica A (serves and indexes)", mb(peakA), "VmHWM while it indexed; goal <= 1 GB, 120 MB at 100 x 2,000")
	row("peak RSS, replica B (serves)", mb(peakB), "VmHWM; goal <= 1 GB, 120 MB at 100 x 2,000")
	row("RSS of B after the first index", mb(rssB), fmt.Sprintf("VmRSS, GOMEMLIMIT=%s; goal <= 300 MB", orNone(os.Getenv("GOMEMLIMIT"))))
	if startTook > 0 {
		row("replica A's start over every tag", ms(startTook), "a full load, until /healthz answers")
		row("peak RSS of that start", mb(peakStart), "VmHWM of the restarted A")
	}
	row("reload after one source changes, p50", ms(m.reload.p50), fmt.Sprintf("replica B's own timing over %d reloads", m.reload.n))
	row("reload after one source changes, p99", ms(m.reload.p99), "goal <= 20 ms")
	row("its database read, p50", ms(m.read.p50), "read= of the same log lines; the rest builds the snapshot")
	row("its database read, p99", ms(m.read.p99), "")
	row("one source change served by B, p50", ms(m.change.p50), fmt.Sprintf("from recording the scan (%d rows), over %d changes", o.tags+1, m.change.n))
	row("one source change served by B, p99", ms(m.change.p99), "")
	row("channel URL p99, no reloads", ms(m.quiet.p99), fmt.Sprintf("%.0f req/s, %d clients, %s", m.quiet.rps, o.workers, o.load))
	row("channel URL p99, during reloads", ms(m.busy.p99), fmt.Sprintf("%.2fx; goal <= 2x; %.0f req/s, %d changes meanwhile", ratio(m.busy.p99, m.quiet.p99), m.busy.rps, m.busyChanges))
	row("pin on A served by B, p50", ms(m.pin.p50), fmt.Sprintf("PUT to A until B redirects to it, over %d pins", m.pin.n))
	row("pin on A served by B, p99", ms(m.pin.p99), "goal <= 50 ms")
	// An RSS that could not be read (-1) misses its goal rather than
	// passing it unseen.
	missed := ratio(firstIndex, floorMean) > 1.5 || peakA > 1<<30 || peakB > 1<<30 || rssB > 300<<20 ||
		peakA < 0 || peakB < 0 || rssB < 0 ||
		m.reload.p99 > 20*time.Millisecond || ratio(m.busy.p99, m.quiet.p99) > 2 || m.pin.p99 > 50*time.Millisecond
	if o.digestWait > 0 {
		// Issue 56's goals, said plainly.
		if settle.ok {
			fmt.Printf("\nbackground work settled %.1f s after the first answer (goal 60 s)\n", settle.after.Seconds())
		} else {
			fmt.Printf("\nbackground work not settled %.0f s after the first answer (goal 60 s)\n", settle.after.Seconds())
		}
		fmt.Printf("peak RSS A / B: %s / %s (goal 120 MB)\n", mb(peakA), mb(peakB))
		missed = missed || !settle.ok || settle.after > 60*time.Second || peakA > 120<<20 || peakB > 120<<20
	}
	if missed {
		fmt.Println("GOAL MISSED")
	}
	return nil
}

// profilePath is where replica name writes its CPU profile (none without dir).
func profilePath(dir, name string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, name+".pprof")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// mb is b bytes in MiB (labelled MB, as the docs' tables are), or
// "unknown" for the -1 of a figure that could not be read.
func mb(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.0f MB", float64(b)/(1<<20))
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
