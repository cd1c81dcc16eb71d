package snapshot

import (
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// gate evaluates v's release gates at now, and notes when a soak that
// holds it ends.
func (idx *sourceIndex) gate(v *resolver.VersionView, now time.Time) {
	g := idx.view.Source.Gates
	v.Gates, v.Servable = resolver.EvaluateGates(g, &v.Tag, now, nil)
	if v.Gates == nil {
		return
	}
	v.RegistryHeld = v.Gates.Platforms != "" && v.Gates.Platforms != resolver.GateOK ||
		v.Gates.Signature != "" && v.Gates.Signature != resolver.GateOK
	v.GatesUnchecked = (len(g.Platforms) > 0 || g.SignatureKeyFile != "") && !v.Tag.Gates.For(g, v.Digest)
	if g.Soak > 0 {
		idx.noteSoak(v.FirstSeen.Add(g.Soak), now)
	}
}

func (idx *sourceIndex) noteSoak(end, now time.Time) {
	if end.After(now) && (idx.soakEnd.IsZero() || end.Before(idx.soakEnd)) {
		idx.soakEnd = end
	}
}

// soakEnds finds, per source, the earliest end of a soak holding one of its
// versions: the source's own (noted when it was indexed, which may be
// before now when Apply kept the index) or a channel's.
func soakEnds(sources []*sourceIndex, channels []catalog.Channel, bySource map[string]*sourceIndex, now time.Time) map[string]time.Time {
	ends := map[string]time.Time{}
	note := func(src string, end time.Time) {
		if cur, ok := ends[src]; !ok || end.Before(cur) {
			ends[src] = end
		}
	}
	for _, idx := range sources {
		if !idx.soakEnd.IsZero() {
			note(idx.view.Source.Name, idx.soakEnd)
		}
	}
	for i := range channels {
		c := &channels[i]
		if c.Soak == nil || *c.Soak <= 0 {
			continue // most channels: no lookup
		}
		idx := bySource[c.Source]
		if idx == nil {
			continue
		}
		for j := range idx.versions {
			v := &idx.versions[j]
			if end := v.FirstSeen.Add(*c.Soak); !v.RegistryHeld && end.After(now) {
				note(c.Source, end)
			}
		}
	}
	return ends
}

// SoakEnds maps each source to the earliest moment at which a version of
// it finishes a soak and may be served: the snapshot answers as of when it
// was built, so whoever holds it builds the source again then (a moment
// already past means now). Sources with no soak running are not listed.
func (s *Snapshot) SoakEnds() map[string]time.Time { return s.soakEnds }
