package graph

import (
	"net/url"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// EndOfLife is the name of the risk an edge to a version of an expired
// line carries (in section 13's shape, beside declared risks).
const EndOfLife = "EndOfLife"

// endOfLife adds to risks one EndOfLife risk per expired line among
// nodes, and to from and to what Of's edge loop reads: every node may be
// an edge's start; only the line's nodes its end.
func endOfLife(snap *snapshot.Snapshot, source string, nodes []resolver.VersionView, risks []*catalog.Risk, from [][]int, to [][]bool) ([]*catalog.Risk, [][]bool) {
	byLine := map[string]int{} // line -> index in risks
	for k := range nodes {
		l := snap.Lines().LineOf(source, nodes[k].Version)
		if l == nil || l.Class != lifecycle.Expired {
			continue
		}
		ri, ok := byLine[l.Line]
		if !ok {
			ri = len(risks)
			byLine[l.Line] = ri
			msg := "Line " + l.Line + " reached its end of life on " + l.End.UTC().Format(time.DateOnly)
			if l.Successor != "" {
				msg += "; move to " + l.Successor
			}
			risks = append(risks, &catalog.Risk{Source: source, Name: EndOfLife, Message: msg + ".",
				URL: "/api/v1/sources/" + url.PathEscape(source) + "/lifecycle"})
			to = append(to, make([]bool, len(nodes)))
			for j := range from {
				from[j] = append(from[j], ri)
			}
		}
		to[ri][k] = true
	}
	return risks, to
}
