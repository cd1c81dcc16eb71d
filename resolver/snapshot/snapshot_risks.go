package snapshot

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Risks lists source's risks, by name; ErrNotFound for an unknown source.
func (s *Snapshot) Risks(source string) ([]catalog.Risk, error) {
	idx, err := s.source(source)
	if err != nil {
		return nil, err
	}
	return idx.risks, nil
}

// RisksOn lists the risks of source that cover the edge from -> to for
// cluster (see Risk.For), in name order.
func (s *Snapshot) RisksOn(source string, from, to resolver.Version, cluster string) []*catalog.Risk {
	idx := s.bySource[source]
	if idx == nil {
		return nil
	}
	return idx.risksOn(from, to, cluster)
}

func (idx *sourceIndex) risksOn(from, to resolver.Version, cluster string) []*catalog.Risk {
	var out []*catalog.Risk
	for i := range idx.risks {
		if r := &idx.risks[i]; r.Covers(from, to) && r.For(cluster) {
			out = append(out, r)
		}
	}
	return out
}

// risky reports whether any risk of idx covers from -> to for cluster.
func (idx *sourceIndex) risky(from, to resolver.Version, cluster string) bool {
	for i := range idx.risks {
		if r := &idx.risks[i]; r.Covers(from, to) && r.For(cluster) {
			return true
		}
	}
	return false
}
