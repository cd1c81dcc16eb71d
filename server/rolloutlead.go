package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
)

// runRollouts is the indexing leader's part in rollouts, until ctx ends:
// after every snapshot change and every Rollouts.Every it records the
// rollouts that indexing started (a channel whose version moved away
// from its last rollout's) and audits the steps that have passed. Neither
// decides what anyone is served: progress is computed from the recorded
// start and events, so a leader that is late only makes the history late.
func (s *Server) runRollouts(ctx context.Context) {
	every := s.opts.Rollouts.Every
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.rolloutKick:
		}
		if s.opts.Rollouts.Leading() {
			s.leadRollouts(ctx)
		}
	}
}

func (s *Server) leadRollouts(ctx context.Context) {
	v := s.cur.Load()
	if v == nil {
		return
	}
	st := s.opts.Rollouts.Store
	now := time.Now()
	for _, e := range v.list {
		name := e.ans.Channel.Name
		if e.ans.State.Hold != nil {
			continue // held: its rollout waits for the window or the freeze's end
		}
		if start, ok := v.snap.PendingRollout(name); ok {
			started, err := st.StartRollout(ctx, start)
			if err != nil {
				s.log.Warn("could not start a rollout; retrying", "channel", name, "to", start.To, "err", err)
				continue
			}
			if started {
				s.log.Info("rollout started", "channel", name, "to", start.To, "baseline", start.Baseline)
				s.Notify(resolver.Change{Channel: name})
			}
			continue
		}
		rv := e.ans.Rollout
		if rv == nil || rv.Baseline {
			continue
		}
		p := rv.Progress(now)
		if p.Step <= rv.RecordedStep {
			continue
		}
		recorded, err := st.RecordRolloutStep(ctx, rv.Rollout, p.Step)
		if err != nil {
			s.log.Warn("could not record a rollout step; retrying", "channel", name, "step", p.Step+1, "err", err)
			continue
		}
		if recorded {
			what := "step"
			if p.State == resolver.RolloutComplete {
				what = "complete"
			}
			s.rolloutChanged(rv.Rollout, what, "tidemark", "")
			s.Notify(resolver.Change{Channel: name})
		}
	}
}

// kickRollouts wakes the leader after a snapshot change; it never blocks.
func (s *Server) kickRollouts() {
	select {
	case s.rolloutKick <- struct{}{}:
	default:
	}
}

// rolloutStates are every state tidemark_rollout_state reports, so that
// the current one is 1 and the others 0 (an alert can test == 1).
var rolloutStates = []resolver.RolloutState{resolver.RolloutRunning, resolver.RolloutPaused, resolver.RolloutHalted, resolver.RolloutComplete}

// rolloutCollector reports each channel's rollout at scrape time: steps
// pass with the clock, not with snapshots.
type rolloutCollector struct {
	cur            func() *view
	percent, state *prometheus.Desc
}

func newRolloutCollector(cur func() *view) *rolloutCollector {
	return &rolloutCollector{
		cur: cur,
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
	v := c.cur()
	if v == nil {
		return
	}
	now := time.Now()
	for _, e := range v.list {
		// A channel whose rollouts are enabled but which has not rolled
		// anything out yet (a baseline) is complete: everyone has its
		// version.
		rv := e.ans.Rollout
		name := e.ans.Channel.Name
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
