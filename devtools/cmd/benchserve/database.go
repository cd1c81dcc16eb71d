package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// openFleetDB makes a database beside the one admin names, migrates it and
// returns its store, timed: with -database the fleet's batches are written
// to Postgres as a replica writes them, and every record's lag is kept.
func openFleetDB(ctx context.Context, admin string) (*timedFleet, func(), error) {
	url, drop, err := storetest.Create(ctx, admin, "tidemark_record_", "")
	if err != nil {
		return nil, nil, err
	}
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		_ = drop(ctx)
		return nil, nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		_ = drop(ctx)
		return nil, nil, err
	}
	return &timedFleet{Store: st}, func() { st.Close(); _ = drop(context.WithoutCancel(ctx)) }, nil
}

// lagBuckets is how many milliseconds of lag the histogram tells apart;
// longer lags count in the last bucket (and in max).
const lagBuckets = 60_000

// timedFleet is the real store behind the fleet recorder, timing every
// batch: a record's lag is from the earliest request it stands for (its
// Since, the first sighting merged into it) to the end of the write that
// holds it. A histogram by millisecond, not a slice a record, so that the
// process's RSS (printed) stays the servers'.
type timedFleet struct {
	fleet.Store
	written, failed, batches atomic.Int64
	mu                       sync.Mutex
	hist                     []int64
	max                      time.Duration
	firstErr                 error
}

func (f *timedFleet) RecordFleet(ctx context.Context, s []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	recs, err := f.Store.RecordFleet(ctx, s)
	done := time.Now()
	f.batches.Add(1)
	if err != nil {
		f.failed.Add(int64(len(s) - len(recs)))
		f.mu.Lock()
		if f.firstErr == nil {
			f.firstErr = err
		}
		f.mu.Unlock()
		return recs, err
	}
	f.written.Add(int64(len(s)))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hist == nil {
		f.hist = make([]int64, lagBuckets+1)
	}
	for _, x := range s {
		first := x.At
		if !x.Since.IsZero() && x.Since.Before(first) {
			first = x.Since
		}
		lag := done.Sub(first)
		f.max = max(f.max, lag)
		f.hist[min(lagBuckets, max(0, int(lag/time.Millisecond)))]++
	}
	return recs, nil
}

// lag is the p-th quantile of the records' lag, to the millisecond.
func (f *timedFleet) lag(p float64) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, c := range f.hist {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := int64(p * float64(n))
	var seen int64
	for ms, c := range f.hist {
		seen += c
		if seen > want {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return f.max
}

// report prints what reached Postgres and says whether every record was
// written within 5 s (issue 31): none dropped, none failed, the slowest
// under 5 s.
func (f *timedFleet) report(dropped string) (ok bool) {
	f.mu.Lock()
	slowest, firstErr := f.max, f.firstErr
	f.mu.Unlock()
	if firstErr != nil {
		fmt.Printf("first failed fleet write: %v\n", firstErr)
	}
	fmt.Printf("fleet records written to Postgres: %d in %d batches, %d failed; lag p50 %s, p99 %s, max %s (goal: every record within 5s); dropped: %s\n",
		f.written.Load(), f.batches.Load(), f.failed.Load(), f.lag(0.50), f.lag(0.99), slowest.Round(time.Millisecond), dropped)
	return f.failed.Load() == 0 && slowest <= 5*time.Second && !strings.Contains(dropped, "GOAL")
}

// droppedRecords reads tidemark_fleet_dropped_total by reason from the
// server's /metrics: records the recorder refused or lost on the way.
func droppedRecords(url string) string {
	res, err := http.Get(url)
	if err != nil {
		return "unknown (" + err.Error() + ") GOAL MISSED"
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "unknown (" + err.Error() + ") GOAL MISSED"
	}
	var parts []string
	lost := false
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "tidemark_fleet_dropped_total{") {
			continue
		}
		reason, value, _ := strings.Cut(strings.TrimPrefix(line, "tidemark_fleet_dropped_total"), " ")
		parts = append(parts, reason+" "+value)
		// rate and cap are admission refusing a cluster on purpose;
		// buffer and database are records lost on the way.
		if value != "0" && (strings.Contains(reason, `"buffer"`) || strings.Contains(reason, `"database"`)) {
			lost = true
		}
	}
	out := strings.Join(parts, ", ")
	if len(parts) == 0 {
		return "no tidemark_fleet_dropped_total on " + url + " GOAL MISSED"
	}
	if lost {
		out += " GOAL MISSED"
	}
	return out
}
