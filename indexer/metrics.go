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
	m := &metrics{
		scans: metric.CounterVec("tidemark_indexer_scans_total", "Scans of a source by outcome (ok, failed).", "source", "outcome"),
		duration: metric.HistogramVec("tidemark_indexer_scan_duration_seconds", "Time from the start of a scan to its last digest written.",
			prometheus.ExponentialBuckets(0.05, 2, 14), "source"),
		requests: metric.CounterVec("tidemark_indexer_registry_requests_total",
			"HTTP requests sent to registries (every attempt), by status code or \"error\".", "registry", "code"),
		lastOK: metric.GaugeVec("tidemark_indexer_last_successful_scan_timestamp_seconds",
			"Unix time at which the last successful scan of a source finished.", "source"),
		tags: metric.GaugeVec("tidemark_indexer_tags", "Tags in the last complete listing by state (valid, unparsed), and tags whose digest is still to be resolved (pending_digest, lowered as digests are recorded).",
			"source", "state"),
		leader: metric.Gauge("tidemark_indexer_leader", "1 while this replica holds the indexer lock and runs the schedule, else 0."),
	}
	if err := metric.Register(reg, "indexer", m.scans, m.duration, m.requests, m.lastOK, m.tags, m.leader); err != nil {
		return nil, err
	}
	return m, nil
}
