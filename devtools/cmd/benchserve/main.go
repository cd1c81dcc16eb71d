// Command benchserve measures a Tidemark channel URL against the floor: a
// bare net/http handler answering a fixed 302. Both are served in this
// process on loopback and loaded with wrk one after the other, in the same
// run, and printed side by side. The Tidemark server answers from an
// in-memory snapshot of a realistic tag set, loaded once before the run
// (the load count is printed). The fleet's records are counted and thrown
// away, or with -database written to Postgres and timed.
//
//	go run ./devtools/cmd/benchserve -duration 10s -connections 64
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "wrk duration per target")
	conns := flag.Int("connections", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	wrk := flag.String("wrk", "wrk", "wrk binary")
	wrkCPU := flag.String("wrk-cpu", "", "run wrk on these CPUs (taskset -c), apart from the servers")
	flag.IntVar(&rounds, "rounds", 3, "rounds of every target, interleaved; each target keeps its best")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the channel URL with -clusters clusters to this file")
	flag.StringVar(&stepProfile, "stepwise-cpuprofile", "", "write a CPU profile of the stepwise channel with -clusters clusters to this file")
	flag.StringVar(&floorProfile, "floor-cpuprofile", "", "write a CPU profile of the floor with -clusters clusters' headers to this file")
	flag.StringVar(&only, "targets", "", "comma-separated targets to run, of "+strings.Join(targetKeys, ", ")+
		" (default: all; channelserver with -channelserver): fewer targets, more rounds in the same time")
	flag.BoolVar(&verbose, "v", false, "print every round's result as it ends")
	flag.StringVar(&channelserver, "channelserver", os.Getenv("CHANNELSERVER"), "rancher/channelserver binary to load side by side (env CHANNELSERVER)")
	flag.IntVar(&clusters, "clusters", 10_000, "distinct cluster IDs the cluster targets rotate")
	flag.BoolVar(&lifecycles, "lifecycle", false, "give the source a lifecycle: lines up to 1.30 expired, 1.31 deprecated, so most clusters "+
		"report an ending version and get the Warning (the classification is per line, computed once per snapshot)")
	flag.BoolVar(&forwarded, "forwarded", false, "each cluster asks from its own X-Forwarded-For address behind a trusted loopback proxy, "+
		"with the shipped admission limits (max_clusters raised to fit): what recording costs at full speed (issue 31)")
	flag.BoolVar(&database, "database", false, "write the fleet's records to a Postgres database made beside DATABASE_URL's (scripts/with-pg) "+
		"and time each record until written: every record within 5 s is issue 31's goal")
	flag.Parse()
	wrkCPUs = *wrkCPU
	if err := run(*wrk, *duration, *conns, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "benchserve:", err)
		os.Exit(1)
	}
}

const location = "https://github.com/k3s-io/k3s/releases/tag/v1.33.6+k3s2"

func run(wrk string, d time.Duration, conns, threads int) error {
	snap, tags, err := buildSnapshot()
	if err != nil {
		return err
	}
	var loads atomic.Int64
	discard := &discardFleet{}
	var fleetStore fleet.Store = discard
	var timed *timedFleet
	if database {
		admin := os.Getenv("DATABASE_URL")
		if admin == "" {
			return errors.New("-database: set DATABASE_URL or run under scripts/with-pg")
		}
		var closeDB func()
		if timed, closeDB, err = openFleetDB(context.Background(), admin); err != nil {
			return fmt.Errorf("-database: %w", err)
		}
		defer closeDB()
		fleetStore = timed
	}
	// Fleet recording on: every sighting goes through the buffer and the
	// flusher; the store takes batches at once (or Postgres, -database). Without
	// -forwarded every request comes from loopback: admission limits are
	// raised so that they measure recording, not refusal. With it, each
	// cluster has its own address and the shipped limits apply.
	fo := fleet.Options{Store: fleetStore, NewClustersPerMinute: 1 << 30, MaxClusters: 1 << 30}
	var trusted []netip.Prefix
	if forwarded {
		fo = fleet.Options{Store: fleetStore, MaxClusters: max(clusters, config.DefaultMaxClusters)}
		trusted = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	}
	s, err := server.New(server.Options{
		Fleet:          fo,
		TrustedProxies: trusted,
		ExternalURL:    "https://tidemark.example.com",
		// A real JSON access log line per request, thrown away: its cost is
		// part of what is measured.
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load: func(context.Context) (*snapshot.Snapshot, error) {
			loads.Add(1)
			return snap, nil
		},
	})
	if err != nil {
		return err
	}
	if err := s.Reload(context.Background()); err != nil {
		return err
	}
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusFound)
	})
	floorURL, stopFloor, err := listen(floor)
	if err != nil {
		return err
	}
	defer stopFloor()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ctx, stopTM := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- service.Run(ctx, service.Options{HTTP: s, Listener: ln, Snapshots: s.Snapshots(), Fleet: s.Fleet()})
	}()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { stopTM(); <-ran }) } // the recorder writes what is left
	defer stop()
	tmURL := "http://" + ln.Addr().String() + "/v1-release/channels/v1.33"
	if err := check(tmURL); err != nil {
		return err
	}
	stepURL := "http://" + ln.Addr().String() + "/v1-release/channels/stepwise"
	script, err := clusterScript(clusterHeaders)
	if err != nil {
		return err
	}
	defer os.Remove(script)
	ignoredScript, err := clusterScript(ignoredHeaders)
	if err != nil {
		return err
	}
	defer os.Remove(ignoredScript)
	loadsBefore := loads.Load()

	fmt.Printf("wrk -t%d -c%d -d%s --latency, loopback, best of %d interleaved rounds (every other one in reverse order); snapshot: %d tags, 1 source, %d channels; access log: default mode\n",
		threads, conns, d, rounds, tags, len(snap.Channels()))
	if forwarded {
		fmt.Printf("%d clusters, each from its own X-Forwarded-For address (trusted proxy 127.0.0.0/8), shipped admission limits, max_clusters %d\n",
			clusters, fo.MaxClusters)
	}
	k := clusterLabel()
	targets := []target{
		{key: "floor", name: "floor (bare net/http 302)", url: floorURL + "/"},
		{key: "plain", name: "tidemark v1.33", url: tmURL},
		// The same wrk script on both sides: generating 10k clusters'
		// headers costs wrk too, and the floor must pay it as well.
		{key: "floor-clusters", name: "floor, " + k + " clusters' headers", url: floorURL + "/", script: script, profile: floorProfile, offset: new(int64)},
		// Issue 31's baseline for what recording costs: Tidemark itself,
		// the same client work, header names it does not read.
		{key: "ignored", name: "tidemark v1.33, " + k + " headers ignored", url: tmURL, script: ignoredScript, offset: new(int64)},
		{key: "clusters", name: "tidemark v1.33, " + k + " clusters (fleet on)", url: tmURL, script: script, profile: cpuProfile, offset: new(int64)},
		{key: "stepwise", name: "stepwise, " + k + " clusters (fleet on)", url: stepURL, script: script, profile: stepProfile, offset: new(int64)},
	}
	if channelserver != "" {
		targets = append(targets, target{key: "channelserver", name: "rancher/channelserver v1.33"})
	}
	if targets, err = selectTargets(targets, only); err != nil {
		return err
	}
	at := func(key string) int { return slices.IndexFunc(targets, func(t target) bool { return t.key == key }) }
	has := func(key string) bool { return at(key) >= 0 }
	if database {
		// Its records would arrive at in-process speed, far above any
		// fleet's, and be the backlog whose lag is measured.
		fmt.Println("warm-up: none with -database (the first round's clusters are new to the server)")
	} else if has("clusters") || has("stepwise") {
		warm := time.Now()
		if err := warmUp(s.Handler(), "/v1-release/channels/v1.33", "/v1-release/channels/stepwise"); err != nil {
			return err
		}
		fmt.Printf("warm-up: each of the %d clusters asked both channels once, in process (%s)\n", clusters, time.Since(warm).Round(time.Millisecond))
	}
	if has("channelserver") {
		csURL, csPID, stopCS, err := startChannelserver(channelserver, snap)
		if err != nil {
			return err
		}
		defer stopCS()
		i := at("channelserver")
		targets[i].url, targets[i].pid = csURL+"/v1-release/channels/v1.33", csPID
	}
	// Rounds interleave the targets and each keeps its best round: on a
	// shared machine one run measures the neighbours as much as the server.
	// Every other round runs them in reverse: a target that always follows
	// another paid for what that one left behind (the fleet recorder's
	// backlog, a collection), and which one did depended on its place.
	results := make([]result, len(targets))
	perRound := make([][]result, rounds)
	for round := range rounds {
		perRound[round] = make([]result, len(targets))
		for k := range targets {
			i := k
			if round%2 == 1 {
				i = len(targets) - 1 - k
			}
			t := targets[i]
			// Profiles come from the last round: in the first, every
			// cluster is new to the server (admitted, its clock started),
			// which a fleet polling at its steady rate never is.
			if round != rounds-1 {
				t.profile = ""
			}
			r, err := t.run(wrk, d, conns, threads)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			r.name = t.name
			perRound[round][i] = r
			if verbose {
				fmt.Printf("round %d: %-42s %8.0f requests/s, p99 %s, CPU/req %s\n", round+1, t.name, r.rps, r.p99, r.cpu.Round(100*time.Nanosecond))
			}
			results[i] = results[i].best(r, round == 0)
		}
	}
	fmt.Printf("\n%-42s %12s %10s %10s %8s %9s\n", "target", "requests/s", "p50", "p99", "errors", "CPU/req")
	for _, r := range results {
		fmt.Printf("%-42s %12.0f %10s %10s %8d %9s\n", r.name, r.rps, r.p50, r.p99, r.errors, r.cpu.Round(100*time.Nanosecond))
	}
	if rounds > 1 {
		printSpreads(targets, perRound)
	}
	get := func(key string) result { return results[at(key)] }
	missed, missed31 := false, false
	if has("clusters") && has("floor-clusters") {
		fleetR, floorC := get("clusters"), get("floor-clusters")
		ratio := fleetR.rps / floorC.rps
		p99 := float64(fleetR.p99) / float64(floorC.p99)
		fmt.Printf("\nv1.33 with %s clusters/floor with the same headers: %.2fx requests/s (goal >= 0.85x), p99 %.2fx (goal <= 1.3x)\n", k, ratio, p99)
		fmt.Printf("  in CPU a request: floor/v1.33 = %.2fx\n", float64(floorC.cpu)/float64(fleetR.cpu))
		missed = missed || ratio < 0.85 || p99 > 1.3
	}
	if has("clusters") && has("ignored") {
		// Issue 31's "what recording costs": >= 0.9x, p99 <= 1.2x.
		// The p99 is judged here, the requests/s by the rounds' median.
		fleetR, ign := get("clusters"), get("ignored")
		p99 := float64(fleetR.p99) / float64(ign.p99)
		fmt.Printf("v1.33 with %s clusters/the same headers ignored: %.2fx requests/s (issue 31: >= 0.9x), p99 %.2fx (<= 1.2x)\n",
			k, fleetR.rps/ign.rps, p99)
		missed31 = missed31 || p99 > 1.2
	}
	if has("plain") && has("floor") {
		plain, floorR := get("plain"), get("floor")
		fmt.Printf("v1.33 without clusters/floor: %.2fx requests/s, p99 %.2fx\n", plain.rps/floorR.rps, float64(plain.p99)/float64(floorR.p99))
	}
	if has("stepwise") && has("plain") {
		stepR := get("stepwise")
		step := stepR.rps / get("plain").rps
		fmt.Printf("stepwise/plain: %.2fx (goal >= 0.80x); p99 %s; snapshot loads during the run: %d (the snapshot is in memory)\n",
			step, stepR.p99, loads.Load()-loadsBefore)
		missed = missed || step < 0.8
	}
	if has("stepwise") && has("clusters") {
		// The same clusters and headers on both: what the stepwise decision
		// and its settle clock cost (issue 31: >= 0.95x plain).
		stepR, fleetR := get("stepwise"), get("clusters")
		fmt.Printf("stepwise/v1.33 with the same %s clusters: %.2fx requests/s, p99 %.2fx; in CPU a request v1.33/stepwise = %.2fx\n",
			k, stepR.rps/fleetR.rps, float64(stepR.p99)/float64(fleetR.p99), float64(fleetR.cpu)/float64(stepR.cpu))
	}
	if has("channelserver") && has("plain") {
		cs, plain := get("channelserver"), get("plain")
		fmt.Printf("v1.33/rancher/channelserver: %.2fx requests/s (goal >= 1.6x), p99 %.2fx; in CPU a request channelserver/v1.33 = %.2fx\n",
			plain.rps/cs.rps, float64(plain.p99)/float64(cs.p99), float64(cs.cpu)/float64(plain.cpu))
	}
	if has("channelserver") && has("floor") {
		// What net/http itself allows: a Tidemark at the floor's speed is
		// this many times channelserver.
		fmt.Printf("floor/rancher/channelserver: %.2fx requests/s (the bare net/http 302 against channelserver)\n", get("floor").rps/get("channelserver").rps)
	}
	if rounds > 1 {
		// Each round's own ratio, its two targets measured seconds apart:
		// the machine's drift between rounds cancels in it, where the
		// best of each target may come from different rounds.
		// goal is issue 31's for the median in requests/s, 0 for none.
		type pair struct {
			name, num, den string
			goal           float64
		}
		var pairs []pair
		for _, p := range []pair{
			{"v1.33 with " + k + " clusters/the same headers ignored", "clusters", "ignored", 0.9},
			{"v1.33 with " + k + " clusters/floor with the same headers", "clusters", "floor-clusters", 0},
			{"v1.33/floor", "plain", "floor", 0.95},
			{"stepwise/v1.33 with the same " + k + " clusters", "stepwise", "clusters", 0.95},
			{"v1.33/rancher/channelserver", "plain", "channelserver", 1.6},
			{"floor/rancher/channelserver", "floor", "channelserver", 0},
		} {
			if has(p.num) && has(p.den) {
				pairs = append(pairs, p)
			}
		}
		within := func(f func(num, den result) float64, judge bool) {
			for _, p := range pairs {
				rs := make([]float64, rounds)
				for i, round := range perRound {
					rs[i] = f(round[at(p.num)], round[at(p.den)])
				}
				slices.Sort(rs)
				verdict := ""
				if judge && p.goal > 0 {
					verdict = fmt.Sprintf("; issue 31: >= %.2fx, met", p.goal)
					if median(rs) < p.goal {
						verdict, missed31 = fmt.Sprintf("; issue 31: >= %.2fx, NOT MET", p.goal), true
					}
				}
				fmt.Printf("  %-52s %.2fx [%.2fx-%.2fx] (quartiles %.2fx-%.2fx)%s\n", p.name, median(rs), rs[0], rs[len(rs)-1],
					quantile(rs, 0.25), quantile(rs, 0.75), verdict)
			}
		}
		fmt.Printf("\nratios within each round (median [lowest-highest] of %d; requests/s):\n", rounds)
		within(func(num, den result) float64 { return num.rps / den.rps }, true)
		// The same pairs in CPU a request (the denominator's over the
		// numerator's, so that higher is better here too), in case the
		// server's core was taken from it (steal on a shared VM): that
		// lowers requests/s but not this. On the development VM the two
		// agreed within 0.01 in every run: its speed itself moves.
		fmt.Printf("the same in CPU a request (the second's over the first's; the process's, both servers in it):\n")
		within(func(num, den result) float64 { return float64(den.cpu) / float64(num.cpu) }, false)
	}
	fmt.Printf("peak RSS of the process (servers, no wrk): %d MB, the warm-up's garbage included; %s\n", peakRSS()>>20, liveHeap())
	written := true
	if timed != nil {
		// Dropped records are counted by the server, which stops next;
		// stopping writes the recorder's last batch.
		dropped := droppedRecords("http://" + ln.Addr().String() + "/metrics")
		stop()
		written = timed.report(dropped)
	} else {
		fmt.Printf("fleet records handed to the store: %d (discarded: -database writes them to Postgres)\n", discard.rows.Load())
	}
	if database && (missed || missed31) {
		// Postgres takes its CPU from the same machine (beside wrk, with
		// make bench-record-db): the ratios measure that sharing.
		fmt.Println("throughput goals not judged with -database: Postgres shares the machine with the servers and wrk")
		missed, missed31 = false, false
	}
	if missed || !written {
		fmt.Println("GOAL MISSED")
	}
	if missed31 {
		fmt.Println("GOAL MISSED: issue 31 (the median of the rounds' own ratios)")
	}
	for _, r := range results {
		if r.errors > 0 {
			fmt.Println("GOAL MISSED: errors")
			break
		}
	}
	return nil
}
