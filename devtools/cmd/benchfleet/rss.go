package main

import (
	"bufio"
	"context"
	"encoding/json"
	_ "expvar" // the -serve rss replica's runtime.MemStats (/debug/vars)
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // the -serve rss replica's heap profile and forced collection
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// The fleet's memory (issue 56): a replica in a process of its own
// answers n distinct clusters, each asking once with its own cluster ID
// (36 characters, as a kube-system namespace UID is), a reported version
// and its own X-Forwarded-For address behind a trusted loopback proxy, at
// -rate a second; the shipped admission limits, max_clusters raised to fit
// n; records written to a fresh Postgres database a round. Printed per
// round: the replica's RSS sampled through the load and its peak (VmHWM),
// its RSS and heap at the end, its live heap after a forced collection
// (before the load and after it: bytes a cluster), and its CPU an answer.

// rssChild is the replica: recording on, clusters fit under max_clusters,
// and net/http/pprof on a second loopback port.
func rssChild(ctx context.Context, clusters int) error {
	st, err := store.Open(ctx, os.Getenv("DATABASE_URL"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	fo := fleet.Options{MaxClusters: max(clusters, config.DefaultMaxClusters)}
	base, stop, err := serveSnapshot(ctx, rssSnapshot(), st, fo, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
	fmt.Println(base, "http://"+ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	return nil
}

// rssSnapshot is benchkit's SemverSnapshot(40) (one source, app, of
// v1.0.0 to v1.39.0; its channel stable) and a stepwise channel on the
// same source whose clusters settle for 10 minutes.
func rssSnapshot() *snapshot.Snapshot {
	now := time.Now()
	return snapshot.New([]catalog.Channel{
		{Name: "stable", Source: "app", Stream: resolver.Released},
		{Name: "stepwise", Source: "app", Stream: resolver.Released, Stepwise: true, Settle: 10 * time.Minute},
	}, []catalog.SourceData{benchkit.SemverSource(40, now)}, nil, now)
}

// rssRound is one round's figures, in bytes and per answer.
type rssRound struct {
	idle, peak, sampledPeak, end, settled int64 // RSS: before the load, VmHWM, highest sampled, load's end, 5 s later
	heapEnd, goal                         int64 // heap in use at the end and the collector's goal then
	live0, live                           int64 // live heap after a forced collection, before and after the load
	settledGC                             int64 // RSS after that collection
	cpu                                   time.Duration
	sent                                  int
	p99                                   time.Duration
	dropped                               string
	load                                  string
}

func runRSS(ctx context.Context, clusters, rate, rounds int, channel, profiles string) error {
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		return fmt.Errorf("set DATABASE_URL or run via scripts/bench-fleet")
	}
	fmt.Printf("benchfleet -rss: %d distinct clusters a round at %d a second, each asking once with its own 36-character cluster ID, "+
		"reported version and X-Forwarded-For address (trusted proxy 127.0.0.0/8); a replica process of its own, shipped admission limits, "+
		"max_clusters %d, recording into a fresh Postgres database; channel %s; %d rounds\n",
		clusters, rate, max(clusters, config.DefaultMaxClusters), channel, rounds)
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			return err
		}
	}
	var rs []rssRound
	for i := range max(rounds, 1) {
		r, err := rssOnce(ctx, admin, i, clusters, rate, channel, profiles)
		if err != nil {
			return err
		}
		fmt.Printf("round %d: RSS before the load %d MB; peak RSS %d MB (sampled %d MB); RSS at the load's end %d MB, 5 s later %d MB, after a forced collection %d MB; "+
			"heap in use at the end %d MB (goal %d MB); live heap %d MB before, %d MB after (%.0f bytes a cluster); %.1f µs CPU an answer; p99 %s; dropped %s; load %s\n",
			i+1, r.idle>>20, r.peak>>20, r.sampledPeak>>20, r.end>>20, r.settled>>20, r.settledGC>>20, r.heapEnd>>20, r.goal>>20, r.live0>>20, r.live>>20,
			float64(r.live-r.live0)/float64(clusters), float64(r.cpu.Nanoseconds())/1e3/float64(max(r.sent, 1)), ms(r.p99), r.dropped, r.load)
		rs = append(rs, r)
	}
	mb := func(f func(rssRound) int64) string {
		var vs []float64
		for _, r := range rs {
			vs = append(vs, float64(f(r)>>20)) // as the rounds' lines: whole MiB
		}
		m, lo, hi := benchkit.Spread(vs)
		return fmt.Sprintf("%.0f [%.0f-%.0f] MB", m, lo, hi)
	}
	row := func(name, val, note string) { fmt.Printf("%-40s %22s   %s\n", name, val, note) }
	fmt.Printf("\n%-40s %22s   %s\n", "measure (median [lowest-highest])", "value", "notes")
	row("RSS before the load", mb(func(r rssRound) int64 { return r.idle }), "started, one forced collection")
	row("peak RSS (VmHWM)", mb(func(r rssRound) int64 { return r.peak }), "goal <= 150 MB (issue 56)")
	row("RSS at the load's end", mb(func(r rssRound) int64 { return r.end }), "")
	row("RSS 5 s after the load", mb(func(r rssRound) int64 { return r.settled }), "the last flush written")
	row("heap in use at the end / its goal", mb(func(r rssRound) int64 { return r.heapEnd })+" / "+mb(func(r rssRound) int64 { return r.goal }), "runtime.MemStats HeapInuse, NextGC (expvar)")
	row("live heap before the load", mb(func(r rssRound) int64 { return r.live0 }), "after a forced collection (pprof heap ?gc=1)")
	row("live heap after the load", mb(func(r rssRound) int64 { return r.live }), "after a forced collection")
	var per []float64
	for _, r := range rs {
		per = append(per, float64(r.live-r.live0)/float64(clusters))
	}
	m, lo, hi := benchkit.Spread(per)
	row("live heap a cluster", fmt.Sprintf("%.0f [%.0f-%.0f] B", m, lo, hi), "(after - before) / clusters")
	peaks := slices.Collect(func(yield func(int64) bool) {
		for _, r := range rs {
			if !yield(r.peak) {
				return
			}
		}
	})
	if slices.Max(peaks) > 150<<20 {
		fmt.Println("GOAL MISSED")
	}
	return nil
}

// rssOnce runs one round against a fresh replica and database.
func rssOnce(ctx context.Context, admin string, round, clusters, rate int, channel, profiles string) (rssRound, error) {
	var r rssRound
	url, drop, err := storetest.Create(ctx, admin, "tidemark_rss_", "")
	if err != nil {
		return r, err
	}
	defer func() { _ = drop(context.WithoutCancel(ctx)) }()
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		return r, err
	}
	err = st.Migrate(ctx)
	st.Close()
	if err != nil {
		return r, err
	}
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.Command(self, "-serve", "rss", "-rss", strconv.Itoa(clusters))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addrs := strings.Fields(line)
	if err != nil || len(addrs) != 2 {
		return r, fmt.Errorf("replica process did not start")
	}
	base, debug := addrs[0], addrs[1]
	pid := cmd.Process.Pid
	time.Sleep(time.Second) // the recorder's first learn and gauge
	if r.live0, err = liveHeap(debug, ""); err != nil {
		return r, err
	}
	r.idle = benchkit.RSS(pid)

	var sampled atomic.Int64
	stopSampling := make(chan struct{})
	var sw sync.WaitGroup
	sw.Go(func() {
		for {
			if v := benchkit.RSS(pid); v > sampled.Load() {
				sampled.Store(v)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	cpu0 := benchkit.ProcessCPU(pid)
	lat, err := rssLoad(ctx, base+"/v1-release/channels/"+channel, round, clusters, rate)
	r.cpu = benchkit.ProcessCPU(pid) - cpu0
	close(stopSampling)
	sw.Wait()
	if err != nil {
		return r, err
	}
	r.sent = len(lat)
	slices.Sort(lat)
	r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	r.end = benchkit.RSS(pid)
	ms, err := memStats(debug)
	if err != nil {
		return r, err
	}
	r.heapEnd, r.goal = ms.HeapInuse, ms.NextGC
	time.Sleep(5 * time.Second)
	r.settled = benchkit.RSS(pid)
	body := benchkit.Scrape(base)
	var drops []string
	for _, reason := range []string{"rate", "cap", "buffer", "database"} {
		if n := benchkit.MetricValue(body, `tidemark_fleet_dropped_total{reason="`+reason+`"}`); n > 0 {
			drops = append(drops, fmt.Sprintf("%s %.0f", reason, n))
		}
	}
	r.dropped = "none"
	if len(drops) > 0 {
		r.dropped = strings.Join(drops, ", ")
	}
	profile := ""
	if profiles != "" {
		profile = filepath.Join(profiles, fmt.Sprintf("heap-%d.pprof", round+1))
	}
	if r.live, err = liveHeap(debug, profile); err != nil {
		return r, err
	}
	r.settledGC = benchkit.RSS(pid)
	r.peak = benchkit.PeakRSS(pid)
	r.sampledPeak = sampled.Load()
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		r.load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return r, nil
}

// liveHeap forces a collection in the replica (its heap profile, with
// ?gc=1, written to profile unless empty) and reads the heap it left.
func liveHeap(debug, profile string) (int64, error) {
	res, err := http.Get(debug + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(f, res.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
	} else {
		_, _ = io.Copy(io.Discard, res.Body)
	}
	ms, err := memStats(debug)
	return ms.HeapAlloc, err
}

// memStats is the replica's runtime.MemStats, as expvar serves them.
type memStatsVar struct{ HeapAlloc, HeapInuse, NextGC int64 }

func memStats(debug string) (memStatsVar, error) {
	var v struct{ Memstats memStatsVar }
	res, err := http.Get(debug + "/debug/vars")
	if err != nil {
		return memStatsVar{}, err
	}
	defer res.Body.Close()
	err = json.NewDecoder(res.Body).Decode(&v)
	return v.Memstats, err
}

// rssLoad asks the channel URL u once for each of n clusters at rate a
// second and returns each answer's latency.
func rssLoad(ctx context.Context, u string, round, n, rate int) ([]time.Duration, error) {
	work := make(chan int, rate)
	go paceN(n, rate, work)
	return askEach(ctx, u, work, func(i int, h http.Header) {
		h.Set("X-SUC-Cluster-ID", fmt.Sprintf("%08x-0000-4000-8000-%012x", round, i))
		h.Set("X-SUC-Latest-Version", fmt.Sprintf("v1.%d.0", i%20))
		h.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	})
}
