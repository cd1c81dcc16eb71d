package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
)

// waitIndexed polls until every source has an ok scan and returns the time
// since start: the first index, every listing recorded and servable.
func waitIndexed(ctx context.Context, db string, repos int, start time.Time, limit time.Duration) (time.Duration, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	for {
		var n int
		if err := conn.QueryRow(ctx, `select count(distinct source) from scans where outcome = 'ok'`).Scan(&n); err != nil {
			return 0, fmt.Errorf("counting indexed sources: %w", err)
		}
		if n >= repos {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("first index: %d of %d sources after %s", n, repos, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// vacuumAnalyze vacuums and analyzes the database, as autovacuum would
// after a first index, so that the measures see a settled database.
func vacuumAnalyze(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "vacuum analyze"); err != nil {
		return fmt.Errorf("vacuum analyze after the first index: %w", err)
	}
	return nil
}

type stats struct {
	n        int
	p50, p99 time.Duration
	rps      float64
}

func summarize(ds []time.Duration, over time.Duration) stats {
	if len(ds) == 0 {
		return stats{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	s := stats{n: len(ds), p50: at(0.50), p99: at(0.99)}
	if over > 0 {
		s.rps = float64(len(ds)) / over.Seconds()
	}
	return s
}

type measures struct {
	quiet, busy, reload, read, change, pin stats
	busyChanges                            int
}

var client = &http.Client{
	Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

func measure(ctx context.Context, o options, st *store.Store, a, b *replica) (measures, error) {
	var m measures
	target := b.base + "/v1-release/channels/" + sourceName(1)
	quiet, err := loadgen(ctx, target, o.workers, o.load)
	if err != nil {
		return m, err
	}
	m.quiet = quiet

	ch := &changer{st: st, repos: o.repos, tags: o.tags, b: b}
	before := b.reloadCount()
	var served []time.Duration
	for range o.changes {
		d, err := ch.change(ctx)
		if err != nil {
			return m, err
		}
		served = append(served, d)
	}
	m.change = summarize(served, 0)
	m.reload = summarize(b.reloadsSince(before), 0)
	m.read = summarize(b.readsSince(before), 0)

	// The same load while sources change one after the other.
	stop := make(chan struct{})
	var busyErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := ch.change(ctx); err != nil {
				busyErr = err
				return
			}
			m.busyChanges++
			time.Sleep(20 * time.Millisecond)
		}
	})
	busy, err := loadgen(ctx, target, o.workers, o.load)
	close(stop)
	wg.Wait()
	if err != nil {
		return m, err
	}
	if busyErr != nil {
		return m, busyErr
	}
	m.busy = busy

	token, err := st.CreateToken(ctx, "benchscale", []string{"promote"})
	if err != nil {
		return m, err
	}
	var pins []time.Duration
	channel := sourceName(2)
	for i := range o.pins {
		version := tagName(o.tags - 1 - i%2)
		d, err := pin(ctx, a, b, token, channel, version)
		if err != nil {
			return m, err
		}
		pins = append(pins, d)
		// Writes are rate-limited per token (5 a second).
		time.Sleep(250 * time.Millisecond)
	}
	m.pin = summarize(pins, 0)
	return m, nil
}

// changer records a new listing of one source at a time, as the indexer
// does after a scan that found a new tag, and waits for replica B to serve it.
type changer struct {
	st          *store.Store
	repos, tags int
	b           *replica
	n           int
}

func (c *changer) change(ctx context.Context) (time.Duration, error) {
	c.n++
	i := 10 + c.n%(c.repos-10)
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		return 0, err
	}
	src := catalog.Source{Name: sourceName(i), Parser: p}
	res := resolver.ScanResult{Source: src.Name, Started: time.Now(), Complete: true}
	for j := range c.tags {
		res.Tags = append(res.Tags, src.Classify(tagName(j)))
	}
	newest := fmt.Sprintf("2.0.%d", c.n)
	res.Tags = append(res.Tags, src.Classify(newest))
	res.Finished = time.Now()
	start := time.Now()
	if _, err := c.st.ApplyScan(ctx, res); err != nil {
		return 0, fmt.Errorf("recording a scan of %s: %w", src.Name, err)
	}
	return waitServed(ctx, c.b, src.Name, newest, start)
}

// waitServed polls r's channel URL until it redirects to version.
func waitServed(ctx context.Context, r *replica, channel, version string, start time.Time) (time.Duration, error) {
	u := r.base + "/v1-release/channels/" + channel
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if strings.HasSuffix(res.Header.Get("Location"), "/"+version) {
			return time.Since(start), nil
		}
		if time.Since(start) > 30*time.Second {
			return 0, fmt.Errorf("replica %s: channel %s not serving %s after 30s (%d %s)", r.name, channel, version, res.StatusCode, res.Header.Get("Location"))
		}
		time.Sleep(500 * time.Microsecond)
	}
}

// pin pins channel to version through replica a and waits for b to serve it.
func pin(ctx context.Context, a, b *replica, token, channel, version string) (time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"version": version})
	start := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, a.base+"/api/v1/channels/"+channel+"/pin", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("pin %s to %s: %d %s", channel, version, res.StatusCode, msg)
	}
	return waitServed(ctx, b, channel, version, start)
}

// loadgen asks u from workers clients for d and returns the latencies.
func loadgen(ctx context.Context, u string, workers int, d time.Duration) (stats, error) {
	var mu sync.Mutex
	var all []time.Duration
	var failed atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(end) {
				t := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if err := benchkit.Found(client, req); err != nil {
					failed.Add(1)
					continue
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return stats{}, fmt.Errorf("load on %s: %d requests failed", u, n)
	}
	return summarize(all, d), nil
}
