package snapshot

import (
	"slices"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// RolloutView is a channel's rollout as the snapshot serves it: the
// stored rollout, folded, with its versions looked up. A version that is
// not servable (blocked, held by a gate, gone) is skipped: a cluster gets the next one of
// its rings, then from, then the channel's own answer.
type RolloutView struct {
	resolver.Rollout
	phase    resolver.Phase
	to, from *resolver.Tag
	carried  []carriedTag
	fallback *resolver.Tag
	// steps are a stepwise channel's next-step tables per destination
	// (stepwise.go), by the destination's canonical version.
	steps map[string]map[string]*resolver.Tag
}

type carriedTag struct {
	percent int
	tag     *resolver.Tag
}

// Progress is the rollout at t.
func (v *RolloutView) Progress(t time.Time) resolver.Progress { return v.ProgressAt(v.phase, t) }

// Dest is the version cluster ("" for a request without a cluster ID)
// gets at t: To when its bucket is below the percent, else what it had.
// A request without a cluster ID gets From until the rollout is complete.
// The cost is a hash and a few comparisons.
func (v *RolloutView) Dest(cluster string, t time.Time) *resolver.Tag {
	p := v.ProgressAt(v.phase, t)
	if p.State == resolver.RolloutComplete && v.to != nil {
		return v.to
	}
	if cluster != "" {
		b := resolver.Bucket(cluster, v.Channel)
		if p.State != resolver.RolloutHalted && v.to != nil && b < v.Steps[p.Step] {
			return v.to
		}
		for _, c := range v.carried {
			if b < c.percent && c.tag != nil {
				return c.tag
			}
		}
	}
	if v.from != nil {
		return v.from
	}
	return v.fallback
}

// Tags are the versions v may answer with (for precomputed answers).
func (v *RolloutView) Tags() []*resolver.Tag {
	out := []*resolver.Tag{v.to, v.from, v.fallback}
	for _, c := range v.carried {
		out = append(out, c.tag)
	}
	return slices.DeleteFunc(out, func(t *resolver.Tag) bool { return t == nil })
}
