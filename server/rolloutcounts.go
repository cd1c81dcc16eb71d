package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// The channel object carries its rollout with the fleet's counts, like
// GET .../rollout, but is answered from the snapshot without the database.
// So each replica counts every rollout's clusters off the request path,
// every RolloutOptions.CountEvery and as soon as a new rollout appears, in
// one query, and the channel object shows the last counts taken.

const defaultCountEvery = 15 * time.Second

// rolloutKey is what a rollout's counts depend on.
type rolloutKey struct{ channel, from, to string }

func keyOf(r *resolver.Rollout) rolloutKey { return rolloutKey{r.Channel, r.From, r.To} }

// rolloutCounts are the last counts taken, replaced whole by each refresh
// and read without a lock.
type rolloutCounts struct {
	m atomic.Pointer[map[rolloutKey]openapi.RolloutClusters]
}

// of is r's last counts; nil when none was taken yet.
func (rc *rolloutCounts) of(r *resolver.Rollout) *openapi.RolloutClusters {
	if rc == nil {
		return nil
	}
	m := rc.m.Load()
	if m == nil {
		return nil
	}
	c, ok := (*m)[keyOf(r)]
	if !ok {
		return nil
	}
	return &c
}

// clusters is the counts of e's rollout; nil when it has none (or only a
// baseline) or none was taken yet.
func (e *channelEntry) clusters() *openapi.RolloutClusters {
	rv := e.ans.Rollout
	if rv == nil || rv.Baseline {
		return nil
	}
	return e.counts.of(&rv.Rollout)
}

// kickRolloutCounts asks for a refresh after a snapshot change; it never
// blocks.
func (s *Server) kickRolloutCounts() {
	select {
	case s.countKick <- struct{}{}:
	default:
	}
}

// countRollouts keeps the rollout counts current until ctx ends: every
// CountEvery, and after a snapshot change that brought a rollout with no
// counts yet.
func (s *Server) countRollouts(ctx context.Context) {
	every := s.opts.Rollouts.CountEvery
	if every <= 0 {
		every = defaultCountEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		if err := s.refreshRolloutCounts(ctx); err != nil && ctx.Err() == nil {
			if !failing {
				s.log.Warn("counting rollouts' clusters failed; channel objects show the last counts", "err", err)
			}
			failing = true
		} else if err == nil {
			failing = false
		}
		for wait := true; wait; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				wait = false
			case <-s.countKick:
				wait = !s.countsMissing()
			}
		}
	}
}

// rollouts are the current view's rollouts the channel object shows.
func (s *Server) rollouts() []*resolver.Rollout {
	v := s.cur.Load()
	if v == nil {
		return nil
	}
	var out []*resolver.Rollout
	for _, e := range v.list {
		if rv := e.ans.Rollout; rv != nil && !rv.Baseline {
			out = append(out, &rv.Rollout)
		}
	}
	return out
}

// countsMissing reports whether a rollout of the current view has no
// counts yet.
func (s *Server) countsMissing() bool {
	for _, r := range s.rollouts() {
		if s.rolloutCounts.of(r) == nil {
			return true
		}
	}
	return false
}

// refreshRolloutCounts counts every rollout's clusters on its to and from
// in one query and installs them; on failure the last counts stay.
func (s *Server) refreshRolloutCounts(ctx context.Context) error {
	rs := s.rollouts()
	keys := make([]resolver.ChannelVersion, 0, 2*len(rs))
	for _, r := range rs {
		keys = append(keys, resolver.ChannelVersion{Channel: r.Channel, Version: r.To}, resolver.ChannelVersion{Channel: r.Channel, Version: r.From})
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DBTimeout)
	defer cancel()
	served, err := s.opts.Rollouts.Store.ServedCounts(ctx, keys)
	if err != nil {
		return err
	}
	m := make(map[rolloutKey]openapi.RolloutClusters, len(rs))
	for _, r := range rs {
		m[keyOf(r)] = openapi.RolloutClusters{
			To:   served[resolver.ChannelVersion{Channel: r.Channel, Version: r.To}],
			From: served[resolver.ChannelVersion{Channel: r.Channel, Version: r.From}],
		}
	}
	s.rolloutCounts.m.Store(&m)
	return nil
}
