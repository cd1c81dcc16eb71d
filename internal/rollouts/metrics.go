package rollouts

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// rolloutStates are every state tidemark_rollout_state reports, so that
// the current one is 1 and the others 0 (an alert can test == 1).
var rolloutStates = []resolver.RolloutState{resolver.RolloutRunning, resolver.RolloutPaused, resolver.RolloutHalted, resolver.RolloutComplete}

// rolloutCollector reports each channel's rollout at scrape time: steps
// pass with the clock, not with snapshots.
type rolloutCollector struct {
	snapshot       func() *snapshot.Snapshot
	percent, state *prometheus.Desc
}

// NewCollector reports the rollouts of the snapshot being served.
func NewCollector(snapshot func() *snapshot.Snapshot) prometheus.Collector {
	return &rolloutCollector{
		snapshot: snapshot,
		percent: prometheus.NewDesc("tidemark_rollout_percent",
			"Percent of a channel's clusters (by bucket) its rollout sends the new version; 0 while halted; 100 for a channel without a rollout.", []string{"channel"}, nil),
		state: prometheus.NewDesc("tidemark_rollout_state",
			"1 for the state a channel's rollout is in (running, paused, halted, complete; none for a channel without a rollout), 0 for the others.", []string{"channel", "state"}, nil),
	}
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.percent
	ch <- c.state
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.snapshot()
	if snap == nil {
		return
	}
	now := time.Now()
	for _, a := range snap.Channels() {
		// A channel whose rollouts are enabled but which has not rolled
		// anything out yet (a baseline) is complete: everyone has its
		// version.
		rv := a.Rollout
		name := a.Channel.Name
		if rv == nil {
			// No rollout: every cluster gets the channel's answer. Said
			// outright, so that rules and dashboards match every channel.
			ch <- prometheus.MustNewConstMetric(c.percent, prometheus.GaugeValue, 100, name)
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, 1, name, "none")
			continue
		}
		p := rv.Progress(now)
		ch <- prometheus.MustNewConstMetric(c.percent, prometheus.GaugeValue, float64(p.Percent), name)
		for _, st := range rolloutStates {
			val := 0.0
			if st == p.State {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, val, name, string(st))
		}
	}
}
