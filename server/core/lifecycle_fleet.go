package core

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// activeCounter counts the active clusters by channel and reported
// version (*store.Store).
type activeCounter interface {
	FleetActive(ctx context.Context, activeSince time.Time) (map[string][]resolver.VersionCount, error)
}

// ActiveByLine counts the active clusters of the whole fleet (every
// replica's records, from Postgres) per source and line of the version
// they report. ok is false when the fleet is not kept here.
func (s *Server) ActiveByLine(ctx context.Context, v *View) (map[string]map[string]int, bool, error) {
	ac, ok := s.Opts.Fleet.Store.(activeCounter)
	if !ok || s.FleetRec == nil {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.Opts.DBTimeout)
	defer cancel()
	active, err := ac.FleetActive(ctx, time.Now().Add(-s.FleetRec.ActiveWindow()))
	if err != nil {
		return nil, true, err
	}
	out := map[string]map[string]int{}
	for ch, counts := range active {
		e := v.entry(ch)
		if e == nil {
			continue
		}
		src := e.Ans.Channel.Source
		for _, vc := range counts {
			if rv, ok := v.Snap.Reported(ch, vc.Version); ok {
				if out[src] == nil {
					out[src] = map[string]int{}
				}
				out[src][lifecycle.Name(rv.Major, rv.Minor)] += vc.Clusters
			}
		}
	}
	return out, true, nil
}

// fleetLifecycle is tidemark_fleet_lifecycle_clusters: the whole fleet's
// active clusters per source and classification of their line, read from
// Postgres at most every fleetLifecycleEvery (so every replica exports the
// same counts, at most that far behind).
type fleetLifecycle struct {
	s    *Server
	desc *prometheus.Desc
	mu   sync.Mutex
	at   time.Time
	last []prometheus.Metric
}

const fleetLifecycleEvery = 5 * time.Second

func newFleetLifecycle(s *Server) *fleetLifecycle {
	return &fleetLifecycle{s: s, desc: prometheus.NewDesc("tidemark_fleet_lifecycle_clusters",
		"Active clusters of the whole fleet (every replica's records) by source and the classification of the line of the version they report (supported, deprecated, expired); at most 5 s old.",
		[]string{"source", "classification"}, nil)}
}

func (f *fleetLifecycle) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

func (f *fleetLifecycle) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f.metrics() {
		ch <- m
	}
}

func (f *fleetLifecycle) metrics() []prometheus.Metric {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil && time.Since(f.at) < fleetLifecycleEvery {
		return f.last
	}
	v := f.s.Cur.Load()
	if v == nil {
		return nil
	}
	byLine, ok, err := f.s.ActiveByLine(context.Background(), v)
	if !ok || err != nil {
		if err != nil {
			f.s.Log.Warn("counting the fleet by line failed; exporting the last counts", "err", err)
		}
		return f.last
	}
	var out []prometheus.Metric
	for _, sv := range v.Snap.Sources() {
		src := sv.Source.Name
		n := map[lifecycle.Classification]int{}
		if t, err := v.Snap.Lifecycle(src); err == nil {
			for line, c := range byLine[src] {
				class := lifecycle.Supported
				if major, minor, err := lifecycle.ParseLine(line); err == nil {
					if l, ok := t.Of(major, minor); ok {
						class = l.Class
					}
				}
				n[class] += c
			}
		}
		for _, c := range []lifecycle.Classification{lifecycle.Supported, lifecycle.Deprecated, lifecycle.Expired} {
			out = append(out, prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, float64(n[c]), src, string(c)))
		}
	}
	f.at, f.last = time.Now(), out
	return out
}

// LineClusters counts the whole fleet's active clusters on line of
// source now (a line event's data).
func (s *Server) LineClusters(ctx context.Context, source, line string) (int, error) {
	v := s.Cur.Load()
	if v == nil {
		return 0, nil
	}
	byLine, _, err := s.ActiveByLine(ctx, v)
	return byLine[source][line], err
}
