package snapshot

import (
	"slices"
	"strings"

	"github.com/tidemark-dev/tidemark/resolver"
)

// SortNewestFirst orders counts by version, newest first, under the scheme
// of channel's source; what does not parse goes last, by name.
func (s *Snapshot) SortNewestFirst(channel string, counts []resolver.VersionCount) {
	type keyed struct {
		v  resolver.Version
		ok bool
	}
	keys := make(map[string]keyed, len(counts))
	for _, c := range counts {
		v, ok := s.Reported(channel, c.Version)
		keys[c.Version] = keyed{v, ok}
	}
	slices.SortFunc(counts, func(a, b resolver.VersionCount) int {
		ka, kb := keys[a.Version], keys[b.Version]
		switch {
		case ka.ok && kb.ok:
			if c := resolver.Compare(kb.v, ka.v); c != 0 {
				return c
			}
		case ka.ok != kb.ok:
			if ka.ok {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Version, b.Version)
	})
}
