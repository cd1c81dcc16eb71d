// Package loop says once how Tidemark's background work runs: a pass,
// every tick and whenever something kicks it, on every replica or on the
// indexing leader only, its passes counted and timed. The loops
// (governor, rollouts, ...) say what their pass does and nothing else.
package loop

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/metric"
)

// Loop is one kind of background work.
type Loop struct {
	// Name labels its metrics ("governor", "rollouts-lead").
	Name string
	// Every is the tick.
	Every time.Duration
	// Kick asks for a pass now (a snapshot swapped, a freeze declared);
	// nil: ticks only. Kicked, when set, says whether a kick is worth a
	// pass (nil: always).
	Kick   <-chan struct{}
	Kicked func() bool
	// Leading, when set, runs the pass only while it is true (the
	// indexing leader's work); nil: on every replica.
	Leading func() bool
	// First runs a pass at once, before the first tick.
	First bool
	// Pass is the work.
	Pass func(ctx context.Context)
	// Metrics counts and times the passes; nil: none.
	Metrics *Metrics
}

// Run runs passes until ctx ends.
func (l Loop) Run(ctx context.Context) {
	t := time.NewTicker(l.Every)
	defer t.Stop()
	if l.First {
		l.pass(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.Kick:
			if l.Kicked != nil && !l.Kicked() {
				continue
			}
		}
		l.pass(ctx)
	}
}

func (l Loop) pass(ctx context.Context) {
	if l.Leading != nil && !l.Leading() {
		return
	}
	start := time.Now()
	l.Pass(ctx)
	if m := l.Metrics; m != nil {
		m.passes.WithLabelValues(l.Name).Inc()
		m.seconds.WithLabelValues(l.Name).Observe(time.Since(start).Seconds())
	}
}

// NewKick is a kick channel: Kick on it never blocks, and kicks that come
// while a pass runs are one.
func NewKick() chan struct{} { return make(chan struct{}, 1) }

// Kick asks k for a pass without blocking.
func Kick(k chan struct{}) {
	select {
	case k <- struct{}{}:
	default:
	}
}

// Metrics are the passes of every loop of a replica, by loop name.
type Metrics struct {
	passes  *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

// NewMetrics registers tidemark_loop_passes_total and
// tidemark_loop_pass_seconds with reg (nil: kept, not registered).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		passes:  metric.CounterVec("tidemark_loop_passes_total", "Passes of each background loop (governor, rollouts-lead, rollouts-count, promotion) this replica ran.", "loop"),
		seconds: metric.HistogramVec("tidemark_loop_pass_seconds", "Time one pass of a background loop took.", []float64{.001, .005, .025, .1, .5, 2.5, 10}, "loop"),
	}
	if err := metric.Register(reg, "loop", m.passes, m.seconds); err != nil {
		return nil, err
	}
	return m, nil
}
