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
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver"
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
	fmt.Printf("peak RSS of the process (servers, no wrk): %d MB\n", peakRSS()>>20)
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

// A target is one URL loaded by wrk, with a request script and a CPU
// profile of the process while it runs, when set.
type target struct {
	key                        string // -targets names it
	name, url, script, profile string
	pid                        int // the server's process when not this one
	// offset is where the script's rotation of clusters starts: each run
	// goes on where the target's last one stopped.
	offset *int64
}

func (t target) run(wrk string, d time.Duration, conns, threads int) (result, error) {
	before := processCPU(t.pid)
	r, err := t.load(wrk, d, conns, threads)
	if err == nil && r.requests > 0 {
		r.cpu = (processCPU(t.pid) - before) / time.Duration(r.requests)
	}
	return r, err
}

func (t target) load(wrk string, d time.Duration, conns, threads int) (result, error) {
	if t.profile == "" {
		return t.wrk(wrk, d, conns, threads)
	}
	f, err := os.Create(t.profile)
	if err != nil {
		return result{}, fmt.Errorf("cpu profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return result{}, fmt.Errorf("cpu profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	return t.wrk(wrk, d, conns, threads)
}

func (t target) wrk(wrk string, d time.Duration, conns, threads int) (result, error) {
	var args []string
	if t.offset != nil {
		args = []string{strconv.FormatInt(*t.offset, 10), strconv.Itoa(threads)}
	}
	r, err := runWrk(wrk, t.url, t.script, d, conns, threads, args...)
	if err == nil && t.offset != nil {
		*t.offset += r.requests / int64(threads)
	}
	return r, err
}

// listen serves h on a loopback port.
func listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = hs.Close() }, nil
}

// check makes sure the bench measures a real answer, not an error page.
func check(u string) error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(u)
	if err != nil {
		return fmt.Errorf("check %s: %w", u, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != location {
		return fmt.Errorf("check %s: %d %q, want 302 %q", u, res.StatusCode, res.Header.Get("Location"), location)
	}
	return nil
}

type result struct {
	name     string
	rps      float64
	p50, p99 time.Duration
	errors   int
	requests int64 // in the run, from wrk
	// cpu is the server's CPU time a request (this process's, or
	// channelserver's; wrk runs apart). With the server's core saturated
	// it is the inverse of requests/s; when it is not, it says whether a
	// target is slower because it costs more or because it waited.
	cpu time.Duration
}

// best keeps the higher requests/s and the lower latencies of two rounds,
// and every error of both.
func (r result) best(o result, first bool) result {
	if first {
		return o
	}
	r.rps = max(r.rps, o.rps)
	r.p50, r.p99 = min(r.p50, o.p50), min(r.p99, o.p99)
	r.cpu = min(r.cpu, o.cpu)
	r.errors += o.errors
	return r
}

var (
	reRPS      = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reRequests = regexp.MustCompile(`(\d+) requests in `)
	reP50      = regexp.MustCompile(`\s50%\s+([0-9.]+)(us|ms|s)`)
	reP99      = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
	reNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	reSockErr  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

var (
	rounds        int
	cpuProfile    string
	stepProfile   string
	floorProfile  string
	channelserver string
	verbose       bool
	only          string
	clusters      int
	forwarded     bool
	database      bool
)

// wrkCPUs, when set, keeps the load generator off the servers' CPUs, so
// that latency measures the server rather than the two fighting for cores.
var wrkCPUs string

func runWrk(wrk, u, script string, d time.Duration, conns, threads int, scriptArgs ...string) (result, error) {
	args := []string{"-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns),
		"-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency"}
	if script != "" {
		args = append(args, "-s", script)
	}
	args = append(args, u)
	if len(scriptArgs) > 0 {
		args = append(append(args, "--"), scriptArgs...)
	}
	cmd := exec.Command(wrk, args...)
	if wrkCPUs != "" {
		cmd = exec.Command("taskset", append([]string{"-c", wrkCPUs, wrk}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	text := string(out)
	var r result
	m := reRPS.FindStringSubmatch(text)
	if m == nil {
		return result{}, errors.New("wrk output has no Requests/sec:\n" + text)
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	if m := reRequests.FindStringSubmatch(text); m != nil {
		r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	r.p50 = wrkDuration(reP50.FindStringSubmatch(text))
	r.p99 = wrkDuration(reP99.FindStringSubmatch(text))
	if m := reNon2xx.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.errors += n
	}
	if m := reSockErr.FindStringSubmatch(text); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.errors += n
		}
	}
	return r, nil
}

func wrkDuration(m []string) time.Duration {
	if m == nil {
		return -1
	}
	d, err := time.ParseDuration(m[1] + strings.Replace(m[2], "us", "µs", 1))
	if err != nil {
		return -1
	}
	return d
}

// benchVersions are the versions the bench's clusters report: cluster i
// reports benchVersions[i % len].
func benchVersions() []string {
	var vs []string
	for minor := 16; minor <= 33; minor++ {
		for _, patch := range []int{0, 5, 10} {
			vs = append(vs, fmt.Sprintf("v1.%d.%d-k3s1", minor, patch))
		}
	}
	return vs
}

// clusterScript writes a wrk script that rotates -clusters cluster IDs,
// each reporting one of the released versions of the bench's source, as a
// fleet of system-upgrade-controllers would; with -forwarded each also
// names its own address in X-Forwarded-For (10.x.y.z from its number).
// Each wrk thread takes its own share of the clusters, starting at the
// offset given as the script's argument (where the target's last run
// stopped), so that the rounds together ask every cluster rather than
// each run the same first few tens of thousands from every thread.
func clusterScript(names headerNames) (string, error) {
	var vs []string
	for _, v := range benchVersions() {
		vs = append(vs, fmt.Sprintf("%q", v))
	}
	forwardedLua := ""
	if forwarded {
		forwardedLua = `  wrk.headers["` + names.forwarded + `"] = "10." .. (math.floor(i / 65536) % 256) .. "." .. (math.floor(i / 256) % 256) .. "." .. (i % 256)
`
	}
	lua := `local versions = {` + strings.Join(vs, ", ") + `}
local clusters = ` + strconv.Itoa(clusters) + `
local threads = 0
setup = function(thread)
  thread:set("id", threads)
  threads = threads + 1
end
local n = 0
-- args: the offset to start at, and how many threads share the clusters.
init = function(args)
  n = math.floor((id or 0) * clusters / math.max(tonumber(args[2]) or 1, 1)) + (tonumber(args[1]) or 0)
end
request = function()
  n = n + 1
  local i = n % clusters
  wrk.headers["` + names.cluster + `"] = "bench-cluster-" .. i
  wrk.headers["` + names.version + `"] = versions[(i % #versions) + 1]
` + forwardedLua + `  return wrk.format("GET")
end
`
	f, err := os.CreateTemp("", "benchserve-*.lua")
	if err != nil {
		return "", fmt.Errorf("wrk script: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(lua); err != nil {
		return "", fmt.Errorf("wrk script: %w", err)
	}
	return f.Name(), nil
}

// headerNames are the three headers the cluster script sends.
type headerNames struct{ cluster, version, forwarded string }

var (
	clusterHeaders = headerNames{"X-SUC-Cluster-ID", "X-SUC-Latest-Version", "X-Forwarded-For"}
	// ignoredHeaders are as long as clusterHeaders, so that wrk and
	// net/http do the same work, and none of them is one Tidemark reads.
	ignoredHeaders = headerNames{"X-IGN-Cluster-ID", "X-IGN-Latest-Version", "X-Forwarded-Ign"}
)

// warmUp asks h for the channel at each path once per cluster, in process,
// with the headers the wrk script sends: a fleet polling at its steady rate
// is known to the server (admitted, its settle clock started) before the
// measured rounds, which would otherwise pay for every first sighting in
// their first round.
func warmUp(h http.Handler, paths ...string) error {
	vs := benchVersions()
	for _, p := range paths {
		for i := range clusters {
			req := httptest.NewRequest(http.MethodGet, p, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			req.Header.Set("X-SUC-Cluster-ID", "bench-cluster-"+strconv.Itoa(i))
			req.Header.Set("X-SUC-Latest-Version", vs[i%len(vs)])
			if forwarded {
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusFound {
				return fmt.Errorf("warm-up %s, cluster %d: %d %s", p, i, w.Code, w.Body)
			}
		}
	}
	return nil
}

// discardFleet takes every batch at once and keeps only the count.
type discardFleet struct{ rows atomic.Int64 }

func (f *discardFleet) RecordFleet(_ context.Context, s []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	f.rows.Add(int64(len(s)))
	return nil, nil
}
func (f *discardFleet) FleetSummary(context.Context, string, time.Time) (resolver.FleetSummary, error) {
	return resolver.FleetSummary{}, nil
}
func (f *discardFleet) FleetClusters(context.Context, resolver.ClusterQuery) ([]resolver.ClusterRecord, string, error) {
	return nil, "", nil
}
func (f *discardFleet) FleetCluster(context.Context, string) ([]resolver.ClusterRecord, error) {
	return nil, nil
}
func (f *discardFleet) FleetActive(context.Context, time.Time) (map[string][]resolver.VersionCount, error) {
	return nil, nil
}
func (f *discardFleet) FleetCounts(context.Context, time.Time) (map[string]resolver.FleetCount, error) {
	return nil, nil
}
func (f *discardFleet) PurgeFleet(context.Context, time.Time) (int64, error)     { return 0, nil }
func (f *discardFleet) FleetMembers(context.Context, func(string, string)) error { return nil }

// clusterLabel is -clusters as the table names it: 10k, 200k.
func clusterLabel() string {
	if clusters%1000 == 0 {
		return strconv.Itoa(clusters/1000) + "k"
	}
	return strconv.Itoa(clusters)
}

// targetKeys are the targets -targets may name, in the order they run.
var targetKeys = []string{"floor", "plain", "floor-clusters", "ignored", "clusters", "stepwise", "channelserver"}

// selectTargets keeps the targets list names (all when it is empty), in
// their order; an unknown name, or channelserver without its binary, is an
// error.
func selectTargets(all []target, list string) ([]target, error) {
	if list == "" {
		return all, nil
	}
	want := map[string]bool{}
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(targetKeys, name) {
			return nil, fmt.Errorf("-targets: unknown target %q (known: %s)", name, strings.Join(targetKeys, ", "))
		}
		if name == "channelserver" && !slices.ContainsFunc(all, func(t target) bool { return t.key == name }) {
			return nil, errors.New("-targets: channelserver needs -channelserver (or CHANNELSERVER)")
		}
		want[name] = true
	}
	var out []target
	for _, t := range all {
		if want[t.key] {
			out = append(out, t)
		}
	}
	return out, nil
}

// quantile of sorted values, interpolated between neighbours.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// peakRSS is this process's peak resident set (VmHWM), 0 when unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// processCPU is the user and system CPU time so far of process pid, or of
// this one when pid is 0.
func processCPU(pid int) time.Duration {
	if pid == 0 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// utime and stime are fields 14 and 15, in clock ticks (USER_HZ, 100
	// on Linux), counted after the command name's closing parenthesis.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
