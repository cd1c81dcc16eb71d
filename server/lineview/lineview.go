// Package lineview shows a source's lines (docs/lifecycle.md): a
// version's line as JSON, and the whole fleet's active clusters by the line
// of the version they report, for a source's lifecycle, the fleet summary,
// line events and the tidemark_fleet_lifecycle_clusters gauge. Counts come
// from Postgres (every replica's records), never a replica's memory.
package lineview

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/server/core"
)

// LineJSON is a version's lifecycle object from its line; nil for none.
func LineJSON(l *lifecycle.Line) *openapi.VersionLifecycle {
	if l == nil {
		return nil
	}
	return &openapi.VersionLifecycle{Line: l.Line, Classification: string(l.Class), End: TimeOrNil(l.End), Successor: core.StrOrNil(l.Successor)}
}

// TimeOrNil is t in UTC, or nil when zero.
func TimeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// activeCounter counts the active clusters by channel and reported
// version (*store.Store).
type activeCounter interface {
	FleetActive(ctx context.Context, activeSince time.Time) (map[string][]resolver.VersionCount, error)
}

// Counter counts a server's fleet by line.
type Counter struct{ s *core.Server }

// For is s's counter.
func For(s *core.Server) Counter { return Counter{s: s} }

// ByLine counts the active clusters per source and line of the version
// they report, over every channel; ok is false when the fleet is not kept.
func (c Counter) ByLine(ctx context.Context, v *core.View) (map[string]map[string]int, bool, error) {
	ac, ok := c.s.Opts.Fleet.Store.(activeCounter)
	if !ok || c.s.FleetRec == nil {
		return nil, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.s.Opts.DBTimeout)
	defer cancel()
	active, err := ac.FleetActive(ctx, time.Now().Add(-c.s.FleetRec.ActiveWindow()))
	if err != nil {
		return nil, true, err
	}
	out := map[string]map[string]int{}
	for ch, counts := range active {
		e := v.Entry(ch)
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

// Of counts source's active clusters per line; empty (and logged) when the
// database is away: what asks still answers, without counts.
func (c Counter) Of(ctx context.Context, v *core.View, source string) map[string]int {
	byLine, _, err := c.ByLine(ctx, v)
	if err != nil {
		c.s.Log.WarnContext(ctx, "counting clusters per line failed; answering without them", "source", source, "err", err)
	}
	if byLine[source] == nil {
		return map[string]int{}
	}
	return byLine[source]
}

// Clusters counts the active clusters on line of source now (a line
// event's data).
func (c Counter) Clusters(ctx context.Context, source, line string) (int, error) {
	v := c.s.Cur.Load()
	if v == nil {
		return 0, nil
	}
	byLine, _, err := c.ByLine(ctx, v)
	return byLine[source][line], err
}

// Summary counts a channel's clusters by reported version (the fleet
// summary's versions) by their line's classification; a version of no
// known line counts as supported.
func Summary(v *core.View, channel string, counts []openapi.VersionCount) openapi.FleetLifecycle {
	var out openapi.FleetLifecycle
	e := v.Entry(channel)
	for _, c := range counts {
		class := lifecycle.Supported
		if rv, ok := v.Snap.Reported(channel, c.Version); ok && e != nil {
			if l := v.Snap.Lines().LineOf(e.Ans.Channel.Source, rv); l != nil {
				class = l.Class
			}
		}
		switch class {
		case lifecycle.Expired:
			out.Expired += c.Clusters
		case lifecycle.Deprecated:
			out.Deprecated += c.Clusters
		default:
			out.Supported += c.Clusters
		}
	}
	return out
}

// Collector is tidemark_fleet_lifecycle_clusters: the whole fleet's active
// clusters per source and classification of their line, read at most every
// 5 s, so every replica exports the same counts, at most that far behind.
type Collector struct {
	c    Counter
	log  *slog.Logger
	desc *prometheus.Desc
	mu   sync.Mutex
	at   time.Time
	last []prometheus.Metric
}

const collectEvery = 5 * time.Second

// NewCollector is s's gauge.
func NewCollector(s *core.Server) *Collector {
	return &Collector{c: For(s), log: s.Log, desc: prometheus.NewDesc("tidemark_fleet_lifecycle_clusters",
		"Active clusters of the whole fleet (every replica's records) by source and the classification of the line of the version they report (supported, deprecated, expired); at most 5 s old.",
		[]string{"source", "classification"}, nil)}
}

// Describe is prometheus.Collector's.
func (f *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

// Collect is prometheus.Collector's.
func (f *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f.metrics() {
		ch <- m
	}
}

func (f *Collector) metrics() []prometheus.Metric {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last != nil && time.Since(f.at) < collectEvery {
		return f.last
	}
	v := f.c.s.Cur.Load()
	if v == nil {
		return nil
	}
	byLine, ok, err := f.c.ByLine(context.Background(), v)
	if !ok || err != nil {
		if err != nil {
			f.log.Warn("counting the fleet by line failed; exporting the last counts", "err", err)
		}
		return f.last
	}
	var out []prometheus.Metric
	for _, sv := range v.Snap.Sources() {
		src := sv.Source.Name
		n := map[lifecycle.Classification]int{}
		t, _ := v.Snap.Lines().Table(src)
		for line, c := range byLine[src] {
			class := lifecycle.Supported
			if major, minor, err := lifecycle.ParseLine(line); err == nil {
				if l, ok := t.Of(major, minor); ok {
					class = l.Class
				}
			}
			n[class] += c
		}
		for _, c := range []lifecycle.Classification{lifecycle.Supported, lifecycle.Deprecated, lifecycle.Expired} {
			out = append(out, prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, float64(n[c]), src, string(c)))
		}
	}
	f.at, f.last = time.Now(), out
	return out
}

// Classified lists source's versions whose line is classified c: what a
// fleet listing's classification= matches.
func Classified(v *core.View, source string, c lifecycle.Classification) []string {
	vs, err := v.Snap.Versions(source, resolver.Testing, "")
	if err != nil {
		return []string{}
	}
	return v.Snap.Lines().Classified(source, vs, c)
}
