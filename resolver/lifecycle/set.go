package lifecycle

import (
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Set is every source's table classified at one moment: a snapshot's.
type Set struct {
	tables   map[string]*Table
	policies map[string]Policy // by source, as the tables were built
}

// Source is one source as Classify reads it: its policy as indexed (a
// reload's policies override it) and its versions (ascending, valid), read
// only when its table is built again.
type Source struct {
	Name     string
	Policy   Policy
	Changed  bool // re-indexed since prev: its table is built again
	Versions func() []resolver.VersionView
}

// Classify builds the set at now. policies, when non-nil, replace every
// source's (a configuration reload). A table of prev is kept when its
// source did not change, policies is nil and no date of it has passed;
// rebuilt names the sources whose table was built again though they did
// not change (a date passed: their answers must be too).
func Classify(prev *Set, sources []Source, now time.Time, policies map[string]Policy) (set *Set, rebuilt []string) {
	set = &Set{tables: make(map[string]*Table, len(sources)), policies: make(map[string]Policy, len(sources))}
	for _, src := range sources {
		p, kept := src.Policy, false
		switch {
		case policies != nil:
			p = policies[src.Name]
		case prev != nil && !src.Changed:
			p, kept = prev.policies[src.Name], true
		}
		set.policies[src.Name] = p
		if t := prev.table(src.Name); kept && t != nil && (t.Next.IsZero() || now.Before(t.Next)) {
			set.tables[src.Name] = t
			continue
		}
		set.tables[src.Name] = Build(p, LinesOf(src.Versions()), now)
		if prev != nil && !src.Changed {
			rebuilt = append(rebuilt, src.Name)
		}
	}
	return set, rebuilt
}

// LinesOf are the lines of vs (ascending), each with when its first
// released version was first indexed (zero: none released yet).
func LinesOf(vs []resolver.VersionView) []Released {
	var out []Released
	at := map[[2]int]int{}
	for i := range vs {
		v := &vs[i]
		k := [2]int{v.Version.Major, v.Version.Minor}
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, Released{Major: k[0], Minor: k[1]})
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

func (s *Set) table(source string) *Table {
	t, _ := s.Table(source)
	return t
}

// Table is source's table; ok is false for a source the set lacks.
func (s *Set) Table(source string) (*Table, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.tables[source]
	return t, ok
}

// LineOf is the line of v in source; nil when the source or line is unknown.
func (s *Set) LineOf(source string, v resolver.Version) *Line {
	t, _ := s.Table(source)
	l, _ := t.Of(v.Major, v.Minor)
	return l
}

// Next maps each source to the first date after the set's moment at which
// one of its lines changes classification; sources with none are absent.
func (s *Set) Next() map[string]time.Time {
	out := map[string]time.Time{}
	if s == nil {
		return out
	}
	for name, t := range s.tables {
		if !t.Next.IsZero() {
			out[name] = t.Next
		}
	}
	return out
}

// Changes lists, per source, the lines that crossed into deprecated or
// expired between prev and s (a line prev lacked is no crossing).
func (s *Set) Changes(prev *Set) map[string][]Line {
	if s == nil || prev == nil {
		return nil
	}
	var out map[string][]Line
	for name, t := range s.tables {
		if ls := t.Changed(prev.tables[name]); len(ls) > 0 {
			if out == nil {
				out = map[string][]Line{}
			}
			out[name] = ls
		}
	}
	return out
}

// Classified lists the versions of vs (source's) whose line is classified c.
func (s *Set) Classified(source string, vs []resolver.VersionView, c Classification) []string {
	out := []string{}
	t, ok := s.Table(source)
	if !ok {
		return out
	}
	for i := range vs {
		if l, ok := t.Of(vs[i].Version.Major, vs[i].Version.Minor); ok && l.Class == c {
			out = append(out, vs[i].Version.String())
		}
	}
	return out
}

// NewestOfLine is the newest of vs (ascending) on line that ok accepts and
// that is not newer than top: where a cluster leaving an expired line goes.
func NewestOfLine(vs []resolver.VersionView, line string, top resolver.Version, ok func(*resolver.VersionView) bool) (resolver.Tag, bool) {
	major, minor, err := ParseLine(line)
	if err != nil {
		return resolver.Tag{}, false
	}
	for k := len(vs) - 1; k >= 0; k-- {
		v := &vs[k]
		switch {
		case resolver.Compare(v.Version, top) > 0:
			continue
		case v.Version.Major < major || v.Version.Major == major && v.Version.Minor < minor:
			return resolver.Tag{}, false
		case v.Version.Major == major && v.Version.Minor == minor && ok(v):
			return v.Tag, true
		}
	}
	return resolver.Tag{}, false
}
