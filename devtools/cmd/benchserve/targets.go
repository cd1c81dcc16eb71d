package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/resolver"
)

// The targets wrk loads, its runs and their results, and the helpers
// around them.

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
	before := benchkit.ProcessCPU(t.pid)
	r, err := t.load(wrk, d, conns, threads)
	if err == nil && r.requests > 0 {
		r.cpu = (benchkit.ProcessCPU(t.pid) - before) / time.Duration(r.requests)
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
	lifecycles    bool
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

// printSpreads prints each target's requests/s, p99 and CPU an answer over
// the rounds: their median and, in brackets, the lowest and highest round.
// A difference between two targets smaller than their spreads is the
// machine's, not theirs.
func printSpreads(targets []target, perRound [][]result) {
	fmt.Printf("\nover the %d rounds, median [lowest-highest]; CPU an answer is the server process's utime+stime over wrk's answers:\n", len(perRound))
	fmt.Printf("%-42s %22s %26s %24s\n", "target", "requests/s", "p99", "CPU/answer")
	for i, t := range targets {
		var rps, p99, cpu []float64
		for _, round := range perRound {
			rps = append(rps, round[i].rps)
			p99 = append(p99, float64(round[i].p99))
			cpu = append(cpu, float64(round[i].cpu))
		}
		m, lo, hi := benchkit.Spread(rps)
		rpsText := fmt.Sprintf("%.0f [%.0f-%.0f]", m, lo, hi)
		m, lo, hi = benchkit.Spread(p99)
		p99Text := fmt.Sprintf("%s [%s-%s]", ms(m), ms(lo), ms(hi))
		m, lo, hi = benchkit.Spread(cpu)
		cpuText := fmt.Sprintf("%.1f [%.1f-%.1f] µs", m/1e3, lo/1e3, hi/1e3)
		fmt.Printf("%-42s %22s %26s %24s\n", t.name, rpsText, p99Text, cpuText)
	}
}

// ms is a duration in nanoseconds as milliseconds.
func ms(ns float64) string { return fmt.Sprintf("%.2fms", ns/1e6) }

// liveHeap collects and says what stays: the heap the servers hold (the
// snapshot, the fleet's clusters) and the RSS after the collection, which
// a server at its steady rate settles near, against the peak that the
// in-process warm-up's garbage sets.
func liveHeap() string {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return fmt.Sprintf("after a collection: live heap %d MB, RSS %d MB", m.HeapAlloc>>20, benchkit.RSS(os.Getpid())>>20)
}
