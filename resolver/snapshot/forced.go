package snapshot

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// ForcedExpired marks an answer that moved a cluster off an expired line
// (the fleet record's "forced", the forced answers' counter); HeldWindow
// and HeldFreeze are why such a cluster stays where it is.
const (
	ForcedExpired = "expired"
	HeldWindow    = "window"
	HeldFreeze    = "freeze"
)

// forcedExpired is the answer of a channel with upgrade_expired to a
// cluster on an expired line R: the newest version of the next line the
// channel serves, not newer than its answer (one minor at a time, as a
// stepwise channel climbs); R itself, held, outside its windows or under
// a freeze. ok is false when none of this applies: the usual answer stands.
func (s *Snapshot) forcedExpired(channel string, q Asker) (t resolver.Tag, held string, ok bool) {
	i, found := s.byChannel[channel]
	if !found || !q.HasReported || !s.answers[i].Channel.UpgradeExpired || s.answers[i].Tag == nil {
		return resolver.Tag{}, "", false
	}
	a, f := &s.answers[i], s.filters[i]
	l := s.lines.LineOf(a.Channel.Source, q.Reported)
	if l == nil || l.Class != lifecycle.Expired || l.Successor == "" {
		return resolver.Tag{}, "", false
	}
	f.Builds = f.Builds || q.Reported.Build > 0
	next, ok := lifecycle.NewestOfLine(s.bySource[a.Channel.Source].versions, l.Successor, a.Tag.Version, f.OK)
	switch {
	case !ok:
		return resolver.Tag{}, "", false
	case a.State.Hold != nil && a.State.Hold.Reason != HeldWindow:
		return s.versionTag(a.Channel.Source, q.Reported), HeldFreeze, true
	case !resolver.InWindow(a.Channel.Windows, q.Now):
		return s.versionTag(a.Channel.Source, q.Reported), HeldWindow, true
	}
	return next, "", true
}
