package snapshot

import (
	"fmt"
	"sort"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// A stepwise channel (CONTRACT section 6) answers each cluster with its
// next step toward the channel's version C from the version R it reports:
// R itself when C is not newer or is another major (never a downgrade, never
// across a major), else the target /api/v1/resolve?channel=...&current=R
// gives. The rule is resolution.step, shared with Resolve.
//
// The answer for every indexed version is computed when the snapshot is
// built (stepTable), so a request costs a map lookup. A version that is not
// indexed (a cluster runs something never pushed here, or since deleted)
// is resolved on demand: one pass over the source's versions, bounded.

// Reported is what a cluster says it runs on channel, read with the
// channel's source's scheme: an indexed version or tag, else anything the
// scheme parses. ok is false for an unknown channel or an unparseable
// version, which count as not reported.
func (s *Snapshot) Reported(channel, versionOrTag string) (resolver.Version, bool) {
	i, ok := s.byChannel[channel]
	if !ok || versionOrTag == "" {
		return resolver.Version{}, false
	}
	idx := s.bySource[s.answers[i].Channel.Source]
	if idx == nil {
		return resolver.Version{}, false
	}
	v, err := idx.current(versionOrTag)
	return v, err == nil
}

// NextStep is the version a stepwise channel sends a cluster that reports
// reported (parsed by Reported). ErrNotFound for an unknown channel or one
// that serves nothing. Settling is the caller's business: it knows since
// when the cluster has reported its version.
func (s *Snapshot) NextStep(channel string, reported resolver.Version) (resolver.Version, error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return resolver.Version{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, channel)
	}
	if s.answers[i].Tag == nil {
		return resolver.Version{}, fmt.Errorf("%w: channel %q has no eligible version", resolver.ErrNotFound, channel)
	}
	return stepVersion(s.nextStep(i, reported), reported), nil
}

// stepVersion is a step's version: t's, or reported's when t is nil (stay).
func stepVersion(t *resolver.Tag, reported resolver.Version) resolver.Version {
	if t == nil {
		return reported
	}
	return t.Version
}

// nextStep is NextStep for channel i, which has an answer: the tag to step
// to, nil to stay.
func (s *Snapshot) nextStep(i int, reported resolver.Version) *resolver.Tag {
	a := &s.answers[i]
	c := a.Tag.Version
	if c.Major != reported.Major || resolver.Compare(c, reported) <= 0 {
		return nil
	}
	if t, ok := s.steps[i][reported.String()]; ok {
		return t
	}
	idx := s.bySource[a.Channel.Source]
	f := s.filters[i]
	f.Builds = f.Builds || reported.Build > 0 // as Resolve does
	r := resolution{cur: reported, idx: idx, ch: a, f: f}
	r.collect()
	if v := r.step(); v != nil {
		return &v.Tag
	}
	return nil
}

// stepTable precomputes channel i's next step for every indexed version of
// its version's major below it, keyed by canonical string; a nil value
// means "stay". One collect from the oldest version of the major, narrowed
// per version (resolution.above): O(n log n), not a resolve per version.
func (s *Snapshot) stepTable(i int) map[string]*resolver.Tag {
	a := &s.answers[i]
	if !a.Channel.Stepwise || a.Tag == nil {
		return nil
	}
	return s.stepTableFor(a, s.filters[i])
}

// stepTableFor is stepTable toward a's version with filter f.
func (s *Snapshot) stepTableFor(a *ChannelAnswer, f catalog.Filter) map[string]*resolver.Tag {
	idx := s.bySource[a.Channel.Source]
	if idx == nil {
		return nil
	}
	c := a.Tag.Version
	vs := idx.versions
	lo := sort.Search(len(vs), func(k int) bool { return vs[k].Version.Major >= c.Major })
	if lo == len(vs) || vs[lo].Version.Major != c.Major {
		return nil
	}
	base := resolution{cur: vs[lo].Version, idx: idx, ch: a, f: f}
	base.collect()
	table := make(map[string]*resolver.Tag)
	for k := lo; k < len(vs) && resolver.Compare(vs[k].Version, c) < 0; k++ {
		r := vs[k].Version
		if r.Build > 0 && !f.Builds && r.Scheme() == resolver.SchemeJuju {
			// Resolve lets builds in for a client on a build: another
			// filter, answered on demand.
			continue
		}
		var next *resolver.Tag
		nr := base.above(r)
		if t := nr.step(); t != nil {
			next = &t.Tag
		}
		table[r.String()] = next
	}
	return table
}

// toward is channel i's answer aimed at dest instead of its version: a
// pin of dest, so that resolution steps toward dest and no further (the
// pin is offered even when the channel's filters would not select it, as
// a rollout's from may be a version the stream has moved past).
func (s *Snapshot) toward(i int, dest *resolver.Tag) *ChannelAnswer {
	a := s.answers[i]
	a.Tag, a.Pinned = dest, true
	return &a
}

// rolloutSteps precomputes a stepwise rollout channel's next-step tables
// toward every version its rollout may send a cluster to.
func (s *Snapshot) rolloutSteps(i int, rv *RolloutView) {
	a := &s.answers[i]
	if !a.Channel.Stepwise {
		return
	}
	rv.steps = make(map[string]map[string]*resolver.Tag)
	for _, t := range rv.Tags() {
		if c := t.Version.String(); rv.steps[c] == nil {
			rv.steps[c] = s.stepTableFor(s.toward(i, t), s.filters[i])
		}
	}
}

// NextStepToward is NextStep with the destination a rollout chose for the
// cluster (RolloutView.Dest) in place of the channel's version: the
// rollout decides where a cluster goes, the stepwise rule how it climbs.
func (s *Snapshot) NextStepToward(channel string, reported resolver.Version, dest *resolver.Tag) (resolver.Version, error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return resolver.Version{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, channel)
	}
	if s.answers[i].Tag == nil {
		return resolver.Version{}, fmt.Errorf("%w: channel %q has no eligible version", resolver.ErrNotFound, channel)
	}
	return stepVersion(s.nextStepToward(i, reported, dest), reported), nil
}

// nextStepToward is NextStepToward for channel i, which has an answer: the
// tag to step to, nil to stay.
func (s *Snapshot) nextStepToward(i int, reported resolver.Version, dest *resolver.Tag) *resolver.Tag {
	a := &s.answers[i]
	if dest == nil || dest.Version.String() == a.Tag.Version.String() {
		return s.nextStep(i, reported)
	}
	d := dest.Version
	if d.Major != reported.Major || resolver.Compare(d, reported) <= 0 {
		return nil
	}
	if a.Rollout != nil {
		if t, ok := a.Rollout.steps[d.String()][reported.String()]; ok {
			return t
		}
	}
	f := s.filters[i]
	f.Builds = f.Builds || reported.Build > 0
	r := resolution{cur: reported, idx: s.bySource[a.Channel.Source], ch: s.toward(i, dest), f: f}
	if r.idx == nil {
		return nil
	}
	r.collect()
	if v := r.step(); v != nil {
		return &v.Tag
	}
	return nil
}
