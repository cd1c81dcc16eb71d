// Command benchserve measures a Tidemark channel URL against the floor: a
// bare net/http handler answering a fixed 302. Both are served in this
// process on loopback and loaded with wrk one after the other, in the same
// run, and printed side by side. The Tidemark server answers from an
// in-memory snapshot of a realistic tag set; there is no database, and the
// snapshot is loaded once before the run (the load count is printed).
//
//	go run ./cmd/benchserve -duration 10s -connections 64
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
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "wrk duration per target")
	conns := flag.Int("connections", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	wrk := flag.String("wrk", "wrk", "wrk binary")
	wrkCPU := flag.String("wrk-cpu", "", "run wrk on these CPUs (taskset -c), apart from the servers")
	flag.Parse()
	wrkCPUs = *wrkCPU
	if err := run(*wrk, *duration, *conns, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "benchserve:", err)
		os.Exit(1)
	}
}

const location = "https://github.com/k3s-io/k3s/releases/tag/v1.33.6+k3s2"

func run(wrk string, d time.Duration, conns, threads int) error {
	snap, tags, err := snapshot()
	if err != nil {
		return err
	}
	var loads atomic.Int64
	fleet := &discardFleet{}
	s, err := server.New(server.Options{
		// Fleet recording on: every sighting goes through the buffer and
		// the flusher; the store takes batches at once (no database here).
		Fleet:       server.FleetOptions{Store: fleet},
		ExternalURL: "https://tidemark.example.com",
		// A real JSON access log line per request, thrown away: its cost is
		// part of what is measured.
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load: func(context.Context) (*resolver.Snapshot, error) {
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
	go func() { ran <- s.Run(ctx, ln, server.RunOptions{}) }()
	defer func() { stopTM(); <-ran }()
	tmURL := "http://" + ln.Addr().String() + "/v1-release/channels/v1.33"
	if err := check(tmURL); err != nil {
		return err
	}
	stepURL := "http://" + ln.Addr().String() + "/v1-release/channels/stepwise"
	script, err := clusterScript()
	if err != nil {
		return err
	}
	defer os.Remove(script)
	loadsBefore := loads.Load()

	fmt.Printf("wrk -t%d -c%d -d%s --latency, loopback; snapshot: %d tags, 1 source, %d channels\n",
		threads, conns, d, tags, len(snap.Channels()))
	results := make([]result, 0, 3)
	for _, target := range []struct{ name, url, script string }{
		{"floor (bare net/http 302)", floorURL + "/", ""},
		{"tidemark /v1-release/channels/v1.33", tmURL, ""},
		{"stepwise, 10k clusters (fleet on)", stepURL, script},
	} {
		r, err := runWrk(wrk, target.url, target.script, d, conns, threads)
		if err != nil {
			return fmt.Errorf("%s: %w", target.name, err)
		}
		r.name = target.name
		results = append(results, r)
	}
	fmt.Printf("\n%-38s %12s %10s %10s %8s\n", "target", "requests/s", "p50", "p99", "errors")
	for _, r := range results {
		fmt.Printf("%-38s %12.0f %10s %10s %8d\n", r.name, r.rps, r.p50, r.p99, r.errors)
	}
	ratio := results[1].rps / results[0].rps
	fmt.Printf("\ntidemark/floor: %.2fx (goal >= 0.60x); p99 %s (goal < 5ms); snapshot loads during the run: %d (no database)\n",
		ratio, results[1].p99, loads.Load()-loadsBefore)
	step := results[2].rps / results[1].rps
	fmt.Printf("stepwise/plain: %.2fx (goal >= 0.80x); p99 %s; fleet records written: %d\n",
		step, results[2].p99, fleet.rows.Load())
	if ratio < 0.6 || results[1].p99 >= 5*time.Millisecond || results[1].errors > 0 || step < 0.8 || results[2].errors > 0 {
		fmt.Println("GOAL MISSED")
	}
	return nil
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
}

var (
	reRPS     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reP50     = regexp.MustCompile(`\s50%\s+([0-9.]+)(us|ms|s)`)
	reP99     = regexp.MustCompile(`\s99%\s+([0-9.]+)(us|ms|s)`)
	reNon2xx  = regexp.MustCompile(`Non-2xx or 3xx responses:\s+(\d+)`)
	reSockErr = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// wrkCPUs, when set, keeps the load generator off the servers' CPUs, so
// that latency measures the server rather than the two fighting for cores.
var wrkCPUs string

func runWrk(wrk, u, script string, d time.Duration, conns, threads int) (result, error) {
	args := []string{"-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns),
		"-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency"}
	if script != "" {
		args = append(args, "-s", script)
	}
	args = append(args, u)
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

// clusterScript writes a wrk script that rotates 10,000 cluster IDs, each
// reporting one of the released versions of the bench's source, as a fleet
// of system-upgrade-controllers would.
func clusterScript() (string, error) {
	var vs []string
	for minor := 16; minor <= 33; minor++ {
		for _, patch := range []int{0, 5, 10} {
			vs = append(vs, fmt.Sprintf("%q", fmt.Sprintf("v1.%d.%d-k3s1", minor, patch)))
		}
	}
	lua := `local versions = {` + strings.Join(vs, ", ") + `}
local n = 0
request = function()
  n = n + 1
  local i = n % 10000
  wrk.headers["X-SUC-Cluster-ID"] = "bench-cluster-" .. i
  wrk.headers["X-SUC-Latest-Version"] = versions[(i % #versions) + 1]
  return wrk.format("GET")
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
func (f *discardFleet) PurgeFleet(context.Context, time.Time) (int64, error) { return 0, nil }
