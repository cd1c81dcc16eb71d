package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// settleQuiet is how long the replicas must go without a reload after the
// indexer is done before the background work counts as settled.
const settleQuiet = 3 * time.Second

// settled is when the background work after the first answer ended: every
// source's scan finished on A (its digest phase and gate checks included)
// and neither replica reloaded its snapshot since.
type settled struct {
	ok          bool          // false: not settled within the limit
	after       time.Duration // from the first answer (the first index)
	indexerDone time.Duration // from the first answer, as A's /metrics said it
	pending     int           // digests still to resolve when the limit passed
	scans       int           // scans finished by then
	// heap is each replica's heap in use and its collector's goal (about
	// twice what was live at the last collection) when it settled, in
	// bytes: A's, then B's.
	heap, goal [2]int64
}

// waitSettled polls A's and B's /metrics until A's indexer has finished a
// scan of every source with no digest pending
// (tidemark_indexer_scans_total, tidemark_indexer_tags{state=
// "pending_digest"}) and then neither replica reloads for settleQuiet
// (tidemark_snapshot_age_seconds). The settle time is the later of the
// indexer's end and the last reload of either, counted from firstAnswer.
func waitSettled(ctx context.Context, a, b *replica, repos int, firstAnswer time.Time, limit time.Duration) (settled, error) {
	var s settled
	var done time.Time
	for {
		ma, err := scrape(ctx, a.base)
		if err != nil {
			return s, fmt.Errorf("replica A's metrics: %w", err)
		}
		mb, err := scrape(ctx, b.base)
		if err != nil {
			return s, fmt.Errorf("replica B's metrics: %w", err)
		}
		now := time.Now()
		s.pending = int(ma.sum("tidemark_indexer_tags", `state="pending_digest"`))
		s.scans = int(ma.sum("tidemark_indexer_scans_total", ""))
		if done.IsZero() && s.pending == 0 && s.scans >= repos {
			done = now
		}
		if !done.IsZero() {
			last := done
			for _, r := range []time.Time{lastReload(now, ma), lastReload(now, mb)} {
				if r.After(last) {
					last = r
				}
			}
			if now.Sub(last) >= settleQuiet {
				s.ok, s.after, s.indexerDone = true, last.Sub(firstAnswer), done.Sub(firstAnswer)
				for i, m := range []metrics{ma, mb} {
					s.heap[i] = int64(m.sum("go_memstats_heap_inuse_bytes", ""))
					s.goal[i] = int64(m.sum("go_memstats_next_gc_bytes", ""))
				}
				return s, nil
			}
		}
		if now.Sub(firstAnswer) > limit {
			s.after = now.Sub(firstAnswer)
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(time.Second):
			// Not more often: a scrape of A's /metrics (a series per
			// source and state) cost it ~4 ms, polled every 250 ms as
			// much CPU as its reloads.
		}
	}
}

// lastReload is when a replica last swapped in a rebuilt snapshot.
func lastReload(now time.Time, m metrics) time.Time {
	return now.Add(-time.Duration(m.sum("tidemark_snapshot_age_seconds", "") * float64(time.Second)))
}

// metrics is one scrape of a replica's /metrics: each sample line's
// name{labels} and value.
type metrics []sample

type sample struct {
	name, labels string
	value        float64
}

// sum adds the samples of name whose labels contain label ("": all).
func (m metrics) sum(name, label string) float64 {
	var t float64
	for _, s := range m {
		if s.name == name && strings.Contains(s.labels, label) {
			t += s.value
		}
	}
	return t
}

func scrape(ctx context.Context, base string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", res.Status)
	}
	var m metrics
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels := line[:sp], ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, labels = name[:i], name[i:]
		}
		m = append(m, sample{name: name, labels: labels, value: v})
	}
	return m, sc.Err()
}

// settleLine says how long the background work took, against the goal.
func (s settled) line() (string, string) {
	if !s.ok {
		return "not settled", fmt.Sprintf("%.0f s after the first answer: %d digests pending, %d scans finished; goal 60 s", s.after.Seconds(), s.pending, s.scans)
	}
	return fmt.Sprintf("%.1f s", s.after.Seconds()), fmt.Sprintf("after the first answer (indexer done at %.1f s, then the last reload); goal 60 s", s.indexerDone.Seconds())
}
