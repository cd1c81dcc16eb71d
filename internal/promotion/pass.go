package promotion

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// medianEvery is how long an adoption median is reused while its
// version's adopted count stays the same.
const medianEvery = time.Minute

type median struct {
	adopted int
	p50     float64
	at      time.Time
}

type passMetrics struct {
	seconds  prometheus.Histogram
	failures prometheus.Counter
	versions prometheus.Gauge
}

func newPassMetrics(reg prometheus.Registerer) (*passMetrics, error) {
	m := &passMetrics{
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidemark_evidence_pass_seconds",
			Help:    "Time the indexing leader took to compute every channel's evidence from the fleet's counters and save it.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_evidence_pass_failures_total",
			Help: "Evidence passes that failed (the database was unreachable or refused); the last saved evidence stays.",
		}),
		versions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidemark_evidence_versions",
			Help: "(channel, version) pairs the last evidence pass computed: versions told in the last 30 days.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.seconds, m.failures, m.versions} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// pass computes every channel's evidence at now from the counters the
// fleet keeps (one read of the active minutes' rows, the told times, the
// halts; medians only for versions whose adoption moved or is a minute
// old) and saves it for every replica to read.
func (l *Loop) pass(ctx context.Context, snap *snapshot.Snapshot, now time.Time) (map[string][]evidence.Version, error) {
	start := time.Now()
	by, err := l.compute(ctx, snap, now)
	if err != nil {
		l.m.failures.Inc()
		return nil, err
	}
	var all []resolver.Evidence
	for _, list := range by {
		all = append(all, list...)
	}
	if err := l.o.Store.SaveEvidence(ctx, all, now); err != nil {
		l.m.failures.Inc()
		return nil, err
	}
	l.m.seconds.Observe(time.Since(start).Seconds())
	l.m.versions.Set(float64(len(all)))
	return by, nil
}

func (l *Loop) compute(ctx context.Context, snap *snapshot.Snapshot, now time.Time) (map[string][]evidence.Version, error) {
	rows, told, err := l.o.Store.EvidenceCounts(ctx, now.Add(-l.o.ActiveWindow), now.Add(-l.o.StuckAfter))
	if err != nil {
		return nil, err
	}
	halts, err := l.o.Store.RolloutHalts(ctx)
	if err != nil {
		return nil, err
	}
	older := func(channel, x, y string) bool {
		vx, ok1 := snap.Reported(channel, x)
		vy, ok2 := snap.Reported(channel, y)
		return ok1 && ok2 && resolver.Compare(vx, vy) < 0
	}
	meds := make(map[resolver.ChannelVersion]float64, len(l.med))
	for k, m := range l.med {
		meds[k] = m.p50
	}
	by := evidence.Compute(rows, told, halts, meds, older, now.Add(-evidence.Days))
	var stale []resolver.ChannelVersion
	for _, list := range by {
		for _, ev := range list {
			k := resolver.ChannelVersion{Channel: ev.Channel, Version: ev.Version}
			if m, ok := l.med[k]; !ok || m.adopted != ev.Adopted || now.Sub(m.at) >= medianEvery {
				stale = append(stale, k)
			}
		}
	}
	if len(stale) == 0 {
		return by, nil
	}
	fresh, err := l.o.Store.AdoptionMedians(ctx, stale)
	if err != nil {
		return nil, err
	}
	keep := map[resolver.ChannelVersion]median{}
	for ch, list := range by {
		for i := range list {
			k := resolver.ChannelVersion{Channel: ch, Version: list[i].Version}
			if p, ok := fresh[k]; ok {
				list[i].AdoptionP50 = p
				keep[k] = median{adopted: list[i].Adopted, p50: p, at: now}
			} else if m, ok := l.med[k]; ok {
				keep[k] = m
			}
		}
	}
	l.med = keep
	return by, nil
}
