package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/fleet"
)

// The flood mode (issue 24): random cluster IDs and reported versions at
// full speed against a replica with the default admission limits, from one
// loopback address and then from 10,000 (127.1.x.y), while one legitimate,
// already recorded cluster polls every 200 ms reporting a new version each
// time. Printed per phase: requests answered, records admitted, drops by
// reason, tidemark_fleet_clusters series, /metrics size, the replica's peak
// RSS and how long the legitimate cluster's record took to be written.

// floodChild is the replica: recording on, admission limits as shipped.
func floodChild(ctx context.Context) error {
	return serveChild(ctx, fleet.Options{ActiveWindow: 10 * time.Second}, nil)
}

func runFlood(ctx context.Context, n int, limit time.Duration) error {
	st, db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	cmd, stdin, base, err := startReplica("flood")
	if err != nil {
		return err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	u := base + "/v1-release/channels/stable"
	fmt.Printf("flood: %d random cluster IDs a phase (at most %s), default admission limits (60 new clusters/min per address, 100000 per channel), 2-core loopback\n", n, limit)
	fmt.Printf("%-22s %10s %9s %9s %9s %8s %10s %9s %s\n", "phase", "answered", "req/s", "admitted", "dropped", "series", "/metrics", "peak RSS", "legitimate record p50 / max")

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// The legitimate cluster is recorded before the flood.
	legit := noRedirect(&http.Transport{})
	if err := poll(legit, u, "legit-cluster", "v1.1.0"); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	droppedSoFar := 0
	for _, ph := range []struct {
		name  string
		addrs int
	}{{"one address", 1}, {"10,000 addresses", 10000}} {
		var before int
		if err := conn.QueryRow(ctx, `select count(*) from fleet`).Scan(&before); err != nil {
			return err
		}
		answered, took, lat := floodPhase(ctx, u, n, ph.addrs, limit, legit, conn)
		time.Sleep(2 * time.Second) // the last flush
		var after int
		if err := conn.QueryRow(ctx, `select count(*) from fleet`).Scan(&after); err != nil {
			return err
		}
		body := benchkit.Scrape(base)
		dropped := -droppedSoFar
		for _, reason := range []string{"rate", "cap", "buffer", "database"} {
			dropped += int(benchkit.MetricValue(body, `tidemark_fleet_dropped_total{reason="`+reason+`"}`))
		}
		droppedSoFar += dropped
		slices.Sort(lat)
		p50, worst := "-", "-"
		if len(lat) > 0 {
			p50, worst = ms(lat[len(lat)/2]), ms(lat[len(lat)-1])
		}
		fmt.Printf("%-22s %10d %9.0f %9d %9d %8d %9.1fK %8dM %s / %s (%d polls)\n", ph.name, answered, float64(answered)/took.Seconds(),
			after-before, dropped, strings.Count(body, "\ntidemark_fleet_clusters{"), float64(len(body))/1024, benchkit.PeakRSS(cmd.Process.Pid)>>20, p50, worst, len(lat))
	}
	return nil
}

// floodPhase sends n requests with random IDs from addrs loopback
// addresses (1: the default) as fast as 64 workers can, for at most limit;
// meanwhile the legitimate cluster polls and its record latencies are
// measured.
func floodPhase(ctx context.Context, u string, n, addrs int, limit time.Duration, legit *http.Client, conn *pgx.Conn) (int, time.Duration, []time.Duration) {
	var clients []*http.Client
	if addrs == 1 {
		clients = []*http.Client{noRedirect(&http.Transport{MaxIdleConnsPerHost: 64})}
	} else {
		for i := range addrs {
			local := &net.TCPAddr{IP: net.IPv4(127, 1, byte(i>>8), byte(i))}
			// A connection a request, as clusters polling every 15 minutes
			// make them: what is measured is the fleet's memory, not 10,000
			// idle keep-alive connections'.
			clients = append(clients, noRedirect(&http.Transport{DisableKeepAlives: true,
				DialContext: (&net.Dialer{LocalAddr: local}).DialContext}))
		}
	}
	deadline := time.Now().Add(limit)
	var sent, answered atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for sent.Add(1) <= int64(n) && time.Now().Before(deadline) {
				c := clients[rand.IntN(len(clients))]
				id := "flood-" + strconv.FormatUint(rand.Uint64(), 36)
				if poll(c, u, id, fmt.Sprintf("v%d.%d.%d", rand.IntN(100), rand.IntN(1000), rand.IntN(1000))) == nil {
					answered.Add(1)
				}
			}
		})
	}
	var lat []time.Duration
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for i := 0; ; i++ {
		select {
		case <-done:
			for _, c := range clients {
				c.CloseIdleConnections()
			}
			return int(answered.Load()), time.Since(start), lat
		case <-time.After(200 * time.Millisecond):
		}
		v := fmt.Sprintf("v1.%d.0", 2+i%30)
		asked := time.Now()
		if poll(legit, u, "legit-cluster", v) != nil {
			continue
		}
		for time.Since(asked) < 10*time.Second {
			var got string
			if err := conn.QueryRow(ctx, `select reported from fleet where channel = 'stable' and cluster = 'legit-cluster'`).Scan(&got); err == nil && got == v {
				lat = append(lat, time.Since(asked))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func noRedirect(t *http.Transport) *http.Client {
	return &http.Client{Transport: t, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func poll(c *http.Client, u, id, reported string) error {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("X-SUC-Cluster-ID", id)
	req.Header.Set("X-SUC-Latest-Version", reported)
	return benchkit.Found(c, req)
}
