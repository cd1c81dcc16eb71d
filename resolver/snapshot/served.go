package snapshot

import (
	"fmt"
	"sort"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The served set: at any instant, the versions Tidemark may direct a
// cluster of a channel to. Every door that lists or derives a channel's
// versions reads it (the registry view's channels/<c>, the Renovate feed,
// the update graph), so that a client taking the newest listed version is
// never moved below one the channel still serves.

// ServedSet is channel's served set at now: the answer to a request that
// reports nothing; a running rollout's from, to and carried rings (a
// finished rollout's from leaves it); and active, the versions the fleet
// says this channel last answered its active clusters (what a change to
// an older version without rollback still serves them, what a risk or a
// blocked version steered one to), each counted while servable. Newest
// last. ErrNotFound for an unknown channel.
func (s *Snapshot) ServedSet(channel string, active []string, now time.Time) ([]resolver.Tag, error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return nil, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, channel)
	}
	a := &s.answers[i]
	idx := s.bySource[a.Channel.Source]
	seen := map[string]bool{}
	var out []resolver.Tag
	add := func(t *resolver.Tag) {
		if t != nil && !seen[t.Version.String()] {
			seen[t.Version.String()] = true
			out = append(out, *t)
		}
	}
	add(a.Tag)
	if rv := a.Rollout; rv != nil {
		add(rv.to)
		for _, c := range rv.carried {
			add(c.tag)
		}
		if rv.Progress(now).State != resolver.RolloutComplete {
			add(rv.from)
		}
	}
	if idx != nil {
		f := s.filters[i]
		for _, v := range active {
			if vv, ok := idx.lookup(v); ok && !vv.Blocked && f.Servable(vv) {
				add(&vv.Tag)
			}
		}
	}
	sort.Slice(out, func(x, y int) bool { return resolver.Compare(out[x].Version, out[y].Version) < 0 })
	return out, nil
}

// ServableWithin lists the versions a door shows for channel: every
// version of its served set, and every eligible, servable version not
// newer than the newest in it, ascending.
func (s *Snapshot) ServableWithin(channel string, active []string, now time.Time) ([]resolver.VersionView, error) {
	set, err := s.ServedSet(channel, active, now)
	if err != nil {
		return nil, err
	}
	i := s.byChannel[channel]
	a := &s.answers[i]
	idx := s.bySource[a.Channel.Source]
	out := []resolver.VersionView{}
	if len(set) == 0 || idx == nil {
		return out, nil
	}
	top := set[len(set)-1].Version
	member := make(map[string]bool, len(set))
	for _, t := range set {
		member[t.Version.String()] = true
	}
	f := s.filters[i]
	for j := range idx.versions {
		v := &idx.versions[j]
		if resolver.Compare(v.Version, top) > 0 {
			break
		}
		if member[v.Version.String()] || f.WhyNot(v) == "" {
			out = append(out, *v)
		}
	}
	return out, nil
}
