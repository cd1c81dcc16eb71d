package snapshot

import (
	"sort"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// Moving a fleet off an expired line (lifecycle: {upgrade_expired: true}
// on a channel). A cluster reporting a version R whose line has expired
// is directed to the newest version of the next line after R's that the
// channel serves and that is not newer than the channel's answer: one
// minor at a time, as a stepwise channel climbs. Only inside the
// channel's windows, when it has any, and never while a freeze holds it:
// then the cluster stays at R, held for the window or the freeze.

// ForcedExpired is what ClusterAnswer's caller records of a forced
// answer (the fleet record's "forced", the forced answers' counter).
const ForcedExpired = "expired"

// HeldWindow and HeldFreeze are why a cluster on an expired line stays
// where it is on a channel that would move it off.
const (
	HeldWindow = "window"
	HeldFreeze = "freeze"
)

// forcedExpired is channel's forced answer to q: ok is false when the
// channel does not move clusters off expired lines, q's line has not
// expired, or no version of the next line is one the channel may give it
// (the usual answer stands). held is HeldWindow or HeldFreeze when the
// cluster stays at its version.
func (s *Snapshot) forcedExpired(channel string, q Asker) (t resolver.Tag, held string, ok bool) {
	i, found := s.byChannel[channel]
	if !found || !q.HasReported {
		return resolver.Tag{}, "", false
	}
	a := &s.answers[i]
	if !a.Channel.UpgradeExpired || a.Tag == nil {
		return resolver.Tag{}, "", false
	}
	src := a.Channel.Source
	l := s.LineOf(src, q.Reported)
	if l == nil || l.Class != lifecycle.Expired || l.Successor == "" {
		return resolver.Tag{}, "", false
	}
	next, ok := s.nextLineVersion(i, q, l.Successor)
	if !ok {
		return resolver.Tag{}, "", false
	}
	switch {
	case a.State.Hold != nil && a.State.Hold.Reason != HeldWindow:
		return s.versionTag(src, q.Reported), HeldFreeze, true
	case !resolver.InWindow(a.Channel.Windows, q.Now):
		return s.versionTag(src, q.Reported), HeldWindow, true
	}
	return next, "", true
}

// nextLineVersion is the newest version of line (the successor of the
// asker's) that channel i's rule allows, not newer than its answer.
func (s *Snapshot) nextLineVersion(i int, q Asker, line string) (resolver.Tag, bool) {
	a := &s.answers[i]
	idx := s.bySource[a.Channel.Source]
	major, minor, err := lifecycle.ParseLine(line)
	if idx == nil || err != nil {
		return resolver.Tag{}, false
	}
	f := s.filters[i]
	f.Builds = f.Builds || q.Reported.Build > 0
	vs := idx.versions
	hi := sort.Search(len(vs), func(k int) bool { return resolver.Compare(vs[k].Version, a.Tag.Version) > 0 })
	for k := hi - 1; k >= 0; k-- {
		v := &vs[k]
		if v.Version.Major < major || v.Version.Major == major && v.Version.Minor < minor {
			break
		}
		if v.Version.Major == major && v.Version.Minor == minor && f.OK(v) {
			return v.Tag, true
		}
	}
	return resolver.Tag{}, false
}

// Forced says whether t, ClusterAnswer's answer to q on channel, was a
// forced move off an expired line: ForcedExpired, else "".
func (s *Snapshot) Forced(channel string, q Asker, t resolver.Tag) string {
	if f, held, ok := s.forcedExpired(channel, q); ok && held == "" && resolver.Compare(f.Version, t.Version) == 0 {
		return ForcedExpired
	}
	return ""
}
