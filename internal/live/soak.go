package live

import (
	"maps"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// soakTimer rebuilds the snapshot when a soak ends. A snapshot answers as
// of when it was built, and nothing in the database changes when a version
// finishes soaking, so without it a soaked version would wait for the next
// unrelated change to be served.
type soakTimer struct {
	mu    sync.Mutex
	timer *time.Timer
	done  bool // Run ended: schedule nothing more
}

// scheduleSoaks arms the timer for the earliest soak end of snap, replacing
// the one armed for the previous snapshot. When it fires, the sources
// whose soak ended are read again (Change{Source}), which re-evaluates their
// gates and every channel's answer.
func (s *Snapshots) scheduleSoaks(snap *snapshot.Snapshot) {
	ends := maps.Clone(snap.SoakEnds()) // the snapshot's own map: never written
	// A lifecycle date passing changes a line's classification: the same
	// rebuild of the source's part classifies it again.
	for src, at := range snap.Lines().Next() {
		if cur, ok := ends[src]; !ok || at.Before(cur) {
			if ends == nil {
				ends = map[string]time.Time{}
			}
			ends[src] = at
		}
	}
	t := &s.soaks
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if len(ends) == 0 || t.done {
		return
	}
	var next time.Time
	for _, at := range ends {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	t.timer = time.AfterFunc(max(next.Sub(s.opts.Now()), 0), func() {
		now := s.opts.Now()
		due := 0
		for src, at := range ends {
			if !at.After(now) {
				due++
				s.Notify(snapshot.Change{Source: src})
			}
		}
		if due == 0 {
			// The wall clock disagreed with the timer's monotonic one:
			// look again from the snapshot being served.
			if snap := s.cur.Load(); snap != nil {
				s.scheduleSoaks(snap)
			}
		}
	})
}

// Tick rebuilds the part of the snapshot whose soak or lifecycle date has
// passed by the clock (Options.Now): what the timer does when it fires,
// for a test that moved the clock.
func (s *Snapshots) Tick() {
	snap := s.cur.Load()
	if snap == nil {
		return
	}
	now := s.opts.Now()
	for src, at := range snap.SoakEnds() {
		if !at.After(now) {
			s.Notify(snapshot.Change{Source: src})
		}
	}
	for src, at := range snap.Lines().Next() {
		if !at.After(now) {
			s.Notify(snapshot.Change{Source: src})
		}
	}
}

// stopSoaks stops the timer for good (Run is returning).
func (s *Snapshots) stopSoaks() {
	t := &s.soaks
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	if t.timer != nil {
		t.timer.Stop()
	}
}
