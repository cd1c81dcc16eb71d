// Package graph builds a channel's update graph (Cincinnati's shape) from
// a snapshot: the versions the channel may serve, and the edges between
// them, risky ones apart.
package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Graph is a channel's update graph (CONTRACT section 13), in the shape of
// the OpenShift Update Service's (Cincinnati): its nodes are the versions
// the channel may serve, ascending; an edge joins each node to every newer
// node of its minor and of the next minor that has one (never a skip, a
// downgrade or another major). An edge a known risk covers for the asker
// is not in Edges but in Conditional, grouped by the set of risks that
// cover it, so that every edge is listed exactly once.
type Graph struct {
	Channel     string
	Image       string // the source's image, for payloads
	Nodes       []resolver.VersionView
	Edges       [][2]int
	Conditional []ConditionalEdges
}

// ConditionalEdges are edges that the same risks cover.
type ConditionalEdges struct {
	Edges [][2]int
	Risks []*catalog.Risk
}

// Of is channel's update graph in snap as cluster sees it (cluster ""
// sees the risks declared for every cluster only), at now, with active
// the versions the fleet says the channel last answered its active
// clusters: its nodes are the versions the registry view lists
// (snapshot.ServableWithin). ErrNotFound for an unknown channel.
func Of(snap *snapshot.Snapshot, channel, cluster string, active []string, now time.Time) (Graph, error) {
	nodes, err := snap.ServableWithin(channel, active, now)
	if err != nil {
		return Graph{}, err
	}
	a, err := snap.Channel(channel)
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Channel: channel, Image: a.Channel.Source, Nodes: nodes}
	if img, err := snap.SourceImage(a.Channel.Source); err == nil {
		g.Image = img
	}
	all, _ := snap.Risks(a.Channel.Source)
	var risks []*catalog.Risk
	for i := range all {
		if r := &all[i]; r.For(cluster) {
			risks = append(risks, r)
		}
	}
	// from[k] lists the risks whose From matches node k; to[r][k] whether
	// risk r's To matches node k: an edge's risks are then lookups.
	from := make([][]int, len(nodes))
	to := make([][]bool, len(risks))
	for ri, r := range risks {
		to[ri] = make([]bool, len(nodes))
		for k := range nodes {
			v := &nodes[k].Version
			if r.CoversFrom(v) {
				from[k] = append(from[k], ri)
			}
			to[ri][k] = r.CoversTo(v)
		}
	}
	risks, to = endOfLife(snap, a.Channel.Source, nodes, risks, from, to)
	groups := map[string]int{}
	var cover []int
	ends := minorEnds(nodes)
	for i := range nodes {
		// Through i's minor, then through the next minor of its major.
		end := ends[i]
		if end < len(nodes) && nodes[end].Version.Major == nodes[i].Version.Major {
			end = ends[end]
		}
		for j := i + 1; j < end; j++ {
			cover = cover[:0]
			for _, ri := range from[i] {
				if to[ri][j] {
					cover = append(cover, ri)
				}
			}
			if len(cover) == 0 {
				g.Edges = append(g.Edges, [2]int{i, j})
				continue
			}
			key := fmt.Sprint(cover)
			gi, ok := groups[key]
			if !ok {
				gi = len(g.Conditional)
				groups[key] = gi
				ce := ConditionalEdges{}
				for _, ri := range cover {
					ce.Risks = append(ce.Risks, risks[ri])
				}
				g.Conditional = append(g.Conditional, ce)
			}
			g.Conditional[gi].Edges = append(g.Conditional[gi].Edges, [2]int{i, j})
		}
	}
	return g, nil
}

// minorEnds maps each node to one past the last node of its minor.
func minorEnds(nodes []resolver.VersionView) []int {
	ends := make([]int, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		if i+1 < len(nodes) && sameMinor(nodes[i+1].Version, nodes[i].Version) {
			ends[i] = ends[i+1]
		} else {
			ends[i] = i + 1
		}
	}
	return ends
}

func sameMinor(a, b resolver.Version) bool { return a.Major == b.Major && a.Minor == b.Minor }

// SemverString is v as a semver 2.0 string without a leading "v", as
// Cincinnati clients parse node versions: semver versions as spelled,
// juju's as M.m.p[-pre][+build].
func SemverString(v resolver.Version) string {
	if v.Scheme() != resolver.SchemeJuju {
		return strings.TrimPrefix(v.String(), "v")
	}
	s := strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) + "." + strconv.Itoa(v.Patch)
	if v.Prerelease() != "" {
		s += "-" + v.Prerelease()
	}
	if v.Build > 0 {
		s += "+" + strconv.Itoa(v.Build)
	}
	return s
}

// NodeIndex is the index of the node spelled version (SemverString or
// canonical), or -1.
func (g *Graph) NodeIndex(version string) int {
	return slices.IndexFunc(g.Nodes, func(n resolver.VersionView) bool {
		return SemverString(n.Version) == version || n.Version.String() == version
	})
}
