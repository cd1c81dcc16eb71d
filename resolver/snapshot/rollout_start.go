package snapshot

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// RolloutStart asks the store to begin a rollout (or record a baseline).
type RolloutStart struct {
	Channel string
	// Prev is the rollout this one supersedes (0: none). The store starts
	// nothing when the channel's latest rollout is another one: a replica
	// that raced another to the same change, or acted on an older snapshot.
	Prev   int64
	Served string // what the channel served before: the from when there is no Prev
	To     string
	Policy resolver.RolloutPolicy
	// Baseline records what the channel serves as the from of its first
	// rollout (rollouts were just enabled on it); nothing rolls out.
	Baseline      bool
	Actor, Reason string
	// Unservable are the versions of the channel's latest rollout (its
	// from, to and carried layers) that are blocked or held by a gate now:
	// the new rollout names none of them (CONTRACT section 13).
	Unservable []string
}

// PendingRollout says, for a channel with a rollout policy, whether its
// version has moved away from its last rollout's (or was never recorded),
// and what to record. The indexing leader asks after every snapshot
// change: a version indexed moves a channel without any request.
func (s *Snapshot) PendingRollout(channel string) (RolloutStart, bool) {
	i, found := s.byChannel[channel]
	if !found {
		return RolloutStart{}, false
	}
	a := &s.answers[i]
	if a.Channel.Rollout == nil || a.Tag == nil {
		return RolloutStart{}, false
	}
	c := a.Tag.Version.String()
	st := RolloutStart{Channel: channel, Served: c, To: c, Policy: *a.Channel.Rollout, Actor: "tidemark"}
	prev := a.State.Rollout
	switch {
	case prev == nil:
		st.Baseline = true
		return st, true
	case prev.To == c:
		return RolloutStart{}, false
	}
	st.Prev, st.Served = prev.ID, prev.To
	st.Reason = fmt.Sprintf("channel %q now serves %s", channel, c)
	idx := s.bySource[a.Channel.Source]
	f := s.filters[i]
	for _, v := range append([]string{prev.From, prev.To}, layerVersions(prev.Carried)...) {
		if v == "" || v == c || slices.Contains(st.Unservable, v) {
			continue
		}
		if vv, ok := idx.lookupOK(v); !ok || vv.Blocked || !f.Servable(vv) {
			st.Unservable = append(st.Unservable, v)
		}
	}
	return st, true
}

func layerVersions(ls []resolver.Layer) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Version)
	}
	return out
}

// Begin is the rollout st starts at t after prev (the channel's latest
// rollout, nil when none): the store calls it inside its transaction.
func (st RolloutStart) Begin(prev *resolver.Rollout, t time.Time) resolver.Rollout {
	if st.Baseline {
		return resolver.Rollout{Channel: st.Channel, From: st.To, To: st.To, Steps: []int{100}, Interval: st.Policy.Interval, StartedAt: t, Baseline: true, Actor: st.Actor}
	}
	r := resolver.NewRollout(prev, st.Channel, st.Served, st.To, st.Policy, t)
	r.Actor, r.Reason = st.Actor, st.Reason
	// A layer on a version no longer servable is gone: its clusters get
	// what the others get. A from no longer servable (a block of what the
	// channel served, or of a rollout's from) leaves nothing to ramp from:
	// the change is complete at once, every cluster on To.
	r.Carried = slices.DeleteFunc(r.Carried, func(l resolver.Layer) bool { return slices.Contains(st.Unservable, l.Version) })
	if slices.Contains(st.Unservable, r.From) {
		r.Replaced = r.From
		r.From, r.Carried, r.Steps = r.To, nil, []int{100}
		r.Reason += "; " + fmt.Sprintf("%s is not servable, so every cluster moves at once", strings.Join(st.Unservable, ", "))
	}
	return r
}

// rolloutView builds a's rollout view from its state, or nil when the
// channel has no policy, no rollout yet, or only a baseline that matches.
func (s *Snapshot) rolloutView(a *ChannelAnswer, f catalog.Filter) *RolloutView {
	r := a.State.Rollout
	if a.Channel.Rollout == nil || r == nil {
		return nil
	}
	v := &RolloutView{Rollout: *r, phase: r.Folded(), fallback: a.Tag}
	idx := s.bySource[a.Channel.Source]
	servable := func(version string) *resolver.Tag {
		if idx == nil || version == "" {
			return nil
		}
		if a.Tag != nil && a.Tag.Version.String() == version {
			return a.Tag
		}
		// The channel's own rule: blocked and gated versions are skipped
		// as the channel skips them.
		if vv, ok := idx.lookup(version); ok && !vv.Blocked && f.Servable(vv) {
			return &vv.Tag
		}
		return nil
	}
	v.to, v.from = servable(r.To), servable(r.From)
	for _, l := range r.Carried {
		v.carried = append(v.carried, carriedTag{percent: l.Percent, tag: servable(l.Version)})
	}
	return v
}
