// Package evidenceview reads a channel's evidence for the API and the
// console: what the fleet says of each version the channel told its
// clusters (told, adopted, stuck, when first told, how fast adopted, and
// halts). It reads Postgres at most every Every per channel and replica,
// however often it is asked, and both doors share one cache.
package evidenceview

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/server/core"
)

const (
	// Every is how long one read of a channel's evidence is reused.
	Every = 5 * time.Second
	// days bounds the versions listed: those the channel answered in the
	// last 30 days.
	days = 30 * 24 * time.Hour
)

// Store is what evidence reads (*store.Store).
type Store interface {
	Evidence(ctx context.Context, channel string, activeSince, stuckBefore time.Time) ([]resolver.EvidenceRow, map[string]resolver.EvidenceVersion, error)
	RolloutHalts(ctx context.Context, channel string) (map[string]int, error)
}

// Reader reads evidence through its cache.
type Reader struct {
	s  *core.Server
	mu sync.Mutex
	m  map[string]cached
}

type cached struct {
	at   time.Time
	list []evidence.Version
}

// New is a reader for s's fleet store.
func New(s *core.Server) *Reader { return &Reader{s: s, m: map[string]cached{}} }

// Of is channel's evidence as v sees its versions, from the cache when
// fresh; newest told first.
func (r *Reader) Of(ctx context.Context, v *core.View, channel string) ([]evidence.Version, error) {
	now := time.Now()
	r.mu.Lock()
	if c, ok := r.m[channel]; ok && now.Sub(c.at) < Every {
		r.mu.Unlock()
		return c.list, nil
	}
	r.mu.Unlock()
	es, ok := r.s.Opts.Fleet.Store.(Store)
	if !ok {
		return nil, fmt.Errorf("%w: this store keeps no evidence", resolver.ErrUnavailable)
	}
	window := r.s.Opts.Fleet.ActiveWindow
	if window <= 0 {
		window = config.DefaultActiveWindow
	}
	stuck := r.s.Opts.Fleet.StuckAfter
	if stuck <= 0 {
		stuck = config.DefaultStuckAfter
	}
	rows, vers, err := es.Evidence(ctx, channel, now.Add(-window), now.Add(-stuck))
	if err != nil {
		return nil, err
	}
	halts, err := es.RolloutHalts(ctx, channel)
	if err != nil {
		return nil, err
	}
	older := func(a, b string) bool {
		va, ok1 := v.Snap.Reported(channel, a)
		vb, ok2 := v.Snap.Reported(channel, b)
		return ok1 && ok2 && resolver.Compare(va, vb) < 0
	}
	list := evidence.Compute(rows, vers, halts, older, now.Add(-days))
	r.mu.Lock()
	r.m[channel] = cached{at: now, list: list}
	r.mu.Unlock()
	return list, nil
}

// JSON is ev as the API writes it.
func JSON(ev evidence.Version) openapi.Evidence {
	j := openapi.Evidence{Version: ev.Version, Told: ev.Told, Adopted: ev.Adopted, Stuck: ev.Stuck, Halts: ev.Halts}
	if !ev.FirstTold.IsZero() {
		t := ev.FirstTold.UTC()
		j.FirstTold = &t
	}
	if ev.AdoptionP50 >= 0 {
		p := ev.AdoptionP50
		j.AdoptionP50Seconds = &p
	}
	return j
}
