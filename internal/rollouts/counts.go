package rollouts

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/internal/loop"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// The channel object carries its rollout with the fleet's counts, like
// GET .../rollout, but is answered from the snapshot without the database.
// So each replica counts every rollout's clusters off the request path,
// every CountEvery and as soon as a new rollout appears, in one query, and
// the channel object shows the last counts taken.

const defaultCountEvery = 15 * time.Second

// key is what a rollout's counts depend on.
type key struct{ channel, from, to string }

func keyOf(r *resolver.Rollout) key { return key{r.Channel, r.From, r.To} }

// Counts are the last counts taken, replaced whole by each refresh and
// read without a lock. The zero value has none.
type Counts struct {
	m atomic.Pointer[map[key]openapi.RolloutClusters]
}

// Of is r's last counts; nil when none was taken yet (or c is nil).
func (c *Counts) Of(r *resolver.Rollout) *openapi.RolloutClusters {
	if c == nil {
		return nil
	}
	m := c.m.Load()
	if m == nil {
		return nil
	}
	n, ok := (*m)[keyOf(r)]
	if !ok {
		return nil
	}
	return &n
}

// count keeps the counts current until ctx ends: at once, every
// CountEvery, and after a snapshot change that brought a rollout with no
// counts yet.
func (l *Loops) count(ctx context.Context) {
	failing := false
	loop.Loop{Name: "rollouts-count", Every: l.opts.CountEvery, Kick: l.countKick, Kicked: l.missing, First: true,
		Metrics: l.opts.Loops, Pass: func(ctx context.Context) {
			if err := l.refresh(ctx); err != nil && ctx.Err() == nil {
				if !failing {
					l.opts.Log.Warn("counting rollouts' clusters failed; channel objects show the last counts", "err", err)
				}
				failing = true
			} else if err == nil {
				failing = false
			}
		}}.Run(ctx)
}

// rollouts are the current snapshot's rollouts the channel object shows.
func (l *Loops) rollouts() []*resolver.Rollout {
	snap := l.opts.Snapshot()
	if snap == nil {
		return nil
	}
	var out []*resolver.Rollout
	for _, a := range snap.Channels() {
		if rv := a.Rollout; rv != nil && !rv.Baseline {
			out = append(out, &rv.Rollout)
		}
	}
	return out
}

// missing reports whether a rollout being served has no counts yet.
func (l *Loops) missing() bool {
	for _, r := range l.rollouts() {
		if l.opts.Counts.Of(r) == nil {
			return true
		}
	}
	return false
}

// refresh counts every rollout's clusters on its to and from in one query
// and installs them; on failure the last counts stay.
func (l *Loops) refresh(ctx context.Context) error {
	rs := l.rollouts()
	keys := make([]resolver.ChannelVersion, 0, 2*len(rs))
	for _, r := range rs {
		keys = append(keys, resolver.ChannelVersion{Channel: r.Channel, Version: r.To}, resolver.ChannelVersion{Channel: r.Channel, Version: r.From})
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.DBTimeout)
	defer cancel()
	served, err := l.opts.Store.ServedCounts(ctx, keys)
	if err != nil {
		return err
	}
	m := make(map[key]openapi.RolloutClusters, len(rs))
	for _, r := range rs {
		m[keyOf(r)] = openapi.RolloutClusters{
			To:   served[resolver.ChannelVersion{Channel: r.Channel, Version: r.To}],
			From: served[resolver.ChannelVersion{Channel: r.Channel, Version: r.From}],
		}
	}
	l.opts.Counts.m.Store(&m)
	return nil
}
