package console

import (
	"strconv"
	"strings"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// The channel page draws its update graph (CONTRACT section 13) as
// server-rendered SVG: one column per minor, newest minors right, each
// column's versions stacked newest on top; a line from each version to
// the next of its minor and to the newest of the next minor (the hops an
// answer takes), dashed red where a known risk covers the edge; the
// fleet's count of clusters reporting a version on its node. Big channels
// show their newest minors and versions only; the full graph is the API's.

const (
	graphMinors    = 6 // columns drawn
	graphPerMinor  = 8 // versions drawn per column
	graphColW      = 170
	graphRowH      = 34
	graphNodeW     = 130
	graphNodeH     = 24
	graphMarginTop = 28
)

type uiGraph struct {
	Width, Height int
	Columns       []uiGraphColumn
	Nodes         []uiGraphNode
	Edges         []uiGraphEdge
	Risky         []uiGraphRisk // every risky edge drawn, for the text list
	Hidden        int           // versions not drawn
}

type uiGraphColumn struct {
	X     int
	Label string
}

type uiGraphNode struct {
	X, Y     int
	Version  string
	Clusters int
	Served   bool // the channel's version
}

type uiGraphEdge struct {
	X1, Y1, X2, Y2 int
	From, To       string
	Risky          bool
	Title          string
}

type uiGraphRisk struct {
	From, To string
	Names    []string
}

// graphOf lays out channel's graph (from the view's cache); counts are
// clusters reporting each version (nil: no fleet).
func graphOf(v *core.View, channel, served string, counts map[string]int) *uiGraph {
	g, err := v.Graphs.Graph(v.Snap, channel)
	if err != nil || len(g.Nodes) == 0 {
		return nil
	}
	risky := map[[2]int][]string{}
	for _, ce := range g.Conditional {
		var names []string
		for _, r := range ce.Risks {
			names = append(names, r.Name)
		}
		for _, e := range ce.Edges {
			risky[e] = names
		}
	}
	// Columns: the newest graphMinors minors, oldest first.
	type col struct{ start, end int }
	var cols []col
	for i := range g.Nodes {
		if i == 0 || !sameMinorV(g.Nodes[i-1].Version, g.Nodes[i].Version) {
			cols = append(cols, col{i, i + 1})
		} else {
			cols[len(cols)-1].end = i + 1
		}
	}
	out := &uiGraph{}
	if len(cols) > graphMinors {
		for _, c := range cols[:len(cols)-graphMinors] {
			out.Hidden += c.end - c.start
		}
		cols = cols[len(cols)-graphMinors:]
	}
	pos := map[int][2]int{}
	rows := 0
	for ci, c := range cols {
		x := 10 + ci*graphColW
		v := g.Nodes[c.start].Version
		out.Columns = append(out.Columns, uiGraphColumn{X: x, Label: minorLabel(v)})
		start := max(c.start, c.end-graphPerMinor)
		out.Hidden += start - c.start
		for k := c.end - 1; k >= start; k-- {
			row := c.end - 1 - k
			rows = max(rows, row+1)
			y := graphMarginTop + row*graphRowH
			pos[k] = [2]int{x, y}
			ver := g.Nodes[k].Version.String()
			out.Nodes = append(out.Nodes, uiGraphNode{X: x, Y: y, Version: ver, Clusters: counts[ver], Served: ver == served})
		}
	}
	edge := func(i, j int) {
		a, okA := pos[i]
		b, okB := pos[j]
		if !okA || !okB {
			return
		}
		e := uiGraphEdge{From: g.Nodes[i].Version.String(), To: g.Nodes[j].Version.String()}
		if names, ok := risky[[2]int{i, j}]; ok {
			e.Risky = true
			e.Title = "risky: " + strings.Join(names, ", ")
			out.Risky = append(out.Risky, uiGraphRisk{From: e.From, To: e.To, Names: names})
		}
		if a[0] == b[0] { // same column: from below to above
			e.X1, e.Y1, e.X2, e.Y2 = a[0]+graphNodeW/2, a[1], b[0]+graphNodeW/2, b[1]+graphNodeH
		} else {
			e.X1, e.Y1, e.X2, e.Y2 = a[0]+graphNodeW, a[1]+graphNodeH/2, b[0], b[1]+graphNodeH/2
		}
		out.Edges = append(out.Edges, e)
	}
	minorEnd := make([]int, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if i+1 < len(g.Nodes) && sameMinorV(g.Nodes[i+1].Version, g.Nodes[i].Version) {
			minorEnd[i] = minorEnd[i+1]
		} else {
			minorEnd[i] = i + 1
		}
	}
	for i := range g.Nodes {
		if _, ok := pos[i]; !ok {
			continue
		}
		// The next version of its minor, and the newest of the next minor.
		if i+1 < len(g.Nodes) && sameMinorV(g.Nodes[i+1].Version, g.Nodes[i].Version) {
			edge(i, i+1)
		}
		// Edges from i reach through the next minor: its newest is the
		// last node of the column after i's.
		newest := -1
		if end := minorEnd[i]; end < len(g.Nodes) && g.Nodes[end].Version.Major == g.Nodes[i].Version.Major {
			newest = minorEnd[end] - 1
		}
		if newest >= 0 {
			edge(i, newest)
		}
	}
	out.Width = 10 + len(cols)*graphColW
	out.Height = graphMarginTop + rows*graphRowH + 4
	return out
}

func sameMinorV(a, b resolver.Version) bool { return a.Major == b.Major && a.Minor == b.Minor }

func minorLabel(v resolver.Version) string {
	return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor)
}

// uiRisks are a source's risks as the console lists them.
func uiRisks(snap *snapshot.Snapshot, source, base string) []openapi.Risk {
	risks, err := snap.Risks(source)
	if err != nil {
		return nil
	}
	out := make([]openapi.Risk, len(risks))
	for i := range risks {
		out[i] = core.RiskJSON(&risks[i], base)
	}
	return out
}
