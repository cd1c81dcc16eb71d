package indexer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/metric"
)

// metrics are prefixed tidemark_indexer_ so that they never collide with the
// server's metrics on a shared registry.
type metrics struct {
	scans    *prometheus.CounterVec   // source, outcome
	duration *prometheus.HistogramVec // source
	requests *prometheus.CounterVec   // registry, code
	lastOK   *prometheus.GaugeVec     // source
	tags     *prometheus.GaugeVec     // source, state
	leader   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "tidemark", "indexer"
	m := &metrics{
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "scans_total",
			Help: "Scans of a source by outcome (ok, failed).",
		}, []string{"source", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "scan_duration_seconds",
			Help:    "Time from the start of a scan to its last digest written.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}, []string{"source"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "registry_requests_total",
			Help: "HTTP requests sent to registries (every attempt), by status code or \"error\".",
		}, []string{"registry", "code"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "last_successful_scan_timestamp_seconds",
			Help: "Unix time at which the last successful scan of a source finished.",
		}, []string{"source"}),
		tags: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "tags",
			Help: "Tags in the last complete listing by state (valid, unparsed), and tags whose digest is still to be resolved (pending_digest, lowered as digests are recorded).",
		}, []string{"source", "state"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "leader",
			Help: "1 while this replica holds the indexer lock and runs the schedule, else 0.",
		}),
	}
	if err := metric.Register(reg, "indexer", m.scans, m.duration, m.requests, m.lastOK, m.tags, m.leader); err != nil {
		return nil, err
	}
	return m, nil
}
