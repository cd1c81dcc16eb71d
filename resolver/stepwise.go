package resolver

import (
	"fmt"
	"sort"
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
func (s *Snapshot) Reported(channel, versionOrTag string) (Version, bool) {
	i, ok := s.byChannel[channel]
	if !ok || versionOrTag == "" {
		return Version{}, false
	}
	idx := s.bySource[s.answers[i].Channel.Source]
	if idx == nil {
		return Version{}, false
	}
	v, err := idx.current(versionOrTag)
	return v, err == nil
}

// NextStep is the version a stepwise channel sends a cluster that reports
// reported (parsed by Reported). ErrNotFound for an unknown channel or one
// that serves nothing. Settling is the caller's business: it knows since
// when the cluster has reported its version.
func (s *Snapshot) NextStep(channel string, reported Version) (Version, error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return Version{}, fmt.Errorf("%w: channel %q", ErrNotFound, channel)
	}
	a := &s.answers[i]
	if a.Tag == nil {
		return Version{}, fmt.Errorf("%w: channel %q has no eligible version", ErrNotFound, channel)
	}
	c := a.Tag.Version
	if c.Major != reported.Major || Compare(c, reported) <= 0 {
		return reported, nil
	}
	if t, ok := s.steps[i][reported.String()]; ok {
		if t == nil {
			return reported, nil
		}
		return t.Version, nil
	}
	idx := s.bySource[a.Channel.Source]
	f := s.filters[i]
	f.builds = f.builds || reported.Build > 0 // as Resolve does
	r := resolution{cur: reported, idx: idx, ch: a, f: f}
	r.collect()
	if t := r.step(); t != nil {
		return t.Version, nil
	}
	return reported, nil
}

// stepTable precomputes channel i's next step for every indexed version of
// its version's major below it, keyed by canonical string; a nil value
// means "stay". One collect from the oldest version of the major, narrowed
// per version (resolution.above): O(n log n), not a resolve per version.
func (s *Snapshot) stepTable(i int) map[string]*Tag {
	a := &s.answers[i]
	if !a.Channel.Stepwise || a.Tag == nil {
		return nil
	}
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
	f := s.filters[i]
	base := resolution{cur: vs[lo].Version, idx: idx, ch: a, f: f}
	base.collect()
	table := make(map[string]*Tag)
	for k := lo; k < len(vs) && Compare(vs[k].Version, c) < 0; k++ {
		r := vs[k].Version
		if r.Build > 0 && !f.builds && r.Scheme == SchemeJuju {
			// Resolve lets builds in for a client on a build: another
			// filter, answered on demand.
			continue
		}
		var next *Tag
		nr := base.above(r)
		if t := nr.step(); t != nil {
			next = &t.Tag
		}
		table[r.String()] = next
	}
	return table
}
