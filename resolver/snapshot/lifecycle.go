package snapshot

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// classify sets s.lines (resolver/lifecycle: once per snapshot, a table
// carried while its source, policy and dates stand, never per request)
// and returns the sources whose table a passing date rebuilt.
func (s *Snapshot) classify(prev *lifecycle.Set, changed map[string]bool, policies map[string]lifecycle.Policy) []string {
	srcs := make([]lifecycle.Source, len(s.sources))
	for i, idx := range s.sources {
		srcs[i] = lifecycle.Source{Name: idx.view.Source.Name, Policy: idx.view.Source.Lifecycle, Changed: changed[idx.view.Source.Name],
			Versions: func() []resolver.VersionView { return idx.versions }}
	}
	var rebuilt []string
	s.lines, rebuilt = lifecycle.Classify(prev, srcs, s.LoadedAt, policies)
	return rebuilt
}

// Lines is every source's lines as classified when s was built.
func (s *Snapshot) Lines() *lifecycle.Set { return s.lines }

// TargetLine is the line of version (canonical or tag) on channel's
// source, for the one decision (door.Change.TargetLine); nil when unknown.
func (s *Snapshot) TargetLine(channel, version string) *lifecycle.Line {
	a, err := s.Channel(channel)
	if v, verr := s.Version(a.Channel.Source, version); err == nil && verr == nil {
		return s.lines.LineOf(a.Channel.Source, v.Version)
	}
	return nil
}
