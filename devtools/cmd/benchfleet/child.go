package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/store"
)

// child is a replica in a process of its own, so that its CPU time is the
// server's alone: with recording on it writes to DATABASE_URL's fleet. It
// prints its address, and at the end (stdin closed) the batch sizes it wrote.
func child(ctx context.Context, record bool) error {
	var fleet *countingFleet
	if record {
		st, err := store.Open(ctx, os.Getenv("DATABASE_URL"), nil)
		if err != nil {
			return err
		}
		defer st.Close()
		fleet = &countingFleet{Store: st}
	}
	var base string
	var stop func()
	var err error
	if fleet != nil {
		base, stop, err = serve(ctx, fleet)
	} else {
		base, stop, err = serve(ctx, nil)
	}
	if err != nil {
		return err
	}
	fmt.Println(base)
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop() // the last flush is written before this returns
	var batches []int
	if fleet != nil {
		batches = fleet.take()
	}
	return json.NewEncoder(os.Stdout).Encode(batches)
}

// pacedChild starts a child replica, asks its channel URL rate times a
// second for d, and returns the child's CPU per request and its batches;
// with pg (the Postgres cluster's CPU so far) Postgres's CPU per request in
// the same span, the child's ending and its backends' included.
func pacedChild(ctx context.Context, record bool, rate int, d time.Duration, pg func() time.Duration) (pacedResult, []int, error) {
	mode := "off"
	if record {
		mode = "on"
	}
	self, err := os.Executable()
	if err != nil {
		return pacedResult{}, nil, err
	}
	cmd := exec.Command(self, "-serve", mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return pacedResult{}, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return pacedResult{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return pacedResult{}, nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		return pacedResult{}, nil, fmt.Errorf("replica process (recording %s) did not start", mode)
	}
	base := strings.TrimSpace(line)
	var r pacedResult
	if record {
		// A recording replica's start reads every record once (admission
		// learns the known clusters) and refreshes the gauge: work a start
		// does, not an answer. It is timed on its own, and the answers are
		// measured after it.
		var pgStart time.Duration
		if pg != nil {
			pgStart = pg()
		}
		if err := startedUp(ctx, base); err != nil {
			return pacedResult{}, nil, err
		}
		r.startCPU = benchkit.ProcessCPU(cmd.Process.Pid)
		if pg != nil {
			r.startPG = pg() - pgStart
		}
	}
	cpu0 := benchkit.ProcessCPU(cmd.Process.Pid)
	var pg0 time.Duration
	if pg != nil {
		pg0 = pg()
	}
	start := time.Now()
	n, lat, err := paced(ctx, base, rate, d)
	wall := time.Since(start)
	if err != nil {
		return pacedResult{}, nil, err
	}
	stdin.Close()
	var batches []int
	if err := json.NewDecoder(out).Decode(&batches); err != nil {
		return pacedResult{}, nil, fmt.Errorf("replica process (recording %s): %w", mode, err)
	}
	cpu := benchkit.ProcessCPU(cmd.Process.Pid) - cpu0
	r.requests, r.cpuPerReq, r.rps = n, cpu/time.Duration(n), float64(n)/wall.Seconds()
	slices.Sort(lat)
	r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	if pg != nil {
		// The child's backends end with it; the postmaster reaps them
		// within milliseconds and keeps their time.
		_ = cmd.Wait()
		time.Sleep(200 * time.Millisecond)
		r.pgPerReq = (pg() - pg0) / time.Duration(n)
	}
	return r, batches, nil
}

// startedUp waits until the replica at base has done its start-up work:
// its gauge of active clusters (refreshed after admission learned the
// recorded clusters) is on /metrics.
func startedUp(ctx context.Context, base string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if strings.Contains(string(body), "tidemark_fleet_clusters{") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replica at %s: no tidemark_fleet_clusters on /metrics after 2 minutes", base)
}

// paced asks the channel URL rate times a second for d, on schedule, each
// request from one of a million cluster IDs; it returns how many it sent
// and each one's latency.
func paced(ctx context.Context, base string, rate int, d time.Duration) (int, []time.Duration, error) {
	work := make(chan int, rate)
	go pace(d, rate, work)
	lat, err := askEach(ctx, base+"/v1-release/channels/stable", work, func(i int, h http.Header) {
		h.Set("X-SUC-Cluster-ID", fmt.Sprintf("cluster-%d", i%1_000_000+1))
		h.Set("X-SUC-Latest-Version", fmt.Sprintf("v1.%d.0", i%20))
	})
	return len(lat), lat, err
}

// askEach asks u once for each i sent on work, with the headers set gives
// it, from 16 workers on keep-alive connections, until work is closed; it
// returns each answer's latency and the last error (an answer not a 302).
func askEach(ctx context.Context, u string, work <-chan int, set func(i int, h http.Header)) ([]time.Duration, error) {
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	var lat []time.Duration
	for range 16 {
		wg.Go(func() {
			for i := range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				set(i, req.Header)
				start := time.Now()
				err := benchkit.Found(client, req)
				took := time.Since(start)
				mu.Lock()
				lat = append(lat, took)
				if err != nil {
					failed = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat, failed
}

// pace sends 0, 1, ... to work at rate a second for d, then closes work;
// it returns how many it sent.
func pace(d time.Duration, rate int, work chan<- int) int {
	return paceN(int(d.Seconds()*float64(rate)), rate, work)
}

// paceN sends 0 to n-1 to work at rate a second, then closes work.
func paceN(n, rate int, work chan<- int) int {
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait)
		}
		work <- i
	}
	close(work)
	return n
}
