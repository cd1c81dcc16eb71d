package fleet

import (
	"context"
	"reflect"
	"sort"
	"time"
)

// Each channel's served set (resolver/snapshot) keeps the versions its
// active clusters were last answered: the doors that list a channel's
// versions (the registry view, the Renovate feed, the graph) read them
// from here, refreshed from Postgres every servedGap (fleet_served keeps
// them per minute as the records are written).

// activeServed is one refresh's versions served to active clusters.
type activeServed struct {
	gen       uint64
	byChannel map[string][]string
}

// servedLister is the store's FleetActiveServed (a store without it, as
// benches' in-memory ones, has no served set beyond the snapshot's).
type servedLister interface {
	FleetActiveServed(ctx context.Context, activeSince time.Time) (map[string][]string, error)
}

// ActiveServed is the versions channel last answered its active clusters
// (on any replica, as of the last refresh) and a generation that changes
// when any channel's list does, for caches keyed on it.
func (r *Recorder) ActiveServed(channel string) ([]string, uint64) {
	as := r.served.Load()
	if as == nil {
		return nil, 0
	}
	return as.byChannel[channel], as.gen
}

func (r *Recorder) refreshServed(ctx context.Context, log func(msg string, args ...any)) {
	sl, ok := r.opts.Store.(servedLister)
	if !ok {
		return
	}
	m, err := sl.FleetActiveServed(ctx, time.Now().Add(-r.opts.ActiveWindow))
	if err != nil {
		if ctx.Err() == nil {
			log("listing versions served to active clusters failed", "err", err)
		}
		return
	}
	for _, vs := range m {
		sort.Strings(vs)
	}
	prev := r.served.Load()
	if prev != nil && reflect.DeepEqual(prev.byChannel, m) {
		return
	}
	next := &activeServed{byChannel: m}
	if prev != nil {
		next.gen = prev.gen + 1
	} else {
		next.gen = 1
	}
	r.served.Store(next)
	if fn := r.onServed.Load(); fn != nil {
		(*fn)()
	}
}

// OnServedChange calls fn after each refresh that changed some channel's
// versions served to active clusters (the signed answers publish them).
func (r *Recorder) OnServedChange(fn func()) { r.onServed.Store(&fn) }
