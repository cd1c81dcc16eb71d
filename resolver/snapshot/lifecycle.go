package snapshot

import (
	"fmt"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// Lines: each source's lifecycle table, classified at the snapshot's
// LoadedAt. A table is built when its source is indexed, its policy
// changes or one of its dates passes (LifecycleNext says when, and the
// holder of the snapshot rebuilds it then), never per request: an answer
// reads its line's classification from a map.

// classify fills s.lines for every source: a table from prev is kept when
// its source was not re-indexed (changed), its policy is the same and no
// date of it has passed since. It returns the sources whose table it
// built again although changed does not name them: their channels are
// answered again too, so what an answer says of its line is never stale.
func (s *Snapshot) classify(prev *Snapshot, changed map[string]bool, policiesChanged bool) (rebuilt []string) {
	s.lines = make(map[string]*lifecycle.Table, len(s.sources))
	for _, idx := range s.sources {
		name := idx.view.Source.Name
		if prev != nil && !changed[name] && !policiesChanged {
			if t := prev.lines[name]; t != nil && (t.Next.IsZero() || s.LoadedAt.Before(t.Next)) {
				s.lines[name] = t
				continue
			}
		}
		s.lines[name] = lifecycle.Build(s.policies[name], idx.releasedLines(), s.LoadedAt)
		if prev != nil && !changed[name] {
			rebuilt = append(rebuilt, name)
		}
	}
	return rebuilt
}

// releasedLines are idx's lines, each with when its first released
// version was first indexed (zero: none released yet).
func (idx *sourceIndex) releasedLines() []lifecycle.Released {
	var out []lifecycle.Released
	at := map[[2]int]int{}
	for i := range idx.versions {
		v := &idx.versions[i]
		k := [2]int{v.Version.Major, v.Version.Minor}
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, lifecycle.Released{Major: k[0], Minor: k[1]})
		}
		if v.Stream != resolver.Released || v.FirstSeen == 0 {
			continue
		}
		if first := v.FirstSeen.Time(); out[j].FirstIndexed.IsZero() || first.Before(out[j].FirstIndexed) {
			out[j].FirstIndexed = first
		}
	}
	return out
}

// policiesOf maps each source's name to its lifecycle policy.
func policiesOf(sources []*sourceIndex) map[string]lifecycle.Policy {
	out := make(map[string]lifecycle.Policy, len(sources))
	for _, idx := range sources {
		out[idx.view.Source.Name] = idx.view.Source.Lifecycle
	}
	return out
}

// Lifecycle is source's lines as classified when s was built, newest first.
func (s *Snapshot) Lifecycle(source string) (*lifecycle.Table, error) {
	t, ok := s.lines[source]
	if !ok {
		return nil, fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	return t, nil
}

// LineOf is the line of v in source; nil when the source or line is unknown.
func (s *Snapshot) LineOf(source string, v resolver.Version) *lifecycle.Line {
	l, _ := s.lines[source].Of(v.Major, v.Minor)
	return l
}

// LifecycleNext maps each source to the first date after LoadedAt at
// which one of its lines changes classification; sources with none are
// absent. The holder of the snapshot rebuilds it then.
func (s *Snapshot) LifecycleNext() map[string]time.Time {
	out := map[string]time.Time{}
	for name, t := range s.lines {
		if !t.Next.IsZero() {
			out[name] = t.Next
		}
	}
	return out
}

// LifecycleChanges lists, per source, the lines that crossed into
// deprecated or expired between prev and s (lines prev did not have are
// no crossing: first indexed already past a date).
func (s *Snapshot) LifecycleChanges(prev *Snapshot) map[string][]lifecycle.Line {
	if prev == nil {
		return nil
	}
	var out map[string][]lifecycle.Line
	for name, t := range s.lines {
		if ls := t.Changed(prev.lines[name]); len(ls) > 0 {
			if out == nil {
				out = map[string][]lifecycle.Line{}
			}
			out[name] = ls
		}
	}
	return out
}

// TargetLine is the line of version (canonical or tag) on channel's
// source, for the one decision (door.Change.TargetLine): nil when the
// channel, the version or its line is unknown.
func (s *Snapshot) TargetLine(channel, version string) *lifecycle.Line {
	i, ok := s.byChannel[channel]
	if !ok {
		return nil
	}
	src := s.answers[i].Channel.Source
	v, err := s.Version(src, version)
	if err != nil {
		return nil
	}
	return s.LineOf(src, v.Version)
}

// Classified lists source's indexed versions (canonical) whose line is
// classified c: what a fleet filter by classification matches.
func (s *Snapshot) Classified(source string, c lifecycle.Classification) []string {
	idx, t := s.bySource[source], s.lines[source]
	out := []string{}
	if idx == nil || t == nil {
		return out
	}
	for i := range idx.versions {
		v := &idx.versions[i].Version
		if l, ok := t.Of(v.Major, v.Minor); ok && l.Class == c {
			out = append(out, v.String())
		}
	}
	return out
}
